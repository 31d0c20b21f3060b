"""Runs one side question: context, summaries, one streamed answer, one smaller retry.

The task belongs to the service, not to any client connection. The cumulative answer is
written at most every 250 ms and once at the end; every write is guarded by generation and
`running` status, so a request that was cleared or cancelled elsewhere writes nothing more
(and notices, and stops). Every write also refreshes the row's heartbeat; while no tokens
arrive (summaries, a slow first token) a touch every `heartbeat_s` keeps other replicas from
taking the request for a dead one.

Database outages: the answer streams from memory, so followers see it through an outage;
progress writes and heartbeats that fail are tried again later. Normally the final write
lands before followers see the end. While the database is away they see it after the
request-path retry budget, and the final write keeps trying for `side_final_write_s` (in
this task, with asyncio sleeps), so the record ends as what the client saw. If the outage
outlasted the stale window and a sweep ended the row as interrupted meanwhile, the answer
goes on and its final write takes the row back: a completed answer is never recorded as
interrupted.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from sqlmodel import Session

from agent.coalesce import INTERVAL_S as TEXT_INTERVAL_S
from agent.errors import ContextOverflowError, ModelError
from agent.model_gateway import ModelGateway, ModelReply, ModelRequest, TextDelta
from agent.settings import Settings
from agent.summarise import SIDE_SUMMARY_MARKER, Summariser
from side_questions.budget import Exchange, SideBudget, UsageMeter
from side_questions.context import ContextPlan, SideHistory, build_context
from side_questions.snapshot_store import StoredSnapshot
from side_questions.throttle import ThrottledWriter
from side_questions.views import LiveRequest
from storage import Database
from storage import side_repository as repo
from storage.models import utcnow
from storage.retry import DatabaseUnavailable
from storage.side_models import RUNNING

__all__ = ["RequestRunner"]

_log = logging.getLogger(__name__)
_TOOL_NOTE = "(The model tried to use a tool; side questions never run tools.)"


class _Gone(Exception):
    """The request's row was cleared or ended elsewhere: stop without writing."""


class RequestRunner:
    """Executes side questions; one instance per service."""

    def __init__(self, *, settings: Settings, db: Database, gateway: ModelGateway,
                 budget: Callable[[], Awaitable[SideBudget]], timeout_s: float, interval_s: float,
                 heartbeat_s: float = 5.0) -> None:
        self.settings = settings
        self.db = db
        self.gateway = gateway
        self.budget = budget
        self.timeout_s = timeout_s
        self.interval_s = interval_s
        self.heartbeat_s = heartbeat_s

    # database (reads and guarded updates: safe to repeat, so `db.run` retries them whole)

    def _load_history(self, live: LiveRequest) -> SideHistory:
        def load(session: Session) -> SideHistory:
            summary = repo.get_summary(session=session, parent_id=live.parent_id) or {}
            through = int(summary.get("through_ordinal") or 0)
            rows = repo.successful_exchanges(
                session=session, parent_id=live.parent_id, generation=live.generation,
                after_ordinal=through, before_ordinal=live.state.ordinal)
            return SideHistory([Exchange(r.ordinal, r.question, r.answer) for r in rows],
                               str(summary.get("text") or ""), through)

        return self.db.run(load)

    def _save_summary(self, live: LiveRequest, summary: dict[str, Any]) -> None:
        self.db.run(lambda session: repo.save_summary(
            session=session, parent_id=live.parent_id, generation=live.generation,
            summary=summary))

    def _write(self, live: LiveRequest, values: dict[str, Any]) -> None:
        """Owner's write: guarded by generation and status, and a heartbeat at once. A row
        a stale sweep ended is not gone: this process still streams it (its heartbeats were
        lost to an outage), and the final write takes it back."""
        def write(session: Session) -> bool:
            if repo.update_request(session=session, request_id=live.state.id,
                                   generation=live.generation, heartbeat=True, **values):
                return True
            return repo.swept_as_stale(session=session, request_id=live.state.id)

        if not self.db.run(write):
            live.gone = True

    def _stored_end(self, live: LiveRequest) -> tuple[str, str | None] | None:
        """How the row ended elsewhere: stopped via another replica or swept as stale."""
        row = self.db.run(lambda session: repo.get_request(session=session,
                                                           request_id=live.state.id))
        if row is None or row.status == RUNNING:
            return None
        return row.status, row.error

    async def _heartbeat(self, live: LiveRequest,
                         writer: ThrottledWriter[dict[str, Any]]) -> None:
        """Touch the row when no progress write has for `heartbeat_s` (the progress writes
        are the heartbeat while tokens flow, so this adds no write then). If the row
        ended elsewhere, stop the answer instead of waiting for the next token."""
        touched = writer.last_write_at
        while not live.gone:
            last = max(touched, writer.last_write_at)
            due = last + self.heartbeat_s - time.monotonic()
            if due > 0:
                await asyncio.sleep(due)
                continue
            touched = time.monotonic()
            try:
                await asyncio.to_thread(self._write, live, {})
            except Exception:  # the database is briefly away: beat again next interval
                continue
        if live.task is not None and live.cancel_reason is None and not live.cleared:
            live.cancel_reason = "gone"
            live.task.cancel()

    def _progress(self, live: LiveRequest) -> dict[str, Any]:
        state = live.state
        return {"answer": state.answer, "usage": state.usage, "sequence": state.sequence,
                "context_info": state.context_info}

    async def _record_end(self, live: LiveRequest, values: dict[str, Any],
                          budget_s: float) -> bool:
        """The final write, retrying transient errors for `budget_s`; False when the
        database stayed away. Safe to repeat: one guarded UPDATE."""

        def finish(session: Session) -> bool:
            return repo.finish_request(session=session, request_id=live.state.id,
                                       generation=live.generation, **values)

        try:
            await self.db.arun(finish, budget_s=budget_s)
        except DatabaseUnavailable:
            return False
        except Exception:  # a bug must not escape the task; the sweeper ends the row later
            _log.exception("side question %s: recording its end failed", live.state.id)
        return True

    # the run -------------------------------------------------------------------------

    async def run(self, live: LiveRequest, snapshot: StoredSnapshot, question: str) -> None:
        meter = UsageMeter()
        writer: ThrottledWriter[dict[str, Any]] = ThrottledWriter(
            lambda values: self._write(live, values), interval_s=self.interval_s,
            last_write=time.monotonic())
        status, error = "completed", None
        heartbeat = asyncio.get_running_loop().create_task(self._heartbeat(live, writer))
        try:
            async with asyncio.timeout(self.timeout_s):
                await self._answer(live, snapshot, question, meter, writer)
        except asyncio.CancelledError:
            status = ("cancelled" if live.cancel_reason in ("stop", "clear", "gone")
                      else "interrupted")
            error = ("Stopped." if status == "cancelled"
                     else "Interrupted: the server is shutting down.")
        except _Gone:
            status, error = "cancelled", "Stopped."
        except TimeoutError:
            status, error = "failed", f"The side question timed out after {self.timeout_s:g} s."
        except (ModelError, DatabaseUnavailable) as exc:  # both messages are safe to show
            status, error = "failed", str(exc)
        except Exception as exc:  # last line of defence: the request ends, the service stays up
            status, error = "failed", f"Internal error: {type(exc).__name__}"
        heartbeat.cancel()
        await writer.close()
        if live.gone and not live.cleared:  # ended elsewhere: show what the database says
            try:
                ended = await asyncio.to_thread(self._stored_end, live)
            except Exception:
                ended = None
            if ended is not None:
                status, error = ended
        info = {**live.state.context_info, "stage": "done"}
        final = {"status": status, "error": error, "usage": meter.as_dict(),
                 "context_info": info, "answer": live.state.answer}
        values = {**final, "sequence": live.state.sequence + 1, "finished_at": utcnow()}
        # Normally the row has the end before followers see it. While the database is away
        # they see it after the request-path budget, and the row follows when it is back.
        recorded = (live.cleared or live.gone
                    or await self._record_end(live, values, self.db.retry.budget_s))
        live.finish(**final)
        if not recorded and not await self._record_end(live, values,
                                                        self.settings.side_final_write_s):
            _log.warning("side question %s: its end could not be recorded within %g s; a "
                         "sweep ends it as interrupted", live.state.id,
                         self.settings.side_final_write_s)

    def _request_factory(self, snapshot: StoredSnapshot
                         ) -> Callable[[list[dict[str, Any]], list[dict[str, Any]], int],
                                       ModelRequest]:
        settings = self.settings
        temperature = snapshot.params.get("temperature", settings.agent_temperature)

        def make(messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                 max_tokens: int) -> ModelRequest:
            # Credentials come from the current configuration, never from the snapshot.
            return ModelRequest(model=snapshot.model, messages=messages, tools=tools,
                                temperature=float(temperature), max_tokens=max_tokens,
                                api_base=settings.agent_api_base,
                                api_key=settings.agent_api_key, timeout_s=self.timeout_s)
        return make

    async def _answer(self, live: LiveRequest, snapshot: StoredSnapshot, question: str,
                      meter: UsageMeter, writer: ThrottledWriter[dict[str, Any]]) -> None:
        make_request = self._request_factory(snapshot)
        summariser = Summariser(self.gateway, make_request, meter.add_summary,
                                SIDE_SUMMARY_MARKER)
        budget = await self.budget()
        history = await asyncio.to_thread(self._load_history, live)
        live.update(context_info={"stage": "preparing"})
        plan = await self._plan(live, snapshot, question, history, budget, summariser, meter)
        try:
            await self._stream(live, plan, budget, make_request, meter, writer)
        except ContextOverflowError:
            if live.state.answer:
                raise  # partial output: never retried
            if plan.new_summary:
                history = history.after_summary(plan.new_summary["text"],
                                                plan.new_summary["through_ordinal"])
            smaller = await self._plan(live, snapshot, question, history, budget.shrunk(),
                                       summariser, meter)
            if smaller.estimate >= plan.estimate:
                raise
            smaller.info["retried_after_overflow"] = True
            smaller.info["first_estimate_tokens"] = plan.estimate
            live.update(context_info={**smaller.info, "stage": "retrying"})
            await self._stream(live, smaller, budget, make_request, meter, writer)

    async def _plan(self, live: LiveRequest, snapshot: StoredSnapshot, question: str,
                    history: SideHistory, budget: SideBudget, summariser: Summariser,
                    meter: UsageMeter) -> ContextPlan:
        plan = await build_context(snapshot=snapshot, question=question, history=history,
                                   budget=budget, summariser=summariser)
        if plan.new_summary and not live.cleared:
            await asyncio.to_thread(self._save_summary, live, plan.new_summary)
        plan.info["summary_calls"] = meter.summary_calls
        live.update(context_info={**plan.info, "stage": "answering"}, usage=meter.as_dict())
        return plan

    async def _stream(self, live: LiveRequest, plan: ContextPlan, budget: SideBudget,
                      make_request: Callable[..., ModelRequest], meter: UsageMeter,
                      writer: ThrottledWriter[dict[str, Any]]) -> None:
        request = make_request(plan.messages, plan.tools, budget.output_cap)
        reply: ModelReply | None = None
        try:
            async for item in self.gateway.stream(request):
                if live.gone:
                    raise _Gone
                if isinstance(item, TextDelta):
                    live.stage(answer=live.state.answer + item.text)
                    writer.offer(self._progress(live))
                else:
                    reply = item
        finally:
            meter.add(reply)
            live.stage(usage=meter.as_dict())
            if reply is not None:  # its last words and usage go out with the end, once it
                live.hold(TEXT_INTERVAL_S)  # is stored, or alone after a cadence at most
        if reply is not None and reply.tool_calls and not live.state.answer.strip():
            live.update(answer=_TOOL_NOTE)  # tool calls are ignored, never run

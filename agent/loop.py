"""The agent loop: one async generator that yields typed events for one run.

It builds every step's prompt from the store (the single source of truth: the stored
messages, and those the run stored since as the rows a read would give back), within the
model's context budget (agent/prompt_window.py: older turns folded into a stored rolling
summary; one smaller retry after an overflow before any output), streams the model through
the gateway, runs offered tools, persists each complete message (written behind the next
model call), and publishes
context snapshots at request start, complete replies and run end. On cancellation it keeps
what completed, answers any unanswered tool call with a "cancelled" result so the transcript
stays valid, and records the run as cancelled. A write call (or a person's undo) pauses the
run (`done(awaiting_confirmation)`); its continuation starts from the decision (`resume`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from pydantic import SecretStr

from agent import events as ev
from agent.audit import AuditLog
from agent.coalesce import TokenCoalescer
from agent.confirmations import ConfirmationService, Resume
from agent.errors import ContextOverflowError, ModelError
from agent.identity import Identity
from agent.inputs import refusal
from agent.logs import internal_error_message
from agent.model_gateway import ModelGateway, ModelReply, ModelRequest, TextDelta
from agent.object_links import link_objects
from agent.prompt_window import Prompt, PromptWindow, StoredContext
from agent.prompts import build_system_prompt
from agent.run_store import RunStore
from agent.secrets import Scrubber
from agent.settings import Settings
from agent.snapshots import RunSnapshots, SnapshotListener
from agent.tool_steps import ToolSteps
from agent.tools.registry import ToolRegistry, ToolServices, ToolSpec
from agent.uicontext import UIContext
from storage import Database, off_loop
from storage import conversations as repo
from storage.retry import DatabaseUnavailable

_log = logging.getLogger(__name__)

__all__ = ["AgentDeps", "RunRequest", "run_agent"]


@dataclass
class AgentDeps:
    """Everything a run needs, passed in (no module-level state)."""

    settings: Settings
    db: Database
    gateway: ModelGateway
    registry: ToolRegistry
    snapshot_listener: SnapshotListener | None = None
    services: ToolServices = field(default_factory=ToolServices)
    audit: AuditLog = None  # type: ignore[assignment]  # built from db when not given
    confirmations: ConfirmationService = None  # type: ignore[assignment]
    scrubber: Scrubber = None  # type: ignore[assignment]  # built from settings when not given

    def __post_init__(self) -> None:
        self.scrubber = self.scrubber or Scrubber.from_settings(self.settings)
        self.audit = self.audit or AuditLog(self.db)
        self.confirmations = self.confirmations or ConfirmationService(
            self.db, self.settings, self.audit)


@dataclass
class RunRequest:
    run_id: str
    conversation_id: str
    identity: Identity
    user_message: str | None
    env_id: str | None
    env_tier: str | None
    context: UIContext | None
    tools: list[ToolSpec]
    warnings: list[str] = field(default_factory=list)
    cancel_requested: asyncio.Event = field(default_factory=asyncio.Event)
    resume: Resume | None = None  # a continuation starts from a decision or a retry
    # The caller's own Superset token for passthrough environments: this request's, in
    # memory for this run only; never stored, published or shown (SecretStr hides it).
    superset_token: SecretStr | None = field(default=None, repr=False)
    # Set by the turn's admission when it stored the run's row (its start as stored) and
    # the person's message with the lease, in one transaction.
    started_at: float | None = None
    user_stored: bool = False
    first_read: StoredContext | None = None  # the first prompt's context, read at admission
    finishing: bool = False  # the run is writing its end (and releasing its lease)
    lease_released: bool = False  # ... and that transaction committed
    writing_behind: bool = False  # a step's messages are written behind the model call


def _context_block(request: RunRequest) -> dict[str, Any]:
    context = request.context.model_dump() if request.context else {}
    return {**context, "envId": request.env_id, "envTier": request.env_tier,
            "role": request.identity.role, "mode": "main"}


class _Run:
    """State of one run while the generator is alive."""

    def __init__(self, deps: AgentDeps, request: RunRequest) -> None:
        self.deps = deps
        self.request = request
        self.stamp = ev.EventStamper(request.run_id)
        self.usage = ev.Usage()
        self.system_prompt = build_system_prompt(_context_block(request))
        self.offered = {spec.name: spec for spec in request.tools}
        self.tool_schemas = [spec.openai_schema for spec in request.tools]
        self.snapshot_version = 0
        self.answer_s: float | None = None  # the run's time its stored answer keeps
        self._snapshots: RunSnapshots | None = None
        self.started_at = time.time()  # replaced by the stored start (`run_agent`)
        self.partial: list[str] = []  # answer text streamed but not stored yet
        self.output = False  # the current model request has produced text
        self.sent: list[dict[str, Any]] = []  # the messages of the current model request
        self.pending_calls: list[dict[str, Any]] = []  # stored calls still without a result
        self.writes = RunStore(deps.db, request)
        self.answered = self.writes.answered  # call ids whose result is stored
        self.steps = ToolSteps(deps, request, self.stamp, self.store, self.writes.flush)
        self.window = PromptWindow(
            db=deps.db, settings=deps.settings, gateway=deps.gateway,
            conversation_id=request.conversation_id, run_id=request.run_id,
            system_prompt=self.system_prompt, tools=self.tool_schemas, record=self.count,
            first_read=request.first_read, run_messages=self.writes)

    # persistence: a worker thread's job (storage.off_loop); messages are written in
    # batches (agent/run_store.py), behind the model call that follows them ---------------

    async def load_messages(self) -> list[dict[str, Any]]:
        """The context as the model sees it (after the summary, the newest turns), without
        folding anything: for snapshots."""
        return (await self.build_prompt(fold=False)).messages

    async def build_prompt(self, **options: Any) -> Prompt:
        """The next prompt, from the stored messages and those the run stored since (written
        behind it); the system prompt snapshots and requests carry is its own (the summary
        of older turns is part of it)."""
        prompt = await self.window.build(**options)
        self.system_prompt = prompt.system
        return prompt

    async def store(self, **fields: Any) -> None:
        self.writes.store(**fields)

    async def finish(self, status: str, error: str | None) -> None:
        await self.writes.finish(status, error, self.usage.model_dump())

    def publish(self, boundary: str, messages: list[dict[str, Any]]) -> None:
        listener = self.deps.snapshot_listener
        if listener is None:
            return
        self.snapshot_version += 1
        with contextlib.suppress(Exception):  # a snapshot must never break the main run
            listener(self.snapshots().take(
                version=self.snapshot_version, boundary=boundary,  # type: ignore[arg-type]
                messages=messages, run_started_at=self.started_at))

    def snapshots(self) -> RunSnapshots:
        """What the run's snapshots share, made at the first one."""
        if self._snapshots is None:
            settings = self.deps.settings
            self._snapshots = RunSnapshots(
                conversation_id=self.request.conversation_id, run_id=self.request.run_id,
                system_prompt=self.system_prompt, tools=self.tool_schemas,
                params={"temperature": settings.agent_temperature,
                        "max_tokens": settings.agent_max_output_tokens},
                model=settings.agent_model, api_base=settings.agent_api_base)
        return self._snapshots

    async def publish_end(self) -> None:
        """Publish the run-end boundary of a failed run; the last valid one stays otherwise."""
        try:
            messages = await self.load_messages()
        except Exception:  # the database failed too; keep the last published boundary
            return
        self.publish("run_end", messages)

    def model_request(self, messages: list[dict[str, Any]], max_tokens: int) -> ModelRequest:
        return self.window.request([{"role": "system", "content": self.system_prompt},
                                    *messages], self.tool_schemas, max_tokens)

    def count(self, reply: ModelReply | None) -> None:
        """A summary call's usage is the run's usage too."""
        if reply is not None:
            self.usage = self.usage.add(reply.usage)

    # tools -----------------------------------------------------------------------------

    async def run_tool(self, call: Any) -> AsyncIterator[ev._Event]:
        async for event in self.steps.run(call):
            yield event

    # the loop --------------------------------------------------------------------------

    async def stream_reply(self, prompt: Prompt) -> AsyncIterator[ev._Event | ModelReply]:
        """The model's reply to `prompt`. A context-overflow error before any output gets
        one retry with the smaller budget's prompt (more folded), if that is smaller."""
        budget = await self.window.budget()
        try:
            async for item in self._stream(prompt.messages, budget.output_cap):
                yield item
            return
        except ContextOverflowError:
            if self.output:
                raise  # partial output: never retried
            smaller = await self.build_prompt(budget=budget.shrunk())
            if smaller.estimate >= prompt.estimate:
                raise
        self.window.shrink()
        self.publish("request_start", smaller.messages)
        async for item in self._stream(smaller.messages, budget.output_cap):
            yield item

    async def _stream(self, messages: list[dict[str, Any]], max_tokens: int
                      ) -> AsyncIterator[ev._Event | ModelReply]:
        coalescer = TokenCoalescer.for_gateway(self.deps.gateway)
        self.partial, self.output, self.sent = [], False, messages
        async for item in self.deps.gateway.stream(self.model_request(messages, max_tokens)):
            if isinstance(item, TextDelta):
                self.output = True  # even while the coalescer still holds it
                text = coalescer.add(item.text)
                if text:
                    self.partial.append(text)
                    yield self.stamp(ev.Token, text=text)
            else:
                rest = coalescer.flush()
                if rest:
                    self.partial.append(rest)
                    yield self.stamp(ev.Token, text=rest)
                yield item

    async def events(self) -> AsyncIterator[ev._Event]:
        request, settings = self.request, self.deps.settings
        yield self.stamp(
            ev.RunStarted, conv_id=request.conversation_id,
            context=request.context.model_dump() if request.context else None,
            env_id=request.env_id, env_tier=request.env_tier,
            tools=list(self.offered), model=settings.agent_model)
        for warning in request.warnings:
            yield self.stamp(ev.Warning, message=warning)
        if request.resume is not None:
            resumed = request.resume
            if resumed.kind not in ("retry", "undo"):  # those answer a new call of their own
                self.pending_calls = [{"id": resumed.call_id, "function": {"name": resumed.tool}}]
            if request.cancel_requested.is_set():  # stopped before it began: run nothing
                raise asyncio.CancelledError
            async for event in self.steps.resume(resumed):
                yield event
            self.pending_calls = []
            if self.steps.paused is not None:  # an undo asked for: its approval card
                async for event in self.pause():
                    yield event
                return
        elif request.user_message is not None:
            refused = refusal(request.user_message, settings.max_message_chars)
            if refused is not None:
                yield self.stamp(ev.MessageEvent, content=refused)
                await self.finish("completed", None)
                yield self.stamp(ev.Done, status="completed", usage=self.usage)
                return
            if not request.user_stored:
                await self.store(role="user", content=request.user_message)
        final_text, links, ended = "", [], None
        for _step in range(settings.agent_max_steps):
            if request.cancel_requested.is_set():
                raise asyncio.CancelledError
            prompt = await self.build_prompt()
            self.publish("request_start", prompt.messages)
            reply: ModelReply | None = None
            async for item in self.stream_reply(prompt):
                if request.cancel_requested.is_set():
                    raise asyncio.CancelledError
                if isinstance(item, ModelReply):
                    reply = item
                else:
                    yield item
            assert reply is not None
            self.usage = self.usage.add(reply.usage)
            calls = [call.as_message_part() for call in reply.tool_calls]
            links = [] if calls else self.links_for(reply.content)
            await self.store(role="assistant", content=reply.content, tool_calls=calls or None,
                             **({} if calls else {"meta": self.answer_meta(links)}))
            self.partial = []  # stored with the reply
            final_text = reply.content
            if not reply.tool_calls:
                ended = [*self.sent, {"role": "assistant", "content": reply.content}]
                self.publish("reply", ended)
                break
            self.pending_calls = calls
            cap = settings.agent_max_tool_calls_per_step
            for call in reply.tool_calls[:cap]:
                async for event in self.run_tool(call):
                    yield event
                self.pending_calls = [c for c in self.pending_calls if c["id"] != call.id]
                if self.steps.paused is not None:
                    async for event in self.pause():
                        yield event
                    return
            for call in reply.tool_calls[cap:]:  # one reply may not fan out without bound
                yield await self.steps.not_run(call, f"Not run: too many calls in one step (at "
                                         f"most {cap}); call it again later if still needed.")
                self.pending_calls = [c for c in self.pending_calls if c["id"] != call.id]
        else:
            final_text = (f"I stopped after {settings.agent_max_steps} steps without finishing. "
                          "Ask me to continue, or narrow the request.")
            yield self.stamp(ev.Warning, message="Step limit reached.")
            await self.store(role="assistant", content=final_text)
        yield self.stamp(ev.MessageEvent, content=final_text, links=links)
        # The reply's context is the run's end: no read back (the answer is written below,
        # with the run's end, in one transaction); the two snapshots coalesce into one save.
        self.publish("run_end", ended if ended is not None else await self.load_messages())
        await self.finish("completed", None)
        yield self.stamp(ev.Done, status="completed", usage=self.usage, duration_s=self.answer_s)

    def answer_meta(self, links: list[dict[str, Any]]) -> dict[str, Any]:
        """Kept with the final answer so a reload shows what the live page showed: its
        links and the run's footnote (duration so far and the usage of every step)."""
        self.answer_s = round(max(0.0, time.time() - self.started_at), 2)  # `done` carries it
        return {"run": {"duration_s": self.answer_s, "usage": self.usage.model_dump()},
                **({"links": links} if links else {})}

    def links_for(self, answer: str) -> list[dict[str, Any]]:
        """Links to the Superset objects this run's results returned and the answer names
        (agent/object_links.py): built here, from the configuration, never by the model."""
        bases = {env.name: env.base_url for env in self.deps.settings.superset_environments
                 if env.base_url}
        return link_objects(answer, self.steps.found, bases) if bases else []

    async def pause(self) -> AsyncIterator[ev._Event]:
        """Stop for a person's decision: the paused call stays unanswered (the prompt builder
        drops it until the decision stores its result); later calls of the step are not run."""
        assert self.steps.paused is not None
        await self.close_pending(f"{self.steps.paused.tool} is waiting for a person's "
                                 "approval; call this again after that decision")
        self.publish("run_end", await self.load_messages())
        await self.finish("awaiting_confirmation", None)
        yield self.stamp(ev.Done, status="awaiting_confirmation", usage=self.usage)

    async def close_pending(self, reason: str) -> None:
        """Answer unanswered tool calls so the stored transcript stays valid for the model."""
        for call in self.pending_calls:
            if call["id"] in self.answered:  # e.g. a write stopped mid-flight: status unknown
                continue
            await self.store(role="tool", tool_call_id=call["id"],
                             tool_name=call["function"]["name"],
                             content=f"Not executed: {reason}.", meta={"status": "cancelled"})
        self.pending_calls = []


async def run_agent(deps: AgentDeps, request: RunRequest) -> AsyncIterator[ev._Event]:
    """Yield the events of one run; always ends with `done` unless the task is cancelled,
    in which case the run is recorded as cancelled before the cancellation propagates."""
    run = _Run(deps, request)
    # Snapshots order by the run's start as the database recorded it: after every earlier
    # run of the conversation, whatever this replica's clock says. A turn's admission
    # stored it already; a continuation stores it here.
    run.started_at = request.started_at if request.started_at is not None \
        else await off_loop(_start_run, deps, request)
    try:
        async for event in run.events():
            yield event
    except (asyncio.CancelledError, GeneratorExit):
        await run.close_pending("the run was stopped")
        # What the person saw stream before the stop, and the stop itself, stay in the
        # transcript (a reload shows what the live page showed; the model sees the text).
        await run.store(role="assistant", content="".join(run.partial),
                        meta={"status": "stopped"})
        run.publish("run_end", await run.load_messages())
        await run.finish("cancelled", None)
        raise
    except Exception as exc:  # the model failed, or the last line of defence: the app stays up
        model_failed = isinstance(exc, ModelError)
        await run.close_pending("the model failed" if model_failed
                                else "an internal error occurred")
        await run.publish_end()
        message = (str(exc) if model_failed or isinstance(exc, DatabaseUnavailable)  # one safe
                   else internal_error_message(exc, _log, "a run"))  # sentence, or a logged id
        await run.finish("failed", message)
        yield run.stamp(ev.Done, status="failed", usage=run.usage, error=message)


def _start_run(deps: AgentDeps, request: RunRequest) -> float:
    """Record the run's start; the start as the database has it."""
    with deps.db.session() as session:
        stored = repo.start_run(session=session, run_id=request.run_id,
                                conversation_id=request.conversation_id,
                                user_id=request.identity.user_id,
                                model=deps.settings.agent_model, env_id=request.env_id)
        return stored.started_at.timestamp()

"""The agent service: identity, conversation ownership, and one live run per conversation.

Runs live in `agent.run_host` (one asyncio task each, owned by the server, not by a
page); a page's message sent while its conversation's run is live waits in the turn queue
(`submit_turn`). Cancelling (Stop, the API caller's `job.cancel()`) ends a run with
`done(cancelled)` in its event list, which the Stop handler then shows. "One live run
per conversation" is held by the database (`agent.run_leases`), so it holds across
replicas; a process that dies leaves leases the next start (or another replica) ends with
a true record. `aclose` is the graceful shutdown: no new runs, live runs cancelled and
awaited (bounded) so each records how it ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import Callable
from typing import Any

from pydantic import SecretStr

from agent.admission import CONV_ID, Admission
from agent.confirmations import Resume, parse_decision
from agent.conversation_list import ConversationDirectory
from agent.errors import (
    ConfirmationError,
    ConversationAccessError,
    IdentityError,
    InputError,
    RateLimited,
)
from agent.execution import validate_args
from agent.fairness import UserRates
from agent.guard import Denial
from agent.history_window import HistoryWindow, read_window
from agent.identity import Identity, IdentityProvider
from agent.inputs import clean_text, is_id, is_token
from agent.live_run import LiveRun
from agent.loop import AgentDeps, RunRequest
from agent.run_host import SHUTDOWN_WAIT_S, RunHost
from agent.run_leases import ConversationBusy, RunLeases
from agent.turn_queue import QueuedTurn
from agent.undo import UNDO_SPEC, UNDO_TOOL, check_undo, load_target
from storage import conversations as repo
from storage import off_loop
from storage.models import Message

__all__ = ["AgentService", "LiveRun"]  # LiveRun: re-exported from agent.live_run

SHUTTING_DOWN = "The server is restarting; try again in a few seconds."


class AgentService:
    """What the UI, the Gradio API and tests call to run the agent."""

    def __init__(self, deps: AgentDeps, identities: IdentityProvider,
                 leases: RunLeases | None = None) -> None:
        self.deps = deps
        self.identities = identities
        self.leases = leases or RunLeases(
            deps.db, instance_id=f"agent|{uuid.uuid4().hex}",
            stale_after_s=deps.settings.side_stale_after_s)
        self.runs = RunHost(deps, self.leases)
        self.admission = Admission(deps, self.leases, is_live=self.runs.is_live,
                                   credential=self._credential)
        self.runs.start_queued = self._start_queued
        self.conversations = ConversationDirectory(
            deps.db, busy=lambda conv_id: self.runs.busy(conv_id)
            or bool(self.runs.queue.waiting(conv_id)))
        settings = deps.settings
        self._new_runs = UserRates(per_minute=settings.runs_per_minute_per_user,
                                   burst=settings.runs_burst_per_user)

    # identity and conversations ---------------------------------------------------------

    async def authenticate(self, user_id: str | None, token: str | None) -> Identity:
        """The verified caller; `IdentityError` (401/403) or `IdentityUnavailable` (503)."""
        token_text = _text(token)
        if token_text and not is_token(token_text):  # a surrogate would fail far away
            raise IdentityError("The user token is not valid.")
        return await self.identities.verify(user_id=clean_text(_text(user_id)) or None,
                                            token=token_text or None)

    def _credential(self, token: str | None) -> SecretStr | None:
        """What passthrough environments present to Superset for this request: the
        caller's own token, held in memory for this run only (never stored)."""
        passed = self.identities.passthrough_token(_text(token) or None)
        return SecretStr(passed) if passed else None

    def new_conversation_id(self) -> str:
        """An id for a new chat; its first turn is admitted without a look for it."""
        return self.admission.new_conversation_id()

    def open_conversation(self, identity: Identity, conv_id: str | None,
                          title: str | None = None) -> str:
        """Return the conversation id, creating it for `identity` if it is new."""
        return self.admission.open_conversation(identity, conv_id, title)

    def check_owner(self, identity: Identity, conv_id: str) -> None:
        self.admission.check_owner(identity, conv_id)

    def history(self, identity: Identity, conv_id: str) -> list[Message]:
        """Stored messages of a conversation the caller owns (empty when it is new)."""
        if not conv_id or not CONV_ID.match(conv_id):
            return []
        with self.deps.db.read() as session:
            conversation = repo.get_conversation(session=session, conversation_id=conv_id)
            if conversation is None:
                return []
            if conversation.owner_id != identity.user_id:
                raise ConversationAccessError()
            return list(repo.list_messages(session=session, conversation_id=conv_id))

    def history_window(self, identity: Identity, conv_id: str, *,
                       before_seq: int | None = None, from_seq: int | None = None
                       ) -> HistoryWindow:
        """What the chat shows of a conversation the caller owns: its newest messages
        (bounded, `agent/history_window.py`) and its open approvals."""
        return read_window(self.deps.db, identity, conv_id, before_seq=before_seq,
                           from_seq=from_seq)

    # runs ------------------------------------------------------------------------------

    def live_run(self, conv_id: str) -> LiveRun | None:
        return self.runs.get(conv_id)

    def queued(self, conv_id: str) -> list[QueuedTurn]:
        """Turns waiting for the conversation's live run, oldest first."""
        return self.runs.queue.waiting(conv_id)

    async def start_turn(
        self, *, message: Any, conv_id: str | None, user_id: str | None,
        user_jwt: str | None, env_id: str | None, uicontext_str: Any,
    ) -> LiveRun:
        """Start a turn now; `ConversationBusy` when the conversation's run is live (the
        API's contract: refused with a clear error, never dropped). `submit_turn` queues."""
        identity = await self.authenticate(user_id, user_jwt)
        self._admit(identity, new_run=True)
        return await self._begin_now(identity, message, conv_id, env_id, uicontext_str,
                                     user_jwt)

    async def submit_turn(
        self, *, message: Any, conv_id: str | None, user_id: str | None,
        user_jwt: str | None, env_id: str | None, uicontext_str: Any,
    ) -> LiveRun | QueuedTurn:
        """The page's send: start the turn now, or, while the conversation's run is live in
        this process, queue it behind that run (it starts when the run ends)."""
        identity = await self.authenticate(user_id, user_jwt)
        conv_id = (conv_id or "").strip() if isinstance(conv_id, str) else ""
        if conv_id and (self.runs.busy(conv_id) or self.runs.queue.waiting(conv_id)):
            if self.runs.starting_for(conv_id) != identity.user_id:
                conv_id = await off_loop(self.admission.own, identity, conv_id)
            # else: a send right behind this person's own first one, whose admission may
            # still be creating the conversation; this turn's own start checks the owner.
            self._admit(identity, new_run=True, queued=True)
            turn = QueuedTurn(identity=identity, text=message if isinstance(message, str)
                              else "", env_id=env_id, uicontext=uicontext_str,
                              user_jwt=user_jwt)
            self.runs.queue.add(conv_id, turn)
            if not self.runs.busy(conv_id):  # the queue waited on an approval: go on now
                self.runs.start_next(conv_id)
            self.runs.poke(conv_id)
            return turn
        self._admit(identity, new_run=True)
        return await self._begin_now(identity, message, conv_id, env_id, uicontext_str,
                                     user_jwt)

    async def _start_queued(self, turn: QueuedTurn, conv_id: str) -> LiveRun:
        """Admit a queued turn in a worker thread and launch its run (`RunHost.start_next`
        holds the conversation meanwhile, so only a live run counts as busy here)."""
        if self.runs.closing:
            raise InputError(SHUTTING_DOWN)
        if self.runs.running(conv_id):
            raise ConversationBusy()
        return await self._launch_admitted(self.admission.turn, turn.identity, turn.text,
                                           conv_id, turn.env_id, turn.uicontext,
                                           turn.user_jwt)

    async def _begin_now(self, identity: Identity, message: Any, conv_id: str | None,
                         env_id: str | None, uicontext_str: Any, user_jwt: str | None
                         ) -> LiveRun:
        """Admit the turn in a worker thread (`Admission.turn`), then launch its run. The
        conversation is held from the first check to the launch (`runs.starting`), so a send
        that arrives meanwhile queues behind this turn instead of racing it; if this turn
        does not start, a turn queued meanwhile goes on."""
        conv_id = (conv_id or "").strip() if isinstance(conv_id, str) else ""
        conv_id = conv_id or self.admission.new_conversation_id()
        self._ensure_idle(conv_id)
        try:
            with self.runs.starting(conv_id, identity.user_id):
                return await self._launch_admitted(self.admission.turn, identity, message,
                                                   conv_id, env_id, uicontext_str, user_jwt)
        except BaseException:
            if self.runs.queue.waiting(conv_id) and not self.runs.busy(conv_id):
                self.runs.start_next(conv_id)
            raise

    async def confirm(
        self, *, conv_id: str | None, user_id: str | None, user_jwt: str | None,
        confirmation_id: str | None, decision: Any, args: Any = None,
    ) -> LiveRun:
        """Approve or deny a paused call (owner only, single use) and run the continuation.
        A write approved here acts with the approving request's token, not the asker's.
        `args` (JSON text or a dict): the arguments as the person edited them; they are
        validated against the tool's schema first (a bad value is refused with the field's
        message and nothing is decided), then re-checked and re-rated by the run."""
        identity = await self.authenticate(user_id, user_jwt)
        choice = parse_decision(decision)
        conv_id = await off_loop(self.admission.own, identity, conv_id)
        edited = None if choice == "deny" else await off_loop(
            self.validate_edit, str(confirmation_id or ""), args)
        self._admit(identity)  # before the decision is taken: a refusal must not spend it
        self._ensure_idle(conv_id)
        with self.runs.starting(conv_id, identity.user_id):
            return await self._launch_admitted(self.admission.decision, identity, conv_id,
                                               str(confirmation_id or ""), choice, user_jwt,
                                               edited)

    def validate_edit(self, confirmation_id: str, args: Any) -> dict[str, Any] | None:
        """The person's edit of a pending call's arguments, validated against the tool's
        schema (None: no edit); `InputError` with the field's message. Decides nothing."""
        if args is None or (isinstance(args, str) and not args.strip()):
            return None
        try:
            edited = json.loads(args) if isinstance(args, str) else args
        except ValueError as exc:
            raise InputError(f"args must be a JSON object of the tool's arguments ({exc}); "
                             "nothing was executed.") from None
        if not isinstance(edited, dict):
            raise InputError("args must be a JSON object of the tool's arguments; nothing was "
                             "executed.")
        row = self.deps.confirmations.get(confirmation_id.strip()) \
            if is_id(confirmation_id.strip()) else None
        if row is None:
            raise ConfirmationError("No such confirmation in this conversation; nothing was "
                                    "executed.")
        spec = UNDO_SPEC if row.tool == UNDO_TOOL else self.deps.registry.get(row.tool)
        if spec is None:
            raise ConfirmationError(f"There is no tool named {row.tool!r}; nothing was "
                                    "executed.")
        valid, problem = validate_args(spec, edited)
        if problem is not None:
            raise InputError(f"{problem}. Nothing was executed; the request is still open.")
        return valid.model_dump(exclude_none=True)

    async def retry(self, *, conv_id: str | None, user_id: str | None,
                    user_jwt: str | None, call_id: str | None) -> LiveRun:
        """Run again a read call whose automatic retry failed too (SPEC §5)."""
        identity = await self.authenticate(user_id, user_jwt)
        conv_id = await off_loop(self.admission.own, identity, conv_id)
        self._ensure_idle(conv_id)
        stored = await off_loop(self.history, identity, conv_id)
        failed = next((row for row in stored
                       if row.role == "tool" and row.tool_call_id == (call_id or "").strip()
                       and (row.meta or {}).get("retry_exhausted")), None)
        if failed is None or not failed.tool_name:
            raise ConfirmationError("There is no failed call with that id to retry here.")
        meta = failed.meta or {}
        resume = Resume(kind="retry", call_id=failed.tool_call_id or "", tool=failed.tool_name,
                        args=dict(meta.get("args") or {}))
        self._admit(identity, new_run=True)  # no await from here to the hold: it counts
        self._ensure_idle(conv_id)
        with self.runs.starting(conv_id, identity.user_id):
            return await self._launch_admitted(self.admission.retry, identity, conv_id,
                                               meta.get("resume") or {}, resume, user_jwt)

    async def undo_change(self, *, conv_id: str | None, user_id: str | None,
                          user_jwt: str | None, audit_id: Any,
                          overwrite_newer: bool = False) -> LiveRun:
        """Ask to undo an audited change (issue 15): a run in the caller's conversation (it
        must exist, like for a decision; the page stores a new one first) that proposes
        `undo_change` and stops at its approval card, like any write (`agent.undo`)."""
        identity = await self.authenticate(user_id, user_jwt)
        conv_id = await off_loop(self.admission.own, identity, conv_id)
        number = _audit_number(audit_id)
        target = await off_loop(load_target, self.deps.db, number)
        problem = check_undo(target, number, identity, self.deps.registry,
                             is_demo=self.deps.settings.is_demo)
        if problem is not None:  # refused at once; the run checks again (agent.tool_steps)
            raise InputError(problem.reason if isinstance(problem, Denial) else problem)
        resume = Resume(kind="undo", call_id="", tool=UNDO_TOOL,
                        args={"audit_id": number, "overwrite_newer": bool(overwrite_newer)})
        self._admit(identity, new_run=True)  # no await from here to the hold: it counts
        self._ensure_idle(conv_id)
        with self.runs.starting(conv_id, identity.user_id):
            return await self._launch_admitted(self.admission.retry, identity, conv_id, {},
                                               resume, user_jwt)

    async def open_confirmation(self, *, conv_id: str | None, user_id: str | None,
                                user_jwt: str | None) -> dict[str, Any] | None:
        """The pending approval of the caller's conversation, if any (for a reloaded page)."""
        identity = await self.authenticate(user_id, user_jwt)
        conv_id = await off_loop(self.admission.own, identity, conv_id)
        return await off_loop(self.deps.confirmations.open_request, identity=identity,
                              conversation_id=conv_id)

    async def audit_entries(self, *, user_id: str | None, user_jwt: str | None,
                            limit: int = 100, before_id: int | None = None
                            ) -> list[dict[str, Any]]:
        """The audit log, newest first; admins only (`AuditAccessError` otherwise)."""
        identity = await self.authenticate(user_id, user_jwt)
        return await off_loop(self.deps.audit.entries, identity, limit=limit,
                              before_id=before_id, own_only=self.deps.settings.is_demo)

    def _admit(self, identity: Identity, *, new_run: bool = False,
               queued: bool = False) -> None:
        """Fair shares: at most `runs_max_per_user` runs at once per person, and new runs
        from a bucket that refills at `runs_per_minute_per_user` (SPEC §10). Per process.
        A queued turn runs after its conversation's run, never beside it: only the bucket."""
        cap = self.deps.settings.runs_max_per_user
        running = self.runs.running_for(identity.user_id)
        if running >= cap and not queued:
            raise RateLimited(f"You already have {running} runs in progress (the limit is "
                              f"{cap}); wait for one to finish.", retry_after_s=2)
        if new_run and (wait := self._new_runs.take(identity.user_id)):
            raise RateLimited(f"Too many new runs in a short time; try again in {wait} s.",
                              retry_after_s=wait)

    def _ensure_idle(self, conv_id: str) -> None:
        if self.runs.closing:
            raise InputError(SHUTTING_DOWN)
        if self.runs.busy(conv_id):
            raise ConversationBusy()

    def _launch(self, request: RunRequest) -> LiveRun:
        return self.runs.launch(request)

    async def _launch_admitted(self, admit: Callable[..., RunRequest], *args: Any) -> LiveRun:
        """`admit(*args)` in a worker thread, then its run launched. Launched even when the
        caller is cancelled meanwhile (a closed page): by then the lease is claimed and a
        decision may be taken, and the run belongs to the server, not to the request."""
        job = asyncio.ensure_future(asyncio.to_thread(admit, *args))
        try:
            return self._launch(await asyncio.shield(job))
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                self._launch(await job)
            raise

    async def aclose(self, wait_s: float = SHUTDOWN_WAIT_S) -> None:
        """Graceful shutdown: no new runs; live ones cancelled and awaited (bounded)."""
        await self.runs.aclose(wait_s)

    async def stop(self, *, conv_id: str, user_id: str | None, user_jwt: str | None,
                   wait_s: float = 10.0) -> LiveRun | None:
        """Cancel the conversation's live run (owner only) and wait until it has settled;
        None when nothing runs. A conversation that is unknown or someone else's is the
        same `ConversationAccessError`, so Stop cannot tell whether an id exists."""
        identity = await self.authenticate(user_id, user_jwt)
        conv_id = await off_loop(self.admission.own, identity, conv_id)
        self.runs.queue.drain(conv_id)  # first: a stopped run starts nothing queued after it
        # A turn being admitted (a queued one whose run is about to start) is stopped as it
        # launches; wait for that, so the person sees it stopped.
        if self.runs.starting_for(conv_id) is not None:
            self.runs.stop_starting(conv_id)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.runs.admitted(conv_id), timeout=wait_s)
        live = self.runs.get(conv_id)
        if live is None:
            return None
        if live.owner_id != identity.user_id:  # the owner check above already holds
            raise ConversationAccessError()
        # Once is enough (a turn stopped as it launched is already stopping): a second
        # cancellation would cut short the recording of the run's end.
        if not live.request.cancel_requested.is_set():
            live.cancel()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(live.finished.wait(), timeout=wait_s)
        return live


def _audit_number(value: Any) -> int:
    """An audit id as sent by a page or a program ("12" or 12)."""
    text = str(value).strip() if isinstance(value, int | str) else ""
    if not text.isdigit() or not 0 < int(text) < 2**31:
        raise InputError("audit_id must be the number of an audited change.")
    return int(text)


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""

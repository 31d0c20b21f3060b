"""One tool call of a run, end to end: guard, risk, confirmation, execution, audit (SPEC §4-6).

Every call is re-checked here (existence, RBAC, affinity, offered), whatever the model was
told; a call that may not run yields `permission_denied`, is audited and never executed.
A permitted write stops at `confirm_required` (a stored confirmation); the run pauses and a
later decision resumes it here (`resume`). Reads run under the retry policy; writes run
once, and a write that times out is reported as status unknown, never repeated. Before a
write is sent, its pre-image is read and an `executing` audit row is committed with it
(write-ahead), so a process that dies mid-write leaves a record that `agent.run_leases`
closes as "status unknown", and every change can be undone (`agent.tool_changes`). A person
may edit a call's arguments when approving it; the edit is re-rated here.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

from agent import events as ev
from agent.confirmations import DECLINED_TEXT, Resume
from agent.errors import SupersetRefused
from agent.execution import ExecutionResult, execute, validate_args
from agent.guard import Denial, Risk, assess, check_invocation
from agent.impact import blast_radius
from agent.model_gateway import ToolCallRequest
from agent.object_links import FoundObject, objects_in
from agent.pre_images import Snapshot
from agent.retrying import RetryNotice
from agent.summaries import describe_call
from agent.tool_changes import ChangeSteps, riskier
from agent.tools.registry import ToolContext, ToolSpec
from agent.tracing import ToolSpan
from agent.undo import UNDO_TOOL, UndoTarget
from storage import migrations_log, off_loop

if TYPE_CHECKING:  # the loop imports this module; its types are for annotations only
    from agent.loop import AgentDeps, RunRequest

__all__ = ["ToolSteps"]

_MAX_AUDIT_ARGS = 4000
_UNKNOWN_STATUS = "Operation status unknown — check Superset"


def _audit_args(args: Any) -> dict[str, Any]:
    """Model-chosen arguments for the audit row, bounded in size."""
    if not isinstance(args, dict):
        return {"_raw": str(args)[:_MAX_AUDIT_ARGS]}
    text = json.dumps(args, default=str)
    return args if len(text) <= _MAX_AUDIT_ARGS else {"_truncated": text[:_MAX_AUDIT_ARGS]}


class ToolSteps(ChangeSteps):
    """Runs the tool calls of one run; `paused` is set when a call awaits a person."""

    def __init__(self, deps: AgentDeps, request: RunRequest, stamp: ev.EventStamper,
                 store: Callable[..., Awaitable[None]],
                 flush: Callable[[], Awaitable[None]]) -> None:
        self.deps = deps
        self.request = request
        self.stamp = stamp
        self.store = store  # queues a message (agent/run_store.py)
        self.flush = flush  # writes the queued ones: before a card or a write is recorded
        self.offered = {spec.name: spec for spec in request.tools}
        self.paused: ev.ConfirmRequired | None = None
        self.found: list[FoundObject] = []  # objects the run's results named (for links)

    # context -----------------------------------------------------------------------------

    @property
    def object_type(self) -> str | None:
        return self.request.context.objectType if self.request.context else None

    @property
    def identity(self) -> Any:
        return self.request.identity

    def resume_state(self) -> dict[str, Any]:
        """How to rebuild this run's context later (for a decision or a manual retry)."""
        context = self.request.context
        return {"env_id": self.request.env_id, "env_tier": self.request.env_tier,
                "context": context.model_dump(exclude_none=True) if context else None}

    def _tool_context(self, env_id: str | None) -> ToolContext:
        return ToolContext(identity=self.identity, settings=self.deps.settings,
                           env_id=env_id or self.request.env_id,
                           offered=list(self.offered.values()), services=self.deps.services,
                           superset_token=self.request.superset_token)

    def _scrub(self, text: str) -> str:
        """Configured secrets, the caller's own token, and anything shaped like one."""
        token = self.request.superset_token
        return self.deps.scrubber.scrub(
            text, extra=[token.get_secret_value()] if token is not None else ())

    def _risk(self, spec: ToolSpec, args: dict[str, Any]) -> Risk:
        return assess(spec, args, run_env=self.request.env_id, role=self.identity.role,
                      tiers=self.deps.settings.environment_tiers)

    def _guard(self, name: str) -> tuple[ToolSpec | None, Denial | None]:
        return check_invocation(self.deps.registry, name, role=self.identity.role,
                                object_type=self.object_type, offered=self.offered)

    async def _audit(self, action: str, tool: str, args: Any, risk: Risk | None, outcome: str,
                     call_id: str, confirmation_id: str | None = None,
                     pre_image: Snapshot | None = None) -> int:
        # The transcript is never behind the audit log: an `executed` row whose result was
        # still queued would, after a crash, leave a call that recovery calls never run.
        await self.flush()
        return await off_loop(
            self.deps.audit.record,
            identity=self.identity, action=action, tool=tool, args=_audit_args(args),
            env_id=risk.env_id if risk else None, env_tier=risk.env_risk if risk else None,
            outcome=outcome, confirmation_id=confirmation_id,
            conversation_id=self.request.conversation_id, run_id=self.request.run_id,
            call_id=call_id, pre_image=pre_image)

    # a new call from the model -------------------------------------------------------------

    async def run(self, call: ToolCallRequest) -> AsyncIterator[ev._Event]:
        spec, denial = self._guard(call.name)
        if spec is None or denial is not None:
            async for event in self._deny(call.id, call.name, call.arguments, denial):
                yield event
            return
        risk = self._risk(spec, call.arguments)
        yield self.stamp(ev.ToolCall, call_id=call.id, tool=call.name, args=call.arguments,
                         env_id=risk.env_id, tool_risk=spec.risk)
        args, problem = (None, call.parse_error) if call.parse_error else validate_args(
            spec, call.arguments)
        if problem is not None:
            yield await self._error(call.id, call.name, problem)
            return
        if risk.needs_confirmation:
            yield await self._ask(call.id, spec, args.model_dump(exclude_none=True), risk)
            return
        async for event in self._execute(call.id, spec, args, risk):
            yield event

    async def _ask(self, call_id: str, spec: ToolSpec, args: dict[str, Any],
                   risk: Risk, proposed: dict[str, Any] | None = None) -> ev.ConfirmRequired:
        """The approval card (`proposed`: the model's arguments, when these are a person's
        edit that is asked for again because it became riskier). The call it answers is
        written first: a card (and its decision, on any replica) refers to a stored call."""
        await self.flush()
        ctx = self._tool_context(risk.env_id)
        summary, changes = await describe_call(spec.name, args, risk.env_id, ctx)
        impact = await blast_radius(spec.name, args, risk.env_id, ctx)
        kept = {"proposed_args": proposed} if proposed is not None else {}
        row = await off_loop(
            self.deps.confirmations.create,
            identity=self.identity, conversation_id=self.request.conversation_id,
            run_id=self.request.run_id, call_id=call_id, tool=spec.name, args=args, risk=risk,
            summary=summary, resume={**self.resume_state(), "card_changes": changes,
                                     "card_impact": impact, **kept})
        self.paused = self.stamp(
            ev.ConfirmRequired, confirmation_id=row.id, call_id=call_id, tool=spec.name,
            args=args, env_id=risk.env_id, tool_risk=spec.risk, env_risk=risk.env_risk,
            permission_risk=risk.permission_risk, dangerous=risk.dangerous,
            countdown_s=row.countdown_s, summary=summary, expires_at=row.expires_ts,
            changes=changes, impact=impact)
        return self.paused

    # a decided confirmation or a manual retry -----------------------------------------------

    async def resume(self, resume: Resume) -> AsyncIterator[ev._Event]:
        if resume.kind == "deny":
            yield await self._error(resume.call_id, resume.tool,
                                    "Denied by you; nothing was executed.",
                                    stored=DECLINED_TEXT, status="declined", decision="denied")
            return
        call_id = resume.call_id
        if resume.kind in ("retry", "undo"):
            call_id = f"{resume.kind}_{uuid.uuid4().hex[:16]}"
            await self.store(role="assistant", content="", tool_calls=[{
                "id": call_id, "type": "function",
                "function": {"name": resume.tool, "arguments": json.dumps(resume.args)}}])
        confirmation_id = resume.confirmation.id if resume.confirmation else None
        if resume.tool == UNDO_TOOL and resume.kind in ("undo", "approve"):
            async for event in self._undo(call_id, resume, confirmation_id):
                yield event
            return
        spec, denial = self._guard(resume.tool)
        if spec is None or denial is not None or (resume.kind == "retry" and spec.risk != "read"):
            denial = denial or Denial("Only read calls can be retried.", None, "not_offered")
            async for event in self._deny(call_id, resume.tool, resume.args, denial,
                                          confirmation_id):
                yield event
            return
        risk = self._risk(spec, resume.args)
        yield self.stamp(ev.ToolCall, call_id=call_id, tool=spec.name, args=resume.args,
                         env_id=risk.env_id, tool_risk=spec.risk)
        args, problem = validate_args(spec, resume.args)
        if problem is not None:
            yield await self._error(call_id, spec.name, problem)
            return
        if resume.proposed_args is not None and riskier(risk, resume.confirmation):
            # the person's edit made it dangerous or moved it: ask again, countdown anew
            yield await self._ask(call_id, spec, args.model_dump(exclude_none=True), risk,
                                  proposed=resume.proposed_args)
            return
        async for event in self._execute(call_id, spec, args, risk, confirmation_id,
                                         without_undo=resume.without_undo,
                                         edited_from=resume.proposed_args):
            yield event

    # outcomes --------------------------------------------------------------------------

    async def _deny(self, call_id: str, name: str, args: Any, denial: Denial | None,
                    confirmation_id: str | None = None) -> AsyncIterator[ev._Event]:
        denial = denial or Denial(f"There is no tool named {name!r}.", None, "not_offered")
        yield self.stamp(ev.PermissionDenied, call_id=call_id, tool=name, reason=denial.reason,
                         required_role=denial.required_role)
        await self.store(role="tool", tool_call_id=call_id, tool_name=name,
                         content=f"Permission denied: {denial.reason} Nothing was executed.",
                         meta={"status": "denied"})
        await self._audit(denial.action, name, args, None, denial.reason, call_id,
                          confirmation_id)

    async def not_run(self, call: ToolCallRequest, reason: str) -> ev._Event:
        """Answer a call the run will not execute (over the per-step limit)."""
        return await self._error(call.id, call.name, reason)

    async def _error(self, call_id: str, name: str, problem: str, *, stored: str | None = None,
               status: str = "error", decision: str | None = None) -> ev._Event:
        await self.store(role="tool", tool_call_id=call_id, tool_name=name,
                         content=stored or f"Error: {problem}", meta={"status": status})
        return self.stamp(ev.ToolError, call_id=call_id, tool=name, error=problem,
                          retryable=False, retry_exhausted=False, decision=decision)

    async def _refused(self, call_id: str, spec: ToolSpec, args: Any, risk: Risk, reason: str,
                       confirmation_id: str | None) -> AsyncIterator[ev._Event]:
        """Superset's own permission check refused the person's token (passthrough)."""
        told = f"Superset refused this for your account: {reason}"
        yield self.stamp(ev.PermissionDenied, call_id=call_id, tool=spec.name, reason=told,
                         required_role=None)
        await self.store(role="tool", tool_call_id=call_id, tool_name=spec.name,
                         content=f"Permission denied by Superset for this person: {reason}. "
                         "Nothing was changed; do not retry, tell the person.",
                         meta={"status": "denied", "args": args.model_dump(exclude_none=True)})
        if spec.risk != "read":
            outcome = f"refused by Superset: {reason}"
            await self._audit("executed", spec.name, args.model_dump(exclude_none=True), risk,
                              outcome, call_id, confirmation_id)
            if confirmation_id is not None:
                await off_loop(self.deps.confirmations.record_outcome, confirmation_id, outcome)

    def _record_unknown(self, tool: str, args: dict[str, Any]) -> None:
        """migration_history says it too: a migration whose outcome is unknown."""
        with self.deps.db.session() as session:
            migrations_log.record_unknown(session=session, user_id=self.identity.user_id,
                                          tool=tool, args=args)

    async def _write_interrupted(self, call_id: str, spec: ToolSpec, args: Any, risk: Risk,
                                 confirmation_id: str | None, exc: BaseException) -> None:
        """A write stopped or crashed mid-flight: record status unknown, audit it."""
        why = ("the run was stopped" if isinstance(exc, asyncio.CancelledError | GeneratorExit)
               else f"an internal error ({type(exc).__name__})")
        await self.store(role="tool", tool_call_id=call_id, tool_name=spec.name,
                         content=f"Error: status unknown — {why} while {spec.name} was "
                         "running, so the change may or may not have happened. Do not call it "
                         "again; ask the person to check Superset.",
                         meta={"status": "unknown", "args": args.model_dump(exclude_none=True)})
        outcome = f"status unknown ({why} while running)"
        await self._audit("executed", spec.name, args.model_dump(exclude_none=True), risk,
                          outcome, call_id, confirmation_id)
        await off_loop(self._record_unknown, spec.name, args.model_dump(exclude_none=True))
        if confirmation_id is not None:
            await off_loop(self.deps.confirmations.record_outcome, confirmation_id, outcome)

    async def _execute(self, call_id: str, spec: ToolSpec, args: Any, risk: Risk,
                       confirmation_id: str | None = None, *, without_undo: bool = False,
                       undoes: UndoTarget | None = None,
                       edited_from: dict[str, Any] | None = None) -> AsyncIterator[ev._Event]:
        settings = self.deps.settings
        is_read = spec.risk == "read"
        timeout_s = settings.tool_timeout_read_s if is_read else settings.tool_timeout_write_s
        result: ExecutionResult | None = None
        snapshot: Snapshot | None = None
        audit_id: int | None = None
        if not is_read:  # the call is in the transcript before anything about it is sent
            await self.flush()  # (its pre-image read may end it with an audit row)
        if not is_read and not without_undo:
            captured = await self._pre_image(call_id, spec, args, risk, confirmation_id)
            if isinstance(captured, SupersetRefused):
                async for event in self._refused(call_id, spec, args, risk, captured.reason,
                                                 confirmation_id):
                    yield event
                return
            if isinstance(captured, ev._Event):
                yield captured
                return
            snapshot = captured
        if not is_read:  # write-ahead: committed before the request leaves (SPEC §5)
            audit_id = await self._audit(
                "executing", spec.name, args.model_dump(exclude_none=True), risk,
                "sent to Superset; outcome pending", call_id, confirmation_id, snapshot)
            if confirmation_id is not None:
                await off_loop(self.deps.confirmations.record_outcome, confirmation_id, "executing")
        span = ToolSpan(spec.name, risk.env_id, spec.risk)
        try:
            async for item in execute(spec, args, self._tool_context(risk.env_id),
                                      timeout_s=timeout_s,
                                      output_limit=settings.tool_output_limit_chars,
                                      scrub=self._scrub):
                if isinstance(item, RetryNotice):
                    span.retries += 1
                    yield self.stamp(ev.ToolRetry, call_id=call_id, tool=spec.name,
                                     attempt=item.attempt, max_attempts=item.max_attempts,
                                     delay_s=item.delay_s, error=item.error)
                else:
                    result = item
        except BaseException as exc:
            span.end("interrupted")
            if not is_read:  # it may have happened: say so, never "not executed"
                await self._write_interrupted(call_id, spec, args, risk, confirmation_id, exc)
            raise
        assert result is not None
        span.end("refused" if result.refused_reason is not None else "ok" if result.ok
                 else "timed_out" if result.timed_out else "error", result.duration_ms)
        if result.refused_reason is not None:
            async for event in self._refused(call_id, spec, args, risk, result.refused_reason,
                                             confirmation_id):
                yield event
            return
        text, status = result.text, "done" if result.ok else "error"
        undo_id = audit_id if result.ok and snapshot is not None else None
        if result.ok:
            self.found.extend(objects_in(spec.name, result.raw, risk.env_id))
            if undo_id is not None and snapshot is not None:
                await self._after(undo_id, snapshot)
            if undoes is not None and audit_id is not None:  # the original: undone by this
                await self._mark_undone(undoes.audit_id, audit_id)
            yield self.stamp(ev.ToolResult, call_id=call_id, tool=spec.name, summary=result.text,
                             truncated=result.truncated, duration_ms=result.duration_ms,
                             decision="approved" if confirmation_id else None,
                             undo_audit_id=undo_id)
        elif result.timed_out and not is_read:
            status = "unknown"
            text = (f"Error: status unknown — {spec.name} did not answer within {timeout_s:g} s, "
                    "so the change may or may not have happened. Do not call it again; ask "
                    "the person to check Superset.")
            yield self.stamp(ev.ToolTimeout, call_id=call_id, tool=spec.name,
                             timeout_s=timeout_s, is_write_tool=True, retryable=False,
                             message=f"{_UNKNOWN_STATUS}: {result.error}")
        else:
            yield self.stamp(ev.ToolError, call_id=call_id, tool=spec.name,
                             error=result.error or "failed", retryable=result.retryable,
                             retry_exhausted=result.retry_exhausted,
                             duration_ms=result.duration_ms)
        if edited_from is not None:  # the model must know what really ran
            text = (f"The person edited this call before approving it, so it ran with "
                    f"{json.dumps(args.model_dump(exclude_none=True))} instead of the proposed "
                    f"{json.dumps(edited_from)}.\n{text}")
        await self.store(role="tool", tool_call_id=call_id, tool_name=spec.name, content=text,
                         meta={"status": status, "duration_ms": result.duration_ms,
                         **({"confirmation": "approved"} if confirmation_id else {}),
                         "truncated": result.truncated,
                         "retry_exhausted": result.retry_exhausted,
                         **({"undo_audit_id": undo_id} if undo_id is not None else {}),
                         "args": args.model_dump(exclude_none=True),
                         "resume": self.resume_state()})
        if not is_read:
            outcome = {"done": "succeeded", "unknown": "status unknown (timed out)"}.get(
                status, f"failed: {result.error}")
            await self._audit("executed", spec.name, args.model_dump(exclude_none=True), risk,
                              outcome, call_id, confirmation_id)
            if confirmation_id is not None:
                await off_loop(self.deps.confirmations.record_outcome, confirmation_id, outcome)

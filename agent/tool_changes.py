"""The undo half of a tool call's steps (issue 15), mixed into `agent.tool_steps.ToolSteps`:
reading a write's pre-image before it runs (no copy, no write), its fingerprint after it
ran, and the undo a person asked for: its checks, its card, and its execution.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

from agent import events as ev
from agent.confirmations import Resume
from agent.errors import SupersetRefused, ToolFailure
from agent.execution import validate_args
from agent.guard import Denial, Risk
from agent.pre_images import CAPTURED, CaptureFailed, Snapshot, capture, state
from agent.tools.registry import ToolContext, ToolSpec
from agent.tools.superset_common import client_for
from agent.undo import UNDO_SPEC, UNDO_TOOL, catalog, check_undo, load_target, undo_risk
from storage import off_loop
from storage import pre_images as pre_images_repo

_log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from agent.loop import AgentDeps

__all__ = ["ChangeSteps", "riskier"]


def riskier(risk: Risk, asked: Any) -> bool:
    """An edited call is riskier than the card the person approved (`asked`, its
    confirmation row): it became dangerous, or it now acts on another environment. It is
    then asked for again, with the countdown, instead of run."""
    if asked is None:
        return False
    return (risk.dangerous and not asked.dangerous) or risk.env_id != asked.env_id


class ChangeSteps:
    """Needs what `ToolSteps` has; see there."""

    deps: AgentDeps
    identity: Any
    stamp: ev.EventStamper
    _tool_context: Callable[[str | None], ToolContext]
    _audit: Callable[..., Awaitable[int]]
    _error: Callable[..., Awaitable[ev._Event]]
    _deny: Callable[..., AsyncIterator[ev._Event]]
    _ask: Callable[..., Awaitable[ev.ConfirmRequired]]
    _execute: Callable[..., AsyncIterator[ev._Event]]

    async def _undo(self, call_id: str, resume: Resume, confirmation_id: str | None
                    ) -> AsyncIterator[ev._Event]:
        """An undo a person asked for (`undo`: its approval card) or approved (`approve`: run
        it). Never offered to the model; checked here like any call: who may undo this
        change (the original's role), and at the original's risk."""
        args, problem = validate_args(UNDO_SPEC, resume.args)
        target = None if problem else await off_loop(load_target, self.deps.db, args.audit_id)
        check = problem or check_undo(target, args.audit_id, self.identity, catalog(),
                                      is_demo=self.deps.settings.is_demo)
        if isinstance(check, Denial):
            async for event in self._deny(call_id, UNDO_TOOL, resume.args, check,
                                          confirmation_id):
                yield event
            return
        if check is not None or target is None:
            yield await self._error(call_id, UNDO_TOOL, str(check))
            return
        risk = undo_risk(target, self.identity, catalog(),
                         self.deps.settings.environment_tiers)
        yield self.stamp(ev.ToolCall, call_id=call_id, tool=UNDO_TOOL, args=resume.args,
                         env_id=risk.env_id, tool_risk=risk.tool_risk)
        if resume.kind == "undo" or (resume.proposed_args is not None
                                     and riskier(risk, resume.confirmation)):
            yield await self._ask(call_id, UNDO_SPEC, args.model_dump(), risk,
                                  proposed=resume.proposed_args)
            return
        async for event in self._execute(call_id, UNDO_SPEC, args, risk, confirmation_id,
                                         without_undo=resume.without_undo, undoes=target,
                                         edited_from=resume.proposed_args):
            yield event


    async def _pre_image(self, call_id: str, spec: ToolSpec, args: Any, risk: Risk,
                         confirmation_id: str | None
                         ) -> Snapshot | ev._Event | SupersetRefused | None:
        """The copy of what the write will change (issue 15), or the error event that ends
        the call when it cannot be read: no pre-image, no write. Superset refusing the
        person's token the read comes back as that refusal, to be told as one."""
        if spec.name not in CAPTURED:
            return None
        try:
            return await capture(spec.name, args.model_dump(exclude_none=True), risk.env_id,
                                 self._tool_context(risk.env_id))
        except SupersetRefused as refused:
            return refused
        except CaptureFailed as exc:
            reason = str(exc)
        await self._audit("not_executed", spec.name, args.model_dump(exclude_none=True), risk,
                          reason, call_id, confirmation_id)
        if confirmation_id is not None:
            await off_loop(self.deps.confirmations.record_outcome, confirmation_id, reason)
        return await self._error(call_id, spec.name, reason, stored=reason)

    async def _after(self, audit_id: int, snapshot: Snapshot) -> None:
        """The object's fingerprint right after the write (best effort): the undo compares
        it with the object then, to tell whether someone changed it since."""
        client = client_for(self._tool_context(snapshot.env_id), snapshot.env_id)
        try:
            after = await state(snapshot.kind, client, snapshot.object_id, snapshot.object_uuid)
        except ToolFailure as exc:  # no fingerprint: the undo then asks to confirm overwriting
            _log.warning("state of %s %s after change #%s not read: %s", snapshot.kind,
                         snapshot.object_uuid or snapshot.object_id, audit_id, exc)
            return
        await off_loop(self.deps.db.run, lambda session: pre_images_repo.set_after(
            session=session, audit_id=audit_id, after=after or {"deleted": True}))

    async def _mark_undone(self, original: int, undo_audit_id: int) -> None:
        """The original change is undone by this audit row (it cannot be undone twice)."""
        await off_loop(self.deps.db.run, lambda session: pre_images_repo.mark_undone(
            session=session, audit_id=original, undo_audit_id=undo_audit_id))

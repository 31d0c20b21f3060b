"""Human-in-the-loop confirmations (SPEC §6): create, decide, and close pending write calls.

A permitted write or dangerous call pauses its run; the call becomes a `confirmations` row
(the checkpoint). Deciding is single use, owner only and expiring, all enforced by one
conditional UPDATE in the database, so it holds across restarts and replicas. The run is
resumed by the agent service with the decided row (`Resume`); the loop then executes or
declines the call and lets the model continue.

A pending call that is never decided must still end with a tool result, or the stored
transcript would carry an unanswered call forever: expiry and a new turn in the same
conversation ("superseded") both store a "Not executed" result for it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from agent.audit import AuditLog
from agent.errors import ConfirmationError, InputError
from agent.guard import Risk
from agent.identity import Identity
from agent.inputs import is_id
from agent.settings import Settings
from storage import Database
from storage import confirmations as repo
from storage import conversations as messages_repo
from storage.confirmation_models import PENDING, Confirmation

__all__ = [
    "DECLINED_TEXT",
    "Choice",
    "ConfirmationError",
    "ConfirmationService",
    "Resume",
    "parse_decision",
]

DECLINED_TEXT = "Declined: the person denied this call. Nothing was executed."
_EXPIRED_TEXT = ("Not executed: the approval request expired before anyone approved it. "
                 "Nothing was changed.")
_SUPERSEDED_TEXT = ("Not executed: the person went on without approving this call. Nothing "
                    "was changed; call it again if it is still wanted.")


# "approve_without_undo": run it even when its pre-image cannot be read (issue 15); a
# distinct choice, so a plain approval never silently gives up the undo.
Choice = Literal["approve", "deny", "approve_without_undo"]


@dataclass(frozen=True)
class Resume:
    """What a continuation run starts with: a decided confirmation, or a call to retry."""

    kind: Literal["approve", "deny", "retry", "undo"]  # "undo": a person asked for one
    call_id: str
    tool: str
    args: dict[str, Any]
    confirmation: Confirmation | None = None
    without_undo: bool = False  # approved "without undo": no pre-image needed
    # The model's arguments when the person edited them before approving (`args` are then
    # the edited ones, already validated against the tool's schema).
    proposed_args: dict[str, Any] | None = None


def parse_decision(value: Any) -> Choice:
    text = " ".join(value.strip().lower().replace("_", " ").split()) \
        if isinstance(value, str) else ""
    if text in ("approve", "approved", "confirm"):
        return "approve"
    if text in ("approve without undo", "without undo"):
        return "approve_without_undo"
    if text in ("deny", "denied", "reject"):
        return "deny"
    raise InputError("decision must be 'approve', 'approve_without_undo' or 'deny'.")


def _when(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds")


class ConfirmationService:
    def __init__(self, db: Database, settings: Settings, audit: AuditLog,
                 clock: Callable[[], float] = time.time) -> None:
        self.db = db
        self.settings = settings
        self.audit = audit
        self.clock = clock

    def create(self, *, identity: Identity, conversation_id: str, run_id: str, call_id: str,
               tool: str, args: dict[str, Any], risk: Risk, summary: str,
               resume: dict[str, Any]) -> Confirmation:
        now = self.clock()
        with self.db.session() as session:
            return repo.create_confirmation(
                session=session, conversation_id=conversation_id, user_id=identity.user_id,
                run_id=run_id, call_id=call_id, tool=tool, args=args, env_id=risk.env_id,
                tool_risk=risk.tool_risk, env_risk=risk.env_risk,
                permission_risk=risk.permission_risk, dangerous=risk.dangerous,
                countdown_s=self.settings.dangerous_countdown_s if risk.dangerous else 0,
                summary=summary, resume=resume, created_ts=now,
                expires_ts=now + self.settings.confirmation_ttl_s)

    def open_request(self, *, identity: Identity, conversation_id: str
                     ) -> dict[str, Any] | None:
        """The caller's newest live pending confirmation in the conversation, shaped like
        its `confirm_required` event, so a reloaded page can show the card again."""
        with self.db.session() as session:
            pending = list(repo.list_pending(session=session, conversation_id=conversation_id))
        now = self.clock()
        live = [row for row in pending
                if row.user_id == identity.user_id and row.expires_ts > now]
        if not live:
            return None
        row = live[-1]
        return {"type": "confirm_required", "run_id": row.run_id, "seq": 0, "ts": row.created_ts,
                "confirmation_id": row.id, "call_id": row.call_id, "tool": row.tool,
                "args": row.args, "env_id": row.env_id, "tool_risk": row.tool_risk,
                "env_risk": row.env_risk, "permission_risk": row.permission_risk,
                "dangerous": row.dangerous, "countdown_s": row.countdown_s,
                "summary": row.summary, "expires_at": row.expires_ts,
                "changes": (row.resume or {}).get("card_changes") or [],
                "impact": (row.resume or {}).get("card_impact") or []}

    def get(self, confirmation_id: str) -> Confirmation | None:
        with self.db.session() as session:
            return repo.get_confirmation(session=session, confirmation_id=confirmation_id)

    def decide(self, *, identity: Identity, conversation_id: str, confirmation_id: str,
               decision: Choice, args: dict[str, Any] | None = None) -> Resume:
        """Atomically take the decision, or raise `ConfirmationError` saying why not.
        `args`: the arguments as the person edited them (validated by the caller); the
        audit's `approved` row then keeps both the proposed and the approved ones."""
        wanted = confirmation_id.strip() if isinstance(confirmation_id, str) else ""
        row = self.get(wanted) if is_id(wanted) else None
        if row is None or row.conversation_id != conversation_id:
            raise ConfirmationError("No such confirmation in this conversation; nothing was "
                                    "executed.")
        if row.user_id != identity.user_id:
            raise ConfirmationError("Only the person who asked can approve or deny this call; "
                                    "nothing was executed.")
        without_undo = decision == "approve_without_undo"
        status = "denied" if decision == "deny" else "approved"
        now = self.clock()
        with self.db.session() as session:
            won = repo.decide(session=session, confirmation_id=row.id, status=status,
                              decided_by=identity.user_id, now=now)
        if not won:
            current = self.get(row.id) or row
            if current.status == PENDING:  # still pending, so it has expired
                self._close(current, "expired", identity, _EXPIRED_TEXT)
                raise ConfirmationError(f"This confirmation expired at "
                                        f"{_when(current.expires_ts)}; nothing was executed.")
            raise ConfirmationError(f"This confirmation was already {current.status}; "
                                    "nothing was executed now.")
        edited = args if args is not None and decision != "deny" and args != row.args \
            else None
        how = (" without undo" if without_undo else "") + (
            " with edited arguments" if edited is not None else "")
        self._audit(row, identity, status, outcome=f"{status}{how} by {identity.user_id}",
                    args={"proposed": row.args, "approved": edited} if edited else None)
        # an edit re-asked (it became riskier): the model's own arguments, kept on the row
        proposed = (row.args if edited is not None
                    else (row.resume or {}).get("proposed_args"))
        return Resume(kind="deny" if decision == "deny" else "approve", call_id=row.call_id,
                      tool=row.tool, args=dict(edited if edited is not None else row.args),
                      confirmation=self.get(row.id), without_undo=without_undo,
                      proposed_args=proposed)

    def close_open(self, *, identity: Identity, conversation_id: str) -> int:
        """Before a new turn: answer every still-pending call (expired or superseded)."""
        with self.db.session() as session:
            pending = list(repo.list_pending(session=session, conversation_id=conversation_id))
        now = self.clock()
        for row in pending:
            if row.expires_ts <= now:
                self._close(row, "expired", identity, _EXPIRED_TEXT)
            else:
                self._close(row, "superseded", identity, _SUPERSEDED_TEXT)
        return len(pending)

    def record_outcome(self, confirmation_id: str, outcome: str) -> None:
        with self.db.session() as session:
            repo.set_outcome(session=session, confirmation_id=confirmation_id, outcome=outcome)

    # internals ---------------------------------------------------------------------------

    def _close(self, row: Confirmation, status: str, identity: Identity, text: str) -> None:
        """Close a pending row and answer its call, in one transaction (or not at all)."""
        with self.db.session() as session:
            if not repo.expire(session=session, confirmation_id=row.id, status=status,
                               now=self.clock(), decided_by=identity.user_id):
                return  # someone else closed or decided it first
            messages_repo.append_message(
                session=session, conversation_id=row.conversation_id, run_id=row.run_id,
                role="tool", tool_call_id=row.call_id, tool_name=row.tool, content=text,
                meta={"status": "cancelled", "confirmation": status})
        self._audit(row, identity, status, outcome=text)

    def _audit(self, row: Confirmation, identity: Identity, action: str, *,
               outcome: str, args: dict[str, Any] | None = None) -> None:
        self.audit.record(identity=identity, action=action, tool=row.tool,
                          args=args if args is not None else row.args,
                          env_id=row.env_id, env_tier=row.env_risk, outcome=outcome,
                          confirmation_id=row.id, conversation_id=row.conversation_id,
                          run_id=row.run_id, call_id=row.call_id)

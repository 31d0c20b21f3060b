"""The audit log service: record decisions and executions; let admins read them (SPEC §5).

Recording never fails a run silently into inconsistency: it happens in the same place the
decision or execution is stored. Reading is admin-only. There is no way to edit or delete.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent.errors import AuditAccessError
from agent.identity import Identity
from storage import Database
from storage import audit as audit_repo
from storage import pre_images as pre_images_repo
from storage.audit_models import AuditEntry

if TYPE_CHECKING:
    from agent.pre_images import Snapshot

__all__ = ["AuditAccessError", "AuditLog", "public_entry"]

MAX_PAGE = 500


def public_entry(entry: AuditEntry) -> dict[str, Any]:
    """The API shape of one row (the table has no secret columns; this fixes the order)."""
    return {
        "id": entry.id, "at": entry.at.isoformat(timespec="seconds"),
        "user_id": entry.user_id, "role": entry.role, "action": entry.action,
        "tool": entry.tool, "args": entry.args or {}, "env_id": entry.env_id,
        "env_tier": entry.env_tier, "outcome": entry.outcome,
        "confirmation_id": entry.confirmation_id, "conversation_id": entry.conversation_id,
        "run_id": entry.run_id, "call_id": entry.call_id,
    }


class AuditLog:
    def __init__(self, db: Database) -> None:
        self.db = db

    def record(self, *, identity: Identity, action: str, tool: str,
               args: dict[str, Any] | None = None, env_id: str | None = None,
               env_tier: str | None = None, outcome: str = "",
               confirmation_id: str | None = None, conversation_id: str | None = None,
               run_id: str | None = None, call_id: str | None = None,
               pre_image: Snapshot | None = None) -> int:
        """Append one row and return its id. `pre_image` (on an `executing` row): the copy
        of what the write is about to change, stored in the same transaction, so a write
        that may have reached Superset always has it (issue 15)."""
        with self.db.session() as session:
            entry = audit_repo.append_entry(
                session=session, user_id=identity.user_id, role=identity.role, action=action,
                tool=tool, args=args, env_id=env_id, env_tier=env_tier, outcome=outcome,
                confirmation_id=confirmation_id, conversation_id=conversation_id,
                run_id=run_id, call_id=call_id)
            assert entry.id is not None
            if pre_image is not None:
                pre_images_repo.add_pre_image(
                    session=session, audit_id=entry.id, tool=tool, env_id=pre_image.env_id,
                    kind=pre_image.kind, object_id=pre_image.object_id,
                    object_uuid=pre_image.object_uuid, existed=pre_image.existed,
                    fields=pre_image.fields, bundle=pre_image.bundle)
            return entry.id

    def entries(self, identity: Identity, *, limit: int = 100, before_id: int | None = None,
                own_only: bool = False) -> list[dict[str, Any]]:
        """Newest first; admins only. `own_only` (the public demo, where every visitor can
        be an admin): only this person's entries, so nobody learns others' conversations.
        A change that kept its pre-image says so (`"undo": "available"`, or who undid it):
        the audit panel's Undo takes its id."""
        if identity.role != "admin":
            raise AuditAccessError("Only admins can read the audit log.")
        limit = max(1, min(int(limit), MAX_PAGE))
        with self.db.session() as session:
            rows = audit_repo.list_entries(session=session, limit=limit, before_id=before_id,
                                           user_id=identity.user_id if own_only else None)
            kept = pre_images_repo.undo_states(
                session=session, audit_ids=[row.id for row in rows if row.id is not None])
            return [public_entry(row) | ({"undo": kept[row.id]} if row.id in kept else {})
                    for row in rows]

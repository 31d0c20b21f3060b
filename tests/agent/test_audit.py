"""The audit log (SPEC §5, §6): what a row records, who may read it, and that nothing can
edit or delete it — not the app (no such function) and not a stray query (the database)."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

import storage.audit as audit_repo
from agent.audit import AuditAccessError
from runtime import Runtime
from storage import Database
from tests.agent.guardrails_support import confirm, pending_id, turn, user


def _append(db: Database, **fields: object) -> None:
    with db.session() as session:
        audit_repo.append_entry(session=session, user_id="demo-admin", role="admin",
                                action="executed", tool="delete_dashboard",
                                args={"dashboard_id": 1}, env_id="prod", env_tier="prod",
                                outcome="succeeded", confirmation_id="c1", **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize("statement", ["UPDATE audit_log SET outcome = 'edited'",
                                       "DELETE FROM audit_log"])
def test_the_database_refuses_edits_and_deletes(db: Database, statement: str) -> None:
    _append(db)
    with pytest.raises(DBAPIError, match="append-only"), db.session() as session:
        session.execute(text(statement))
    with db.session() as session:
        (row,) = audit_repo.list_entries(session=session)
    assert row.outcome == "succeeded"


def test_the_repository_offers_no_way_to_change_rows() -> None:
    public = set(audit_repo.__all__)
    assert public == {"append_entry", "in_flight", "list_entries",
                      "list_object_changes"}  # in_flight and list_object_changes read
    assert not [name for name in dir(audit_repo)
                if any(word in name.lower() for word in ("update", "delete", "edit", "remove"))]


async def test_offline_run_is_audited_and_readable_by_admins_only(runtime: Runtime) -> None:
    events = await turn(runtime, "delete dashboard 4", env="prod", page="dashboard",
                        object_id=4)
    await confirm(runtime, pending_id(events))
    admin, admin_token = user(runtime, "admin")

    entries = await runtime.agent.audit_entries(user_id=admin.user_id, user_jwt=admin_token)

    executed, executing, approved = entries
    assert [e["action"] for e in (approved, executing, executed)] == [
        "approved", "executing", "executed"]  # the middle one is written before the request
    for entry in entries:
        assert entry["user_id"] == "demo-admin" and entry["tool"] == "delete_dashboard"
        assert entry["args"] == {"dashboard_id": 4} and entry["env_id"] == "prod"
        assert entry["confirmation_id"] == pending_id(events) and entry["at"]
    assert executed["outcome"] == "succeeded"
    for role in ("viewer", "editor"):
        other, token = user(runtime, role)
        with pytest.raises(AuditAccessError):
            await runtime.agent.audit_entries(user_id=other.user_id, user_jwt=token)

"""Helpers for the undo tests (issue 15): run one approved write through the scripted model
and read the pre-image stored with its audit row."""

from __future__ import annotations

from typing import Any

from sqlmodel import select

from runtime import Runtime
from storage import pre_images as pre_images_repo
from storage.audit_models import AuditEntry
from storage.pre_images import PreImage
from tests.agent.guardrails_support import call, confirm, turn
from tests.fakes.openai_server import ScriptedOpenAIServer
from tests.fakes.runs import of_type

__all__ = ["all_pre_images", "approved_write", "ask_undo", "audit_rows", "audited_as_undo_of",
           "executing_id", "get_object", "pre_image", "propose"]


async def propose(rt: Runtime, server: ScriptedOpenAIServer, tool: str, *,
                  env: str = "ss-dev", role: str = "admin", conv_id: str = "conv-g",
                  **args: Any) -> dict[str, Any]:
    """The model asks for `tool(**args)`; return its approval card."""
    server.reply_tool_calls(call(tool, **args), text="")
    events = await turn(rt, f"please {tool}", env=env, role=role, conv_id=conv_id)
    (card,) = of_type(events, "confirm_required")
    return card


async def approved_write(rt: Runtime, server: ScriptedOpenAIServer, tool: str, *,
                         env: str = "ss-dev", decision: str = "approve", role: str = "admin",
                         conv_id: str = "conv-g", **args: Any) -> list[dict[str, Any]]:
    """Propose `tool(**args)` and decide it; the continuation's events."""
    card = await propose(rt, server, tool, env=env, role=role, conv_id=conv_id, **args)
    server.reply_text("Done.")
    return await confirm(rt, card["confirmation_id"], decision, role=role, conv_id=conv_id)


def audit_rows(rt: Runtime, tool: str | None = None) -> list[AuditEntry]:
    """Audit rows oldest first (optionally of one tool)."""
    with rt.db.session() as session:
        rows = list(session.exec(select(AuditEntry).order_by(AuditEntry.id)).all())
        session.expunge_all()
    return [row for row in rows if tool is None or row.tool == tool]


def pre_image(rt: Runtime, audit_id: int) -> PreImage | None:
    with rt.db.session() as session:
        row = pre_images_repo.get_for_audit(session=session, audit_id=audit_id)
        if row is not None:
            session.expunge(row)
        return row


def all_pre_images(rt: Runtime) -> list[PreImage]:
    with rt.db.session() as session:
        rows = list(session.exec(select(PreImage)).all())
        session.expunge_all()
        return rows


async def ask_undo(rt: Runtime, audit_id: int, *, overwrite_newer: bool = False,
                   role: str = "admin", conv_id: str = "conv-g") -> list[dict[str, Any]]:
    """A person asks to undo change `audit_id`: the run stops at the undo's approval card."""
    from tests.agent.guardrails_support import user
    from tests.fakes.runs import collect

    identity, token = user(rt, role)
    live = await rt.agent.undo_change(conv_id=conv_id, user_id=identity.user_id,
                                      user_jwt=token, audit_id=audit_id,
                                      overwrite_newer=overwrite_newer)
    return await collect(live)


async def get_object(rt: Runtime, env: str, kind: str, key: int | str) -> dict[str, Any] | None:
    """The object as Superset's REST API answers it (None: 404)."""
    from agent.errors import ToolNotFound

    try:
        return await rt.superset.get(env).get(kind, key)
    except ToolNotFound:
        return None


def executing_id(rt: Runtime, tool: str) -> int:
    """The `executing` audit row of the newest call of `tool`."""
    rows = [r for r in audit_rows(rt, tool) if r.action == "executing"]
    assert rows and rows[-1].id is not None
    return rows[-1].id


def audited_as_undo_of(rt: Runtime, audit_id: int) -> None:
    """The undo of change `audit_id` is audited as one (approved, executing, executed with
    the original's audit id in its arguments, succeeded), and the original's pre-image
    points at that undo's `executing` row, so it cannot be undone twice."""
    rows = [r for r in audit_rows(rt, "undo_change") if (r.args or {}).get("audit_id") == audit_id]
    assert [r.action for r in rows] == ["approved", "executing", "executed"]
    assert rows[-1].outcome == "succeeded"
    image = pre_image(rt, audit_id)
    assert image is not None and image.undone_by == rows[1].id

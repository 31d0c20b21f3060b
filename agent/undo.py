"""`undo_change` (issue 15): put back what an audited change altered, from its pre-image.

A person asks for it (the Undo button on a change's step or in the audit panel, or the
`/undo_change` API); the model is never offered it, so an undo always starts with a person.
It is then an ordinary write: re-checked by the guard, shown on an approval card (what will
be restored, before → after), executed once, audited with the original's audit id in its
arguments. Its role is the original's: undoing a delete needs the role deleting needs.

Restoring: an update gets its old field values back (PUT); a deleted or overwritten object
comes back by importing its saved export with overwrite (a deleted one keeps its uuid); a
dashboard a migration created in the target is deleted again. An undo keeps a pre-image
too, so it can be undone in turn (a redo), at the role and risk of the change it undid.
When the object changed since the change (its state differs from the fingerprint read right
after it), the undo refuses with the differences, unless the person confirmed overwriting
the newer change (`overwrite_newer`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field
from sqlmodel import Session, col, select

from agent.environments import tier_of
from agent.errors import ToolFailure, ToolInputError
from agent.guard import DENIED_BY_ROLE, Denial, Risk
from agent.identity import Identity, role_at_least
from agent.pre_images import state
from agent.superset.client import SupersetClient
from agent.tools.registry import ToolContext, ToolRegistry, ToolSpec
from agent.tools.superset_common import client_for
from storage import Database, off_loop
from storage import pre_images as repo
from storage.audit_models import AuditEntry
from storage.pre_images import PreImage

__all__ = ["UNDO_SPEC", "UNDO_TOOL", "UndoArgs", "UndoTarget", "changed_since", "check_undo",
           "load_target", "undo_risk"]

UNDO_TOOL = "undo_change"
# The fields each update restores, by the original tool's argument name -> Superset field.
_PUT_FIELDS = {
    "update_dashboard": {"title": "dashboard_title", "slug": "slug", "owners": "owners"},
    "set_dashboard_published": {"published": "published"},
    "update_dataset": {"description": "description", "cache_timeout": "cache_timeout",
                       "owners": "owners"},
}
_FINGERPRINT_NAMES = {"title": "title", "slug": "slug", "owners": "owners",
                      "published": "published", "description": "description",
                      "cache_timeout": "cache_timeout"}


class UndoArgs(BaseModel):
    audit_id: int = Field(ge=1, description="The audit id of the change to undo (the row "
                          "written when it was sent).")
    overwrite_newer: bool = Field(default=False, description="Restore even though the object "
                                  "changed after that change (overwrites the newer change).")


@dataclass(frozen=True)
class UndoTarget:
    """An audited change with its pre-image, and how it ended (None: no outcome recorded)."""

    audit_id: int
    tool: str
    user_id: str
    args: dict[str, Any]
    outcome: str | None
    pre: PreImage
    rated_as: str  # the tool whose role and risk apply: the change an undo undid, for one


def _load(session: Session, audit_id: int) -> UndoTarget | None:
    entry = session.get(AuditEntry, audit_id)
    if entry is None or entry.action != "executing":
        return None
    pre = repo.get_for_audit(session=session, audit_id=audit_id)
    if pre is None:
        return None
    done = session.exec(select(AuditEntry).where(
        AuditEntry.action == "executed", AuditEntry.call_id == entry.call_id,
        AuditEntry.run_id == entry.run_id, col(AuditEntry.id) > audit_id)).first()
    session.expunge(pre)
    rated_as = entry.tool
    if entry.tool == UNDO_TOOL:  # undoing an undo: as risky as the change it undid
        undone = session.get(AuditEntry, int((entry.args or {}).get("audit_id") or 0))
        rated_as = undone.tool if undone is not None else entry.tool
    return UndoTarget(audit_id=audit_id, tool=entry.tool, user_id=entry.user_id,
                      args=dict(entry.args or {}), outcome=done.outcome if done else None,
                      pre=pre, rated_as=rated_as)


def load_target(db: Database, audit_id: int) -> UndoTarget | None:
    return db.run(lambda session: _load(session, audit_id))


def check_undo(target: UndoTarget | None, audit_id: int, identity: Identity,
               registry: ToolRegistry, *, is_demo: bool) -> Denial | str | None:
    """Why this person may not undo this change (a `Denial`), why it cannot be undone (a
    sentence), or None."""
    if target is None:
        return (f"There is no change #{audit_id} with a saved copy to restore: only writes "
                "made through this assistant, with their pre-image, can be undone.")
    if target.user_id != identity.user_id and (identity.role != "admin" or is_demo):
        return Denial(f"Only the person who made change #{audit_id} (or an admin) can undo "
                      "it.", None, DENIED_BY_ROLE)
    original = registry.get(target.rated_as)
    needed = original.required_role if original else "admin"
    if not role_at_least(identity.role, needed):
        return Denial(f"Your role ({identity.role}) does not allow undoing "
                      f"{target.rated_as}; it needs the {needed} role, like the change "
                      "itself.", needed,
                      DENIED_BY_ROLE)
    if target.outcome and not target.outcome.startswith(("succeeded", "status unknown")):
        return (f"Change #{audit_id} did not happen ({target.outcome}), so there is nothing "
                "to undo.")
    if target.pre.undone_by is not None:
        return f"Change #{audit_id} was already undone (audit #{target.pre.undone_by})."
    return None


def undo_risk(target: UndoTarget, identity: Identity, registry: ToolRegistry,
              tiers: dict[str, str | None]) -> Risk:
    """An undo is as risky as the change it reverses, in the environment it happened in."""
    env = target.pre.env_id
    tier = tier_of(env, tiers)
    original = registry.get(target.rated_as)
    tool_risk = "dangerous" if original is not None and original.risk == "dangerous" \
        else "write"
    return Risk(tool_risk=tool_risk, env_id=env, env_risk=tier, permission_risk="allowed",
                dangerous=tool_risk == "dangerous" or tier == "prod")


def changed_since(after: dict[str, Any] | None, now: dict[str, Any] | None) -> list[str]:
    """How the object differs from the fingerprint read right after the change ([]: it has
    not changed since)."""
    if after is None:
        return ["its state right after the change was not recorded"]
    if after.get("deleted"):
        return [] if now is None else ["it exists again (re-created or restored since)"]
    if now is None:
        return ["it was deleted since"]
    return [f"{key} is now {now.get(key)!r} (was {value!r} right after the change)"
            for key, value in after.items() if key != "id" and now.get(key) != value]


def _client(ctx: ToolContext, pre: PreImage) -> SupersetClient:
    return client_for(ctx, pre.env_id)


async def current(ctx: ToolContext, target: UndoTarget) -> dict[str, Any] | None:
    pre = target.pre
    return await state(pre.kind, _client(ctx, pre),
                       pre.object_id, pre.object_uuid)


def restores(target: UndoTarget, now: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Each field the undo puts back: its value now and after the undo (for the card)."""
    pre, fields = target.pre, target.pre.fields or {}
    if not pre.existed:
        return [{"field": "exists", "before": now is not None, "after": False}]
    if now is None:
        return [{"field": "exists", "before": False, "after": True}]
    names = _PUT_FIELDS.get(target.tool) or {k: k for k in ("title", "published")
                                             if k in fields}
    return [{"field": key, "before": now.get(key), "after": fields.get(key)}
            for key in names if key in _FINGERPRINT_NAMES and now.get(key) != fields.get(key)]


async def _restore(ctx: ToolContext, target: UndoTarget, now: dict[str, Any] | None) -> None:
    pre, client = target.pre, _client(ctx, target.pre)
    what = f"{pre.kind} {pre.object_uuid or pre.object_id}"
    if not pre.existed:  # a migration created it: remove it again
        if now is not None:
            await client.delete(pre.kind, int(now["id"]), what=what)
        return
    put = _PUT_FIELDS.get(target.tool)
    if put is not None and now is not None:  # an update: the old values
        payload = {field: (pre.fields or {}).get(key) for key, field in put.items()
                   if key in target.args}
        if payload:
            await client.put(pre.kind, int(now["id"]), payload, what=what)
            return
    if pre.bundle is None:
        raise ToolFailure(f"Change #{target.audit_id} has no saved export to restore.")
    await client.import_bundle(pre.kind, pre.bundle, overwrite=True,
                               what=f"import of the saved copy of {what}")


def catalog() -> ToolRegistry:
    """Every tool of the app: the role an undo needs is its original's, wherever it is
    asked for (the page's offered tools may not include the original)."""
    from agent.tools.catalog import all_tools

    return ToolRegistry(all_tools())


def _read_target(ctx: ToolContext, audit_id: int) -> UndoTarget | None:
    if ctx.services.db is None:
        raise ToolFailure("Undo is not available: no database is configured.")
    return load_target(ctx.services.db, audit_id)


async def _undo(args: UndoArgs, ctx: ToolContext) -> dict[str, Any]:
    target = await off_loop(_read_target, ctx, args.audit_id)
    problem = check_undo(target, args.audit_id, ctx.identity, catalog(),
                         is_demo=ctx.settings.is_demo)
    if isinstance(problem, Denial):
        raise ToolInputError(problem.reason)
    if problem is not None or target is None:
        raise ToolInputError(str(problem))
    now = await current(ctx, target)
    newer = changed_since(target.pre.after, now)
    if newer and not args.overwrite_newer:
        raise ToolInputError(
            f"Not undone: the {target.pre.kind} changed after change #{args.audit_id} ("
            + "; ".join(newer) + "). Nothing was restored. To restore it anyway, the person "
            "must confirm overwriting the newer change (undo again with overwrite_newer).")
    card = restores(target, now)
    await _restore(ctx, target, now)
    after = await current(ctx, target)
    return {"undone": args.audit_id, "tool": target.tool, "env": target.pre.env_id,
            "kind": target.pre.kind, "uuid": target.pre.object_uuid,
            "id": after["id"] if after else None, "exists": after is not None,
            "restored": card, "overwrote_newer_change": bool(newer)}


UNDO_SPEC = ToolSpec(
    name=UNDO_TOOL, description="Undo one audited change from its saved copy (asked for by "
    "a person, never offered to the model).", args_schema=UndoArgs, risk="write",
    groups=frozenset({"always"}), run=_undo, min_role="editor")


def _name(target: UndoTarget) -> str:
    pre = target.pre
    fields = pre.fields or {}
    label = fields.get("title") or fields.get("table_name")
    named = f" '{' '.join(str(label).split())[:80]}'" if label else ""
    where = f" in {pre.env_id}" if pre.env_id else ""
    return f"{pre.kind}{named}{where}"


async def describe_undo(args: dict[str, Any], ctx: ToolContext
                        ) -> tuple[str, list[dict[str, Any]]]:
    """The approval card of an undo: what will be restored, before → after (the values now
    read when the card is made), and a warning when the object changed since."""
    audit_id = int(args.get("audit_id") or 0)
    target = await off_loop(_read_target, ctx, audit_id)
    if target is None:
        return f"Undo change #{audit_id} (no saved copy: it will be refused)", []
    try:
        now = await current(ctx, target)
    except ToolFailure:
        return (f"Undo change #{audit_id} ({target.tool}) on the {_name(target)}: its current "
                "state could not be read"), []
    pre = target.pre
    if not pre.existed:
        how = "brought back" if target.tool == UNDO_TOOL else f"({target.tool}) created"
        what = f"Delete the {_name(target)} again, which change #{audit_id} {how}"
    elif now is None:
        what = (f"Restore the deleted {_name(target)} from its saved copy (same uuid "
                f"{pre.object_uuid})")
    elif target.tool in _PUT_FIELDS:
        what = f"Put back the {_name(target)} as it was before change #{audit_id}"
    else:
        what = (f"Restore the {_name(target)} from its copy saved before change #{audit_id} "
                f"({target.tool}; its charts and datasets in the copy too)")
    summary = f"Undo change #{audit_id}: {what}"
    newer = changed_since(pre.after, now)
    if newer:
        summary += (" — it changed since (" + "; ".join(newer) + "): " + (
            "approving overwrites that newer change" if args.get("overwrite_newer")
            else "the undo will refuse unless overwriting the newer change is confirmed"))
    return summary, restores(target, now)

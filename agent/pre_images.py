"""Pre-images (issue 15): what an approved write is about to change, read just before it runs.

For a dashboard (update, publish, delete, or a migration that overwrites it in the target)
that is its export bundle plus its editable fields; for a dataset (update, column refresh,
delete) its editable fields plus its export. The copy is stored with the write's `executing`
audit row (`agent.audit`), so every change that may have reached Superset can be undone
(`agent.undo`). A copy that cannot be read stops the write (`CaptureFailed`): no pre-image,
no write, unless the person approved "without undo".

`state` reads an object's fingerprint (the same fields, plus `changed_on`): stored right
after the write succeeded and compared by the undo, it tells whether someone changed the
object since.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent.errors import SupersetRefused, ToolFailure, ToolNotFound
from agent.superset.bundle import read_bundle
from agent.superset.client import SupersetClient
from agent.tools.registry import ToolContext
from agent.tools.superset_common import client_for
from storage import off_loop

__all__ = ["CAPTURED", "CaptureFailed", "Snapshot", "capture", "kind_of", "locate", "state"]

_DASHBOARD_TOOLS = ("update_dashboard", "set_dashboard_published", "delete_dashboard")
_DATASET_TOOLS = ("update_dataset", "refresh_dataset_columns", "delete_dataset")
CAPTURED = frozenset({*_DASHBOARD_TOOLS, *_DATASET_TOOLS, "migrate_dashboard", "undo_change"})


class CaptureFailed(ToolFailure):
    """The pre-image could not be read, so the write must not run."""


@dataclass(frozen=True)
class Snapshot:
    """One object as it was before a write. `existed` False: the write creates it (a
    migration into a target without it), so undoing it means deleting it again."""

    kind: str
    env_id: str | None
    object_id: int | None
    object_uuid: str | None
    existed: bool
    fields: dict[str, Any]
    bundle: bytes | None


def kind_of(tool: str) -> str:
    return "dataset" if tool in _DATASET_TOOLS else "dashboard"


def _owner_ids(owners: Any) -> list[int]:
    return sorted(int(o["id"]) for o in owners or [] if isinstance(o, dict) and "id" in o)


def fields_of(kind: str, record: dict[str, Any]) -> dict[str, Any]:
    """The editable fields an undo restores, plus `changed_on` (for "changed since")."""
    if kind == "dashboard":
        return {"title": record.get("dashboard_title"), "slug": record.get("slug"),
                "published": record.get("published"), "owners": _owner_ids(record.get("owners")),
                "changed_on": record.get("changed_on")}
    return {"description": record.get("description"),
            "cache_timeout": record.get("cache_timeout"),
            "owners": _owner_ids(record.get("owners")), "table_name": record.get("table_name"),
            "columns": sorted(str(c.get("column_name")) for c in record.get("columns") or []
                              if isinstance(c, dict)),
            "changed_on": record.get("changed_on")}


async def _object(client: SupersetClient, kind: str, pk: int) -> tuple[dict[str, Any], bytes]:
    """(record, export bundle) of one object; the export first, as it is what undo needs."""
    bundle = await client.export(kind, [pk], what=f"export of {kind} {pk} (its copy for undo)")
    record = await client.get(kind, pk, what=f"{kind} {pk}")
    return record, bundle


async def _capture_object(kind: str, pk: int, env: str | None,
                          ctx: ToolContext) -> Snapshot:
    record, bundle = await _object(client_for(ctx, env), kind, pk)
    uuid = record.get("uuid")
    if not uuid:
        found = read_bundle(bundle).of_kind(kind)
        uuid = found[0].uuid if found else None
    return Snapshot(kind=kind, env_id=env, object_id=pk, object_uuid=str(uuid) if uuid else None,
                    existed=True, fields=fields_of(kind, record), bundle=bundle)


async def _capture_migration(args: dict[str, Any], ctx: ToolContext) -> Snapshot:
    """The target's copy of the dashboard the migration will overwrite (by uuid), or a
    note that it is absent there (the migration creates it)."""
    pk = int(args["dashboard_id"])
    source = client_for(ctx, args.get("source_env"))
    uuid = (await source.get("dashboard", pk, what=f"dashboard {pk}")).get("uuid")
    if not uuid:
        bundle = read_bundle(await source.export("dashboard", [pk],
                                                 what=f"export of dashboard {pk}"))
        uuid = bundle.of_kind("dashboard")[0].uuid if bundle.of_kind("dashboard") else None
    target_env = args.get("target_env")
    target = client_for(ctx, target_env)
    twin = await locate("dashboard", target, None, str(uuid) if uuid else None)
    if twin is None:
        return Snapshot(kind="dashboard", env_id=target_env, object_id=None,
                        object_uuid=str(uuid) if uuid else None, existed=False, fields={},
                        bundle=None)
    return await _capture_object("dashboard", twin, target_env, ctx)


async def _capture_undo(args: dict[str, Any], ctx: ToolContext) -> Snapshot:
    """Before an undo: the object it restores, as it is now (absent when the undo brings a
    deleted one back), so the undo can be undone in turn."""
    from agent.undo import load_target  # the undo module imports this one

    if ctx.services.db is None:
        raise ToolFailure("no database is configured")
    target = await off_loop(load_target, ctx.services.db, int(args["audit_id"]))
    if target is None:
        raise ToolFailure(f"there is no change #{args['audit_id']} with a saved copy")
    pre = target.pre
    found = await locate(pre.kind, client_for(ctx, pre.env_id),
                         pre.object_id, pre.object_uuid)
    if found is None:
        named = {k: v for k, v in (pre.fields or {}).items() if k in ("title", "table_name")}
        return Snapshot(kind=pre.kind, env_id=pre.env_id, object_id=None,
                        object_uuid=pre.object_uuid, existed=False, fields=named, bundle=None)
    return await _capture_object(pre.kind, found, pre.env_id, ctx)


async def capture(tool: str, args: dict[str, Any], env: str | None,
                  ctx: ToolContext) -> Snapshot:
    """The pre-image of one call of a `CAPTURED` tool; `CaptureFailed` saying why not, or
    `SupersetRefused` when Superset refused the person's own token the read (with
    passthrough identity the write would be theirs too: it is a permission denial, not a
    missing copy)."""
    try:
        if tool == "undo_change":
            return await _capture_undo(args, ctx)
        if tool == "migrate_dashboard":
            return await _capture_migration(args, ctx)
        kind = kind_of(tool)
        return await _capture_object(kind, int(args[f"{kind}_id"]), env, ctx)
    except SupersetRefused:  # the person may not read it: Superset's verdict, said as such
        raise
    except (ToolFailure, KeyError, ValueError) as exc:
        raise CaptureFailed(f"Not executed: the copy of what {tool} would change could not be "
                            f"read, so the change could not be undone later ({exc}). Nothing "
                            "was changed. It can run only if the person approves it "
                            "'without undo'.") from exc


async def locate(kind: str, client: SupersetClient, pk: int | None,
                 uuid: str | None) -> int | None:
    """The object's id in the environment now (by uuid when known), None when it is gone."""
    if pk is not None:
        try:
            record = await client.get(kind, pk, what=f"{kind} {pk}")
        except ToolNotFound:
            record = {}
        if record and (uuid is None or str(record.get("uuid") or uuid) == uuid):
            return pk
    if uuid is None:
        return None
    for row in await client.list_all(kind):
        if str(row.get("uuid")) == uuid:
            return int(row["id"])
    return None


async def state(kind: str, client: SupersetClient, pk: int | None,
                uuid: str | None) -> dict[str, Any] | None:
    """The object's fingerprint now, None when it does not exist."""
    found = await locate(kind, client, pk, uuid)
    if found is None:
        return None
    return {"id": found, **fields_of(kind, await client.get(kind, found, what=f"{kind} {found}"))}

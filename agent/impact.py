"""The blast radius of a delete or a migration, for its approval card (issue 15, item 4).

What else the change touches, by kind: deleting a dashboard leaves its charts and datasets
(listed, so the person sees what stays); deleting a dataset breaks the charts and the
dashboards that use it; a migration creates, overwrites or reuses dashboards, charts,
datasets and databases in the target (its import plan). Read from Superset when the card is
made, best effort and bounded like the card's other lookups: a failed lookup leaves the
rows out, never blocks the card. Names are data: the card escapes them.
"""

from __future__ import annotations

import asyncio
from typing import Any

from agent.errors import ToolFailure
from agent.superset.bundle import read_bundle
from agent.superset.compare import import_plan, target_index
from agent.tools.datasets import related_objects
from agent.tools.registry import ToolContext
from agent.tools.superset_common import client_for

__all__ = ["blast_radius"]

_LOOKUP_TIMEOUT_S = 8.0
_NAMES = 5


def _row(kind: str, items: list[Any], effect: str, count: int | None = None
         ) -> dict[str, Any]:
    names = [str(item) for item in items if item not in (None, "")][:_NAMES]
    return {"kind": kind, "count": len(items) if count is None else count, "effect": effect,
            "names": names}


async def _dashboard_delete(args: dict[str, Any], env: str | None,
                            ctx: ToolContext) -> list[dict[str, Any]]:
    client = client_for(ctx, env)
    pk = int(args["dashboard_id"])
    record = await client.get("dashboard", pk, what=f"dashboard {pk}")
    datasets = (await client.get_json(f"dashboard/{pk}/datasets",
                                      what=f"datasets of dashboard {pk}")).get("result") or []
    return [_row("dashboards", [record.get("dashboard_title")], "deleted"),
            _row("charts", list(record.get("charts") or []), "kept, no longer on it"),
            _row("datasets", [d.get("table_name") for d in datasets], "kept")]


async def _dataset_delete(args: dict[str, Any], env: str | None,
                          ctx: ToolContext) -> list[dict[str, Any]]:
    pk = int(args["dataset_id"])
    client = client_for(ctx, env)
    record = await client.get("dataset", pk, what=f"dataset {pk}")
    usage = await related_objects(client, pk)
    charts, boards = usage["charts"], usage["dashboards"]
    return [_row("datasets", [record.get("table_name")], "deleted"),
            _row("charts", [c.get("name") for c in charts["items"]], "stop working",
                 charts["count"]),
            _row("dashboards", [d.get("title") for d in boards["items"]],
                 "show broken charts", boards["count"])]


async def _migration(args: dict[str, Any], ctx: ToolContext) -> list[dict[str, Any]]:
    pk = int(args["dashboard_id"])
    source, target = client_for(ctx, args.get("source_env")), client_for(
        ctx, args.get("target_env"))
    bundle = read_bundle(await source.export("dashboard", [pk],
                                             what=f"export of dashboard {pk}"))
    plan = import_plan(bundle, await target_index(target))
    where = args.get("target_env")
    rows = []
    for key, effect in (("overwrite", f"overwritten in {where}"),
                        ("create", f"created in {where}"),
                        ("reuse", f"kept as they are in {where}")):
        for kind in ("dashboard", "chart", "dataset", "database"):
            items = [ref.get("name") for ref in plan[key] if ref.get("kind") == kind]
            if items:
                rows.append(_row(f"{kind}s", items, effect))
    return rows


async def blast_radius(tool: str, args: dict[str, Any], env: str | None,
                       ctx: ToolContext) -> list[dict[str, Any]]:
    """Rows `{kind, count, effect, names}` for a delete or a migration ([] otherwise, or
    when the lookup failed)."""
    if tool == "delete_dashboard":
        work = _dashboard_delete(args, env, ctx)
    elif tool == "delete_dataset":
        work = _dataset_delete(args, env, ctx)
    elif tool == "migrate_dashboard":
        work = _migration(args, ctx)
    else:
        return []
    try:
        return await asyncio.wait_for(work, timeout=_LOOKUP_TIMEOUT_S)
    except (ToolFailure, TimeoutError, KeyError, ValueError):
        return []

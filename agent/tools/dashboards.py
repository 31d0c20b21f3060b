"""Dashboard tools (SPEC §4): list, inspect, export, update, publish and delete dashboards."""

from __future__ import annotations

from typing import Any

from agent.errors import ToolInputError
from agent.superset.bundle import read_bundle
from agent.superset.rison import Filter
from agent.tools.registry import ToolContext, ToolSpec
from agent.tools.superset_args import (
    DashboardIdArgs,
    DashboardListArgs,
    DeleteDashboardArgs,
    SetPublishedArgs,
    UpdateDashboardArgs,
)
from agent.tools.superset_common import (
    client_for,
    compact,
    env_of,
    list_page,
    people,
    require_changes,
)

__all__ = ["DASHBOARD_TOOLS", "dashboard_summary"]

_LIST_FIELDS = {"id": "id", "dashboard_title": "title", "slug": "slug",
                "published": "published", "changed_on_delta_humanized": "changed",
                "url": "url"}
_GET_FIELDS = {"id": "id", "dashboard_title": "title", "slug": "slug", "uuid": "uuid",
               "published": "published", "url": "url", "certified_by": "certified_by",
               "changed_on_delta_humanized": "changed", "changed_by_name": "changed_by"}


def dashboard_summary(record: dict[str, Any]) -> dict[str, Any]:
    """The facts of a dashboard a person asks about; also used in confirmation summaries."""
    out = compact(record, _GET_FIELDS)
    out["owners"] = people(record.get("owners"))
    if record.get("charts") is not None:
        out["charts"] = list(record["charts"])
        out["chart_count"] = len(record["charts"])
    tags = [t.get("name") for t in record.get("tags") or [] if isinstance(t, dict)]
    if tags:
        out["tags"] = tags
    return out


async def _list_dashboards(args: DashboardListArgs, ctx: ToolContext) -> dict[str, Any]:
    extra = [] if args.published is None else [Filter("published", "eq", args.published)]
    page = await list_page(ctx, args, "dashboard", "dashboard_title", extra=extra)
    return page.result("dashboards", [
        compact(row, _LIST_FIELDS) | {"owners": people(row.get("owners"))}
        for row in page.rows])


async def _get_dashboard(args: DashboardIdArgs, ctx: ToolContext) -> dict[str, Any]:
    env = env_of(args, ctx)
    record = await client_for(ctx, env).get("dashboard", args.dashboard_id,
                                            what=f"dashboard {args.dashboard_id}")
    return {"env": env, **dashboard_summary(record)}


async def _get_dashboard_charts(args: DashboardIdArgs, ctx: ToolContext) -> dict[str, Any]:
    env = env_of(args, ctx)
    body = await client_for(ctx, env).get_json(
        f"dashboard/{args.dashboard_id}/charts", what=f"charts of dashboard {args.dashboard_id}")
    charts = []
    for chart in body.get("result") or []:
        form = chart.get("form_data") or {}
        row = compact(chart, {"id": "id", "slice_name": "name", "description": "description"})
        row |= compact(form, {"viz_type": "viz_type", "datasource": "datasource"})
        charts.append(row)
    return {"env": env, "dashboard_id": args.dashboard_id, "count": len(charts),
            "charts": charts}


async def _get_dashboard_datasets(args: DashboardIdArgs, ctx: ToolContext) -> dict[str, Any]:
    env = env_of(args, ctx)
    body = await client_for(ctx, env).get_json(
        f"dashboard/{args.dashboard_id}/datasets",
        what=f"datasets of dashboard {args.dashboard_id}")
    datasets = []
    for ds in body.get("result") or []:
        row = compact(ds, {"id": "id", "table_name": "table_name", "schema": "schema",
                           "name": "name", "kind": "kind"})
        database = ds.get("database") or {}
        if database.get("database_name") or database.get("name"):
            row["database"] = database.get("database_name") or database.get("name")
        # Real Superset prunes `columns` here to the ones the dashboard's charts use;
        # `column_names` lists them all, which is what "how many columns" means.
        row["columns"] = len(ds.get("column_names") or ds.get("columns") or [])
        row["metrics"] = len(ds.get("metrics") or [])
        datasets.append(row)
    return {"env": env, "dashboard_id": args.dashboard_id, "count": len(datasets),
            "datasets": datasets}


async def _export_dashboard(args: DashboardIdArgs, ctx: ToolContext) -> dict[str, Any]:
    env = env_of(args, ctx)
    data = await client_for(ctx, env).export("dashboard", [args.dashboard_id],
                                             what=f"export of dashboard {args.dashboard_id}")
    bundle = read_bundle(data)
    exports = ctx.services.exports
    kept = exports.keep(owner_id=ctx.identity.user_id, env=str(env),
                        dashboard_id=args.dashboard_id, data=data) if exports else None
    # The page offers the kept file for download (web/exports_ui.py); the model only
    # learns that it can say so, never a link to invent.
    offered = {"export_id": kept, "download": "offered on the page for 15 minutes"} \
        if kept else {}  # first: still readable in a result cut for size
    return {**offered, "env": env, "dashboard_id": args.dashboard_id, "bytes": len(data),
            **bundle.summary()}


async def _update_dashboard(args: UpdateDashboardArgs, ctx: ToolContext) -> dict[str, Any]:
    env = env_of(args, ctx)
    what = f"dashboard {args.dashboard_id}"
    if args.description is not None:
        # Superset's PUT /dashboard/{pk} has no description field (400 "Unknown field"); say
        # so before anything is sent rather than half-applying the other fields.
        raise ToolInputError("Superset's dashboard API cannot change a dashboard's "
                             "description. Change the title, slug or owners instead; nothing "
                             "was changed.")
    payload = require_changes({
        key: value for key, value in {
            "dashboard_title": args.title, "slug": args.slug, "owners": args.owners,
        }.items() if value is not None}, what)
    client = client_for(ctx, env)
    body = await client.put("dashboard", args.dashboard_id, payload, what=what)
    return {"env": env, "updated": args.dashboard_id, "changed": sorted(payload),
            "result": compact(body.get("result") or {}, {
                "dashboard_title": "title", "slug": "slug", "owners": "owners"})}


async def _set_published(args: SetPublishedArgs, ctx: ToolContext) -> dict[str, Any]:
    env = env_of(args, ctx)
    await client_for(ctx, env).put("dashboard", args.dashboard_id,
                                   {"published": args.published},
                                   what=f"dashboard {args.dashboard_id}")
    return {"env": env, "dashboard_id": args.dashboard_id, "published": args.published}


async def _delete_dashboard(args: DeleteDashboardArgs, ctx: ToolContext) -> dict[str, Any]:
    env = env_of(args, ctx)
    client = client_for(ctx, env)
    what = f"dashboard {args.dashboard_id}"
    record = await client.get("dashboard", args.dashboard_id, what=what)
    await client.delete("dashboard", args.dashboard_id, what=what)
    return {"env": env, "deleted": args.dashboard_id,
            "title": record.get("dashboard_title"),
            "charts_kept": len(record.get("charts") or []),
            "note": "Charts and datasets of the dashboard were not deleted."}


def _spec(name: str, description: str, args_schema: Any, risk: str, run: Any) -> ToolSpec:
    return ToolSpec(name=name, description=description, args_schema=args_schema,
                    risk=risk, groups=frozenset({"dashboard", "none"}),  # type: ignore[arg-type]
                    run=run, uses_env=True)


DASHBOARD_TOOLS = [
    _spec("list_dashboards", "List dashboards in a Superset environment (title, slug, "
          "published, owners), optionally filtered by a title search and by published or "
          "draft; paged from 0.", DashboardListArgs, "read", _list_dashboards),
    _spec("get_dashboard", "Get one dashboard's details: title, slug, uuid, owners, "
          "published state, and the names of its charts.", DashboardIdArgs, "read",
          _get_dashboard),
    _spec("get_dashboard_charts", "List the charts on a dashboard (id, name, "
          "visualization type, dataset).", DashboardIdArgs, "read", _get_dashboard_charts),
    _spec("get_dashboard_datasets", "List the datasets a dashboard's charts use (table, "
          "schema, database, column and metric counts).", DashboardIdArgs, "read",
          _get_dashboard_datasets),
    _spec("export_dashboard", "Export a dashboard as a Superset bundle and summarise it: "
          "files, and the dashboards, charts, datasets and databases in it by uuid.",
          DashboardIdArgs, "read", _export_dashboard),
    _spec("update_dashboard", "Change a dashboard's title, slug or owners (user ids); "
          "Superset's API cannot change its description. Needs a person's approval.",
          UpdateDashboardArgs, "write", _update_dashboard),
    _spec("set_dashboard_published", "Publish or unpublish a dashboard. Needs a person's "
          "approval.", SetPublishedArgs, "write", _set_published),
    _spec("delete_dashboard", "Delete a dashboard (its charts and datasets stay). "
          "Dangerous: needs a person's approval.", DeleteDashboardArgs, "dangerous",
          _delete_dashboard),
]

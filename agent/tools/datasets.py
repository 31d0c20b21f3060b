"""Dataset tools (SPEC §4): list, inspect, usage, preview, refresh, update and delete."""

from __future__ import annotations

from typing import Any

from agent.errors import ToolFailure
from agent.superset.client import SupersetClient
from agent.tools.registry import ToolContext, ToolSpec
from agent.tools.superset_args import (
    DatasetIdArgs,
    DeleteDatasetArgs,
    ListArgs,
    PreviewDatasetArgs,
    UpdateDatasetArgs,
)
from agent.tools.superset_common import (
    client_for,
    compact,
    env_of,
    list_page,
    people,
    require_changes,
)

__all__ = ["DATASET_TOOLS", "related_objects"]

_LIST_FIELDS = {"id": "id", "table_name": "table_name", "schema": "schema", "kind": "kind",
                "description": "description", "changed_on_delta_humanized": "changed"}
_GET_FIELDS = {"id": "id", "table_name": "table_name", "schema": "schema", "uuid": "uuid",
               "kind": "kind", "description": "description", "sql": "sql",
               "cache_timeout": "cache_timeout", "main_dttm_col": "time_column",
               "changed_on_humanized": "changed"}
_MAX_CELL = 200


def _database_name(record: dict[str, Any]) -> str | None:
    database = record.get("database") or {}
    return database.get("database_name") or database.get("name")


async def related_objects(client: SupersetClient, dataset_id: int) -> dict[str, Any]:
    """Charts and dashboards using a dataset. Superset deletes a dataset even when charts use
    it (they are orphaned), so a delete confirmation must show this first."""
    body = await client.get_json(f"dataset/{dataset_id}/related_objects",
                                 what=f"dataset {dataset_id} usage")
    charts = body.get("charts") or {}
    dashboards = body.get("dashboards") or {}
    return {
        "charts": {"count": charts.get("count", len(charts.get("result") or [])),
                   "items": [compact(c, {"id": "id", "slice_name": "name", "viz_type": "viz_type"})
                             for c in charts.get("result") or []]},
        "dashboards": {"count": dashboards.get("count", len(dashboards.get("result") or [])),
                       "items": [compact(d, {"id": "id", "title": "title", "slug": "slug"})
                                 for d in dashboards.get("result") or []]},
    }


async def _list_datasets(args: ListArgs, ctx: ToolContext) -> dict[str, Any]:
    page = await list_page(ctx, args, "dataset", "table_name")
    rows = []
    for row in page.rows:
        item = compact(row, _LIST_FIELDS)
        database = _database_name(row)
        if database:
            item["database"] = database
        rows.append(item)
    return page.result("datasets", rows)


async def _get_dataset(args: DatasetIdArgs, ctx: ToolContext) -> dict[str, Any]:
    env = env_of(args, ctx)
    record = await client_for(ctx, env).get("dataset", args.dataset_id,
                                            what=f"dataset {args.dataset_id}")
    out = {"env": env, **compact(record, _GET_FIELDS), "database": _database_name(record),
           "owners": people(record.get("owners"))}
    out["columns"] = [compact(c, {"column_name": "name", "type": "type", "is_dttm": "is_dttm"})
                      for c in record.get("columns") or []]
    out["metrics"] = [compact(m, {"metric_name": "name", "expression": "expression"})
                      for m in record.get("metrics") or []]
    return out


async def _get_dataset_usage(args: DatasetIdArgs, ctx: ToolContext) -> dict[str, Any]:
    env = env_of(args, ctx)
    usage = await related_objects(client_for(ctx, env), args.dataset_id)
    return {"env": env, "dataset_id": args.dataset_id, **usage}


def _cell(value: Any) -> Any:
    if isinstance(value, str) and len(value) > _MAX_CELL:
        return value[:_MAX_CELL] + "…"
    return value


async def _preview_dataset(args: PreviewDatasetArgs, ctx: ToolContext) -> dict[str, Any]:
    env = env_of(args, ctx)
    client = client_for(ctx, env)
    record = await client.get("dataset", args.dataset_id, what=f"dataset {args.dataset_id}")
    columns = [c["column_name"] for c in record.get("columns") or [] if c.get("column_name")]
    if not columns:
        raise ToolFailure(f"Dataset {args.dataset_id} has no columns to preview; "
                          "refresh its columns first.")
    # An ad-hoc raw-records query: `GET /chart/{pk}/data/` would need a saved query_context.
    body = await client.post_json("chart/data", {
        "datasource": {"id": args.dataset_id, "type": "table"},
        "queries": [{"columns": columns, "metrics": [], "row_limit": args.limit,
                     "orderby": [], "filters": []}],
        "result_format": "json", "result_type": "full", "force": False,
    }, what=f"preview of dataset {args.dataset_id}")
    results = body.get("result") or [{}]
    first = results[0] if results else {}
    if first.get("error"):
        raise ToolFailure(f"Superset ({env}) could not query dataset {args.dataset_id}: "
                          f"{first['error']}")
    rows = [{k: _cell(v) for k, v in row.items()} for row in (first.get("data") or [])]
    return {"env": env, "dataset_id": args.dataset_id,
            "table_name": record.get("table_name"),
            "columns": first.get("colnames") or columns,
            "row_count": len(rows[: args.limit]), "rows": rows[: args.limit]}


async def _refresh_columns(args: DatasetIdArgs, ctx: ToolContext) -> dict[str, Any]:
    env = env_of(args, ctx)
    body = await client_for(ctx, env).put_path(f"dataset/{args.dataset_id}/refresh",
                                               what=f"dataset {args.dataset_id}")
    return {"env": env, "dataset_id": args.dataset_id, "refreshed": True,
            "message": body.get("message", "OK")}


async def _update_dataset(args: UpdateDatasetArgs, ctx: ToolContext) -> dict[str, Any]:
    env = env_of(args, ctx)
    what = f"dataset {args.dataset_id}"
    payload = require_changes({
        key: value for key, value in {
            "description": args.description, "cache_timeout": args.cache_timeout,
            "owners": args.owners,
        }.items() if value is not None}, what)
    await client_for(ctx, env).put("dataset", args.dataset_id, payload, what=what)
    return {"env": env, "updated": args.dataset_id, "changed": sorted(payload)}


async def _delete_dataset(args: DeleteDatasetArgs, ctx: ToolContext) -> dict[str, Any]:
    env = env_of(args, ctx)
    client = client_for(ctx, env)
    what = f"dataset {args.dataset_id}"
    record = await client.get("dataset", args.dataset_id, what=what)
    usage = await related_objects(client, args.dataset_id)
    await client.delete("dataset", args.dataset_id, what=what)
    return {"env": env, "deleted": args.dataset_id, "table_name": record.get("table_name"),
            "orphaned_charts": usage["charts"]["count"],
            "affected_dashboards": usage["dashboards"]["count"]}


def _spec(name: str, description: str, args_schema: Any, risk: str, run: Any) -> ToolSpec:
    return ToolSpec(name=name, description=description, args_schema=args_schema,
                    risk=risk, groups=frozenset({"dataset", "none"}),  # type: ignore[arg-type]
                    run=run, uses_env=True)


DATASET_TOOLS = [
    _spec("list_datasets", "List datasets in a Superset environment (table, schema, "
          "database), optionally filtered by a name search; paged from 0.", ListArgs, "read",
          _list_datasets),
    _spec("get_dataset", "Get one dataset's details: table, schema, database, SQL, owners, "
          "columns and metrics.", DatasetIdArgs, "read", _get_dataset),
    _spec("get_dataset_usage", "Show which charts and dashboards use a dataset.",
          DatasetIdArgs, "read", _get_dataset_usage),
    _spec("preview_dataset", "Show the first rows of a dataset (default 10, at most 100).",
          PreviewDatasetArgs, "read", _preview_dataset),
    _spec("refresh_dataset_columns", "Re-read a dataset's columns from its database table. "
          "Needs a person's approval.", DatasetIdArgs, "write", _refresh_columns),
    _spec("update_dataset", "Change a dataset's description, cache timeout or owners (user "
          "ids). Needs a person's approval.", UpdateDatasetArgs, "write", _update_dataset),
    _spec("delete_dataset", "Delete a dataset; charts using it stop working. Dangerous: "
          "needs a person's approval.", DeleteDatasetArgs, "dangerous", _delete_dataset),
]

"""Chart endpoints (list, get, ad-hoc `POST /chart/data`) and the database list."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Depends, Request

from superset_demo.auth import EnvContext, guard
from superset_demo.errors import invalid, not_found
from superset_demo.rison_query import ListQuery, apply_query
from superset_demo.rows import demo_rows
from superset_demo.shapes import (
    chart_get,
    chart_list_item,
    database_list_item,
    list_response,
)

__all__ = ["router"]

router = APIRouter(dependencies=[Depends(guard)])

_CHART_ORDER = ["changed_by.first_name", "changed_on_delta_humanized", "datasource_id",
                "datasource_name", "last_saved_at", "slice_name", "viz_type"]
_DATABASE_ORDER = ["allow_file_upload", "allow_dml", "allow_run_async", "changed_on",
                   "changed_on_delta_humanized", "created_by.first_name", "database_name",
                   "expose_in_sqllab"]


def _ctx(request: Request) -> EnvContext:
    return request.app.state.ctx


def _chart_all_text(item: dict[str, Any], value: Any) -> bool:
    text = str(value or "").lower()
    return any(text in str(item.get(key) or "").lower()
               for key in ("slice_name", "description", "datasource_name_text"))


def _chart_context(ctx: EnvContext) -> tuple[dict[int, Any], dict[int, list[Any]]]:
    datasets = {ds["id"]: ds for ds in ctx.store.all(ctx.env, "dataset")}
    on: dict[int, list[Any]] = {}
    for dash in ctx.store.all(ctx.env, "dashboard"):
        for cid in dash["chart_ids"]:
            on.setdefault(cid, []).append(dash)
    return datasets, on


@router.get("/api/v1/chart/")
async def list_charts(request: Request, q: str | None = None) -> dict[str, Any]:
    ctx = _ctx(request)
    datasets, on = _chart_context(ctx)
    items = [chart_list_item(c, datasets.get(c["datasource_id"]), on.get(c["id"], []))
             for c in ctx.store.all(ctx.env, "chart")]
    count, page = apply_query(items, ListQuery(q), default_order=("changed_on", "desc"),
                              custom={"chart_all_text": _chart_all_text})
    return list_response(count, page, "List Slice", _CHART_ORDER)


@router.get("/api/v1/chart/{pk}")
async def get_chart(request: Request, pk: int) -> dict[str, Any]:
    ctx = _ctx(request)
    chart = ctx.store.get(ctx.env, "chart", pk)
    if chart is None:
        raise not_found()
    datasets, on = _chart_context(ctx)
    return {"id": pk, "result": chart_get(chart, datasets.get(chart["datasource_id"]),
                                          on.get(pk, []))}


def _metric_label(metric: Any) -> str:
    if isinstance(metric, dict):
        return str(metric.get("label") or metric.get("expressionType") or "metric")
    return str(metric)


def _run_query(ds: dict[str, Any], query: dict[str, Any]) -> dict[str, Any]:
    limit = query.get("row_limit") or 1000
    if not isinstance(limit, int) or limit < 0:
        raise invalid({"queries": {"0": {"row_limit": ["Must be greater than or equal to 0."]}}})
    names = [c["column_name"] for c in ds["columns"]]
    columns = [c if isinstance(c, str) else c.get("label", "") for c in
               query.get("columns") or query.get("groupby") or []]
    metrics = [_metric_label(m) for m in query.get("metrics") or []]
    if metrics:
        base = demo_rows(ds, 200)
        groups = Counter(tuple(row.get(c) for c in columns) for row in base)
        data = [{**dict(zip(columns, key, strict=True)), **{m: n for m in metrics}}
                for key, n in groups.most_common()][:limit]
        colnames = columns + metrics
    else:
        colnames = columns or names
        data = demo_rows(ds, limit, colnames)
    table = f"{ds.get('schema')}.{ds['table_name']}"
    sql = f"SELECT {', '.join(f'{c} AS {c}' for c in colnames)} \nFROM {table}\n LIMIT {limit}"
    return {
        "cache_key": hashlib.sha256(json.dumps(query, sort_keys=True).encode()).hexdigest(),
        "cached_dttm": None, "queried_dttm": datetime.now(UTC).isoformat(timespec="seconds"),
        "cache_timeout": ds.get("cache_timeout") or 300, "applied_template_filters": [],
        "annotation_data": {}, "error": None, "is_cached": None, "query": sql + " OFFSET 0;",
        "status": "success", "stacktrace": None, "rowcount": len(data),
        "sql_rowcount": len(data), "from_dttm": None, "to_dttm": None,
        "label_map": {c: [c] for c in colnames}, "colnames": colnames,
        "indexnames": list(range(len(data))),
        "coltypes": [0 if isinstance(data[0].get(c), int | float) else 1
                     for c in colnames] if data else [],
        "data": data, "result_format": "json", "detected_currency": None,
        "applied_filters": [], "rejected_filters": [],
    }


@router.post("/api/v1/chart/data")
async def chart_data(request: Request) -> dict[str, Any]:
    """Ad-hoc query against a dataset: enough for previews (first rows, simple counts)."""
    ctx = _ctx(request)
    try:
        body = await request.json()
    except ValueError as exc:
        raise invalid({"message": ["Request is not JSON"]}) from exc
    source = body.get("datasource") if isinstance(body, dict) else None
    queries = body.get("queries") if isinstance(body, dict) else None
    if not isinstance(source, dict) or not isinstance(queries, list) or not queries:
        raise invalid({"datasource": ["Missing data for required field."]})
    ds = ctx.store.get(ctx.env, "dataset", int(source.get("id") or 0))
    if ds is None:
        raise not_found()
    return {"result": [_run_query(ds, q) for q in queries if isinstance(q, dict)]}


@router.get("/api/v1/database/")
async def list_databases(request: Request, q: str | None = None) -> dict[str, Any]:
    ctx = _ctx(request)
    items = [database_list_item(db) for db in ctx.store.all(ctx.env, "database")]
    count, page = apply_query(items, ListQuery(q), default_order=("changed_on", "desc"))
    return list_response(count, page, "List Database", _DATABASE_ORDER)

"""Dataset endpoints: list, get, update, refresh columns, related objects and delete.

Delete succeeds even when charts use the dataset (they are orphaned), as on the real server.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request

from superset_demo.auth import EnvContext, guard
from superset_demo.catalog import USERS
from superset_demo.errors import invalid, not_found, unprocessable
from superset_demo.rison_query import ListQuery, apply_query
from superset_demo.routes_dashboards import require_writer
from superset_demo.shapes import dataset_get, dataset_list_item, list_response, now_iso

__all__ = ["router"]

router = APIRouter(dependencies=[Depends(guard)])

_PUT_FIELDS = {"always_filter_main_dttm", "cache_timeout", "catalog", "columns",
               "currency_code_column", "database_id", "default_endpoint", "description",
               "external_url", "extra", "fetch_values_predicate", "filter_select_enabled",
               "folders", "is_managed_externally", "is_sqllab_view", "main_dttm_col",
               "metrics", "normalize_columns", "offset", "owners", "schema", "sql",
               "table_name", "template_params", "uuid"}
_ORDER_COLUMNS = ["table_name", "catalog", "schema", "changed_by.first_name",
                  "changed_on_delta_humanized", "database.database_name"]


def _ctx(request: Request) -> EnvContext:
    return request.app.state.ctx


def _dataset(ctx: EnvContext, pk: int) -> dict[str, Any]:
    doc = ctx.store.get(ctx.env, "dataset", pk)
    if doc is None:
        raise not_found()
    return doc


@router.get("/api/v1/dataset/")
async def list_datasets(request: Request, q: str | None = None) -> dict[str, Any]:
    ctx = _ctx(request)
    dbs = {db["id"]: db for db in ctx.store.all(ctx.env, "database")}
    items = [dataset_list_item(ds, dbs.get(ds["database_id"]))
             for ds in ctx.store.all(ctx.env, "dataset")]
    count, page = apply_query(items, ListQuery(q), default_order=("changed_on", "desc"))
    return list_response(count, page, "List Sqla Table", _ORDER_COLUMNS)


@router.get("/api/v1/dataset/{pk}")
async def get_dataset(request: Request, pk: int) -> dict[str, Any]:
    ctx = _ctx(request)
    ds = _dataset(ctx, pk)
    return {"id": pk, "result": dataset_get(ds, ctx.store.get(ctx.env, "database",
                                                              ds["database_id"]))}


def _validate(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise invalid({"_schema": ["Invalid input type."]})
    errors = {key: ["Unknown field."] for key in body if key not in _PUT_FIELDS}
    timeout = body.get("cache_timeout")
    if timeout is not None and (not isinstance(timeout, int) or isinstance(timeout, bool)):
        errors["cache_timeout"] = ["Not a valid integer."]
    if "description" in body and body["description"] is not None and not isinstance(
            body["description"], str):
        errors["description"] = ["Not a valid string."]
    if errors:
        raise invalid(errors)
    known = {row[0] for row in USERS}
    if "owners" in body and (not isinstance(body["owners"], list)
                             or any(o not in known for o in body["owners"])):
        raise unprocessable({"owners": ["Owners are invalid"]})
    return body


@router.put("/api/v1/dataset/{pk}")
async def update_dataset(request: Request, pk: int) -> dict[str, Any]:
    ctx = _ctx(request)
    doc = _dataset(ctx, pk)
    require_writer(request)
    try:
        body = _validate(await request.json())
    except ValueError as exc:
        raise invalid({"_schema": ["Invalid JSON"]}) from exc
    # Superset's update schema has load_default=False here: it is echoed (and stored).
    body = {"always_filter_main_dttm": False, **body}
    for key, value in body.items():
        if key in ("external_url", "is_managed_externally"):
            continue
        doc[key] = value
    doc["changed_on"], doc["changed_by"] = now_iso(), request.state.user_id
    ctx.store.put(ctx.env, "dataset", doc)
    return {"id": pk, "result": body}


@router.put("/api/v1/dataset/{pk}/refresh")
async def refresh_dataset(request: Request, pk: int) -> dict[str, str]:
    """Re-reads the table's columns; the demo's tables never change, so only stamps move."""
    ctx = _ctx(request)
    doc = _dataset(ctx, pk)
    require_writer(request)
    doc["changed_on"], doc["changed_by"] = now_iso(), request.state.user_id
    ctx.store.put(ctx.env, "dataset", doc)
    return {"message": "OK"}


@router.get("/api/v1/dataset/{pk}/related_objects")
async def related_objects(request: Request, pk: int) -> dict[str, Any]:
    ctx = _ctx(request)
    _dataset(ctx, pk)
    charts = [c for c in ctx.store.all(ctx.env, "chart") if c["datasource_id"] == pk]
    chart_ids = {c["id"] for c in charts}
    dashboards = [d for d in ctx.store.all(ctx.env, "dashboard")
                  if chart_ids & set(d["chart_ids"])]
    return {
        "charts": {"count": len(charts), "result": [
            {"id": c["id"], "slice_name": c["slice_name"], "viz_type": c["viz_type"]}
            for c in charts]},
        "dashboards": {"count": len(dashboards), "result": [
            {"id": d["id"], "json_metadata": d["json_metadata"], "slug": d["slug"],
             "title": d["dashboard_title"]} for d in dashboards]},
    }


@router.delete("/api/v1/dataset/{pk}")
async def delete_dataset(request: Request, pk: int) -> dict[str, str]:
    ctx = _ctx(request)
    _dataset(ctx, pk)
    require_writer(request)
    ctx.store.delete(ctx.env, "dataset", pk)
    return {"message": "OK"}


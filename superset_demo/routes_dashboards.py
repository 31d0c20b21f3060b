"""Dashboard endpoints: list, get (by id, slug or uuid), charts, datasets, update, delete,
export and import, with the status codes and bodies real Superset 6.1 answers."""

from __future__ import annotations

import contextlib
import json
import time
import uuid as uuidlib
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from superset_demo.auth import EnvContext, guard, user_of
from superset_demo.bundle import export_dashboards, import_bundle
from superset_demo.catalog import USERS
from superset_demo.errors import DemoError, invalid, not_found, unprocessable
from superset_demo.rison_query import ListQuery, apply_query
from superset_demo.shapes import (
    chart_entity,
    dashboard_dataset,
    dashboard_get,
    dashboard_list_item,
    list_response,
    now_iso,
)

__all__ = ["find_dashboard", "require_writer", "router"]

router = APIRouter(dependencies=[Depends(guard)])

_PUT_FIELDS = {"certification_details", "certified_by", "css", "dashboard_title",
               "external_url", "is_managed_externally", "json_metadata", "owners",
               "position_json", "published", "roles", "slug", "tags", "theme_id", "uuid"}
_ORDER_COLUMNS = ["changed_by.first_name", "changed_on_delta_humanized",
                  "created_by.first_name", "dashboard_title", "published", "changed_on"]


def _ctx(request: Request) -> EnvContext:
    return request.app.state.ctx


def require_writer(request: Request) -> None:
    """Gamma has no write permissions on any resource: Superset answers 403."""
    if user_of(request.state.user_id)[4] == "Gamma":
        raise DemoError(403, {"message": "Forbidden"})


def find_dashboard(ctx: EnvContext, id_or_slug: str) -> dict[str, Any]:
    if id_or_slug.isdigit():
        doc = ctx.store.get(ctx.env, "dashboard", int(id_or_slug))
    else:
        doc = None
        with contextlib.suppress(ValueError):
            doc = ctx.store.by_uuid(ctx.env, "dashboard", str(uuidlib.UUID(id_or_slug)))
        doc = doc or next((d for d in ctx.store.all(ctx.env, "dashboard")
                           if d["slug"] == id_or_slug), None)
    if doc is None:
        raise not_found()
    return doc


def _title_or_slug(item: dict[str, Any], value: Any) -> bool:
    text = str(value or "").lower()
    return text in item["dashboard_title"].lower() or text in (item["slug"] or "").lower()


@router.get("/api/v1/dashboard/")
async def list_dashboards(request: Request, q: str | None = None) -> dict[str, Any]:
    ctx = _ctx(request)
    items = [dashboard_list_item(d) for d in ctx.store.all(ctx.env, "dashboard")]
    count, page = apply_query(items, ListQuery(q), default_order=("changed_on", "desc"),
                              custom={"title_or_slug": _title_or_slug})
    return list_response(count, page, "List Dashboard", _ORDER_COLUMNS)


@router.get("/api/v1/dashboard/export/")
async def export(request: Request, q: str | None = None) -> Response:
    ctx = _ctx(request)
    ids = ListQuery.parse_ids(q)
    docs = [ctx.store.get(ctx.env, "dashboard", i) for i in ids]
    if not ids or any(d is None for d in docs):
        raise not_found()
    name, payload = export_dashboards(ctx.store, ctx.env, [d for d in docs if d])
    return Response(payload, media_type="application/zip",
                    headers={"Content-Disposition": f"attachment; filename={name}.zip"})


@router.post("/api/v1/dashboard/import/")
async def import_dashboards(request: Request) -> dict[str, str]:
    require_writer(request)
    ctx = _ctx(request)
    form = await request.form()
    upload = form.get("formData")
    if upload is None or isinstance(upload, str):
        raise invalid({"formData": ["Missing data for required field."]})
    overwrite = str(form.get("overwrite", "false")).lower() == "true"
    import_bundle(ctx.store, ctx.env, await upload.read(), overwrite=overwrite)
    return {"message": "OK"}


@router.get("/api/v1/dashboard/{id_or_slug}")
async def get_dashboard(request: Request, id_or_slug: str) -> dict[str, Any]:
    ctx = _ctx(request)
    doc = find_dashboard(ctx, id_or_slug)
    charts = [ctx.store.get(ctx.env, "chart", cid) for cid in doc["chart_ids"]]
    return {"result": dashboard_get(doc, [c["slice_name"] for c in charts if c])}


@router.get("/api/v1/dashboard/{id_or_slug}/charts")
async def dashboard_charts(request: Request, id_or_slug: str) -> dict[str, Any]:
    ctx = _ctx(request)
    doc = find_dashboard(ctx, id_or_slug)
    charts = [ctx.store.get(ctx.env, "chart", cid) for cid in doc["chart_ids"]]
    return {"result": [chart_entity(c) for c in charts if c]}


@router.get("/api/v1/dashboard/{id_or_slug}/datasets")
async def dashboard_datasets(request: Request, id_or_slug: str) -> dict[str, Any]:
    ctx = _ctx(request)
    doc = find_dashboard(ctx, id_or_slug)
    result, seen = [], set()
    for cid in doc["chart_ids"]:
        chart = ctx.store.get(ctx.env, "chart", cid)
        if not chart or chart["datasource_id"] in seen:
            continue
        seen.add(chart["datasource_id"])
        ds = ctx.store.get(ctx.env, "dataset", chart["datasource_id"])
        if ds:
            db = ctx.store.get(ctx.env, "database", ds["database_id"])
            result.append(dashboard_dataset(ds, db))
    return {"result": result}


def _validate_put(ctx: EnvContext, doc: dict[str, Any], body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise invalid({"_schema": ["Invalid input type."]})
    unknown = {key: ["Unknown field."] for key in body if key not in _PUT_FIELDS}
    if unknown:
        raise invalid(unknown)
    errors: dict[str, list[str]] = {}
    for key in ("json_metadata", "position_json"):
        if body.get(key) is not None:
            try:
                json.loads(body[key]) if isinstance(body[key], str) else None
            except ValueError:
                errors[key] = ["JSON not valid"]
            if not isinstance(body[key], str):
                errors[key] = ["Not a valid string."]
    if "dashboard_title" in body and (not isinstance(body["dashboard_title"], str)
                                      or len(body["dashboard_title"]) > 500):
        errors["dashboard_title"] = ["Length must be between 0 and 500."]
    if "published" in body and not isinstance(body["published"], bool):
        errors["published"] = ["Not a valid boolean."]
    if errors:
        raise invalid(errors)
    known_users = {row[0] for row in USERS}
    if "owners" in body and (not isinstance(body["owners"], list)
                             or any(o not in known_users for o in body["owners"])):
        raise unprocessable({"owners": ["Owners are invalid"]})
    slug = body.get("slug")
    if slug and any(d["slug"] == slug and d["id"] != doc["id"]
                    for d in ctx.store.all(ctx.env, "dashboard")):
        raise unprocessable({"slug": ["Must be unique"]})
    return body


@router.put("/api/v1/dashboard/{pk}")
async def update_dashboard(request: Request, pk: int) -> dict[str, Any]:
    ctx = _ctx(request)
    doc = ctx.store.get(ctx.env, "dashboard", pk)
    if doc is None:
        raise not_found()
    require_writer(request)
    try:
        body = await request.json()
    except ValueError as exc:
        raise invalid({"_schema": ["Invalid JSON"]}) from exc
    body = _validate_put(ctx, doc, body)
    for key, value in body.items():
        if key in ("roles", "tags", "external_url", "is_managed_externally"):
            continue
        doc[key] = value if key != "slug" else (value or None)
    doc["changed_on"], doc["changed_by"] = now_iso(), request.state.user_id
    ctx.store.put(ctx.env, "dashboard", doc)
    return {"id": pk, "last_modified_time": float(int(time.time())), "result": body}


@router.delete("/api/v1/dashboard/{pk}")
async def delete_dashboard(request: Request, pk: int) -> dict[str, str]:
    ctx = _ctx(request)
    if ctx.store.get(ctx.env, "dashboard", pk) is None:
        raise not_found()
    require_writer(request)
    ctx.store.delete(ctx.env, "dashboard", pk)
    return {"message": "OK"}

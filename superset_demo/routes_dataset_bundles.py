"""Dataset export and import endpoints (registered before `/api/v1/dataset/{pk}`, whose
integer path would otherwise claim `export`)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from superset_demo.auth import EnvContext, guard
from superset_demo.dataset_bundle import export_datasets, import_datasets
from superset_demo.errors import invalid, not_found
from superset_demo.rison_query import ListQuery
from superset_demo.routes_dashboards import require_writer

__all__ = ["router"]

router = APIRouter(dependencies=[Depends(guard)])


def _ctx(request: Request) -> EnvContext:
    return request.app.state.ctx


@router.get("/api/v1/dataset/export/")
async def export(request: Request, q: str | None = None) -> Response:
    ctx = _ctx(request)
    ids = ListQuery.parse_ids(q)
    docs = [ctx.store.get(ctx.env, "dataset", i) for i in ids]
    if not ids or any(d is None for d in docs):
        raise not_found()
    name, payload = export_datasets(ctx.store, ctx.env, [d for d in docs if d])
    return Response(payload, media_type="application/zip",
                    headers={"Content-Disposition": f"attachment; filename={name}.zip"})


@router.post("/api/v1/dataset/import/")
async def import_bundle(request: Request) -> dict[str, str]:
    require_writer(request)
    ctx = _ctx(request)
    form = await request.form()
    upload = form.get("formData")
    if upload is None or isinstance(upload, str):
        raise invalid({"formData": ["Missing data for required field."]})
    overwrite = str(form.get("overwrite", "false")).lower() == "true"
    import_datasets(ctx.store, ctx.env, await upload.read(), overwrite=overwrite)
    return {"message": "OK"}

"""A real dev -> prod promotion between two real Superset 6.1.0 instances, by uuid."""

from __future__ import annotations

import json
import uuid

import httpx
import pytest

pytestmark = pytest.mark.real_superset


async def _client(base_url: str) -> httpx.AsyncClient:
    client = httpx.AsyncClient(base_url=base_url, timeout=60,
                               headers={"Accept": "application/json"})
    tokens = (await client.post("/api/v1/security/login", json={
        "username": "admin", "password": "admin", "provider": "db", "refresh": True})).json()
    client.headers["Authorization"] = f"Bearer {tokens['access_token']}"
    client.headers["X-CSRFToken"] = (await client.get("/api/v1/security/csrf_token/")).json()[
        "result"]
    return client


async def _count(client: httpx.AsyncClient, resource: str) -> int:
    return (await client.get(f"/api/v1/{resource}/")).json()["count"]


async def test_promote_new_dashboard_from_dev_to_prod(real_superset: dict[str, str]) -> None:
    dev, prod = await _client(real_superset["dev"]), await _client(real_superset["prod"])
    try:
        sales = (await dev.get("/api/v1/dashboard/sales-overview/datasets")).json()["result"][0]
        dash_uuid, chart_uuid = str(uuid.uuid4()), str(uuid.uuid4())
        created = await dev.post("/api/v1/dashboard/", json={
            "dashboard_title": "Promotion test", "uuid": dash_uuid, "published": False})
        assert created.status_code == 201, created.text
        dash_id = created.json()["id"]
        chart = await dev.post("/api/v1/chart/", json={
            "slice_name": "Promotion chart", "viz_type": "table", "uuid": chart_uuid,
            "datasource_id": sales["id"], "datasource_type": "table", "dashboards": [dash_id],
            "params": json.dumps({"viz_type": "table", "groupby": ["region"],
                                  "metrics": ["count"]})})
        assert chart.status_code == 201, chart.text
        bundle = (await dev.get("/api/v1/dashboard/export/", params={"q": f"!({dash_id})"}))
        assert bundle.status_code == 200
        datasets_before, charts_before = await _count(prod, "dataset"), await _count(
            prod, "chart")
        files = {"formData": ("bundle.zip", bundle.content, "application/zip")}
        imported = await prod.post("/api/v1/dashboard/import/", files=files)
        assert imported.json() == {"message": "OK"}, imported.text
        found = (await prod.get("/api/v1/dashboard/", params={
            "q": f"(filters:!((col:uuid,opr:eq,value:'{dash_uuid}')))"})).json()
        assert found["count"] == 1
        prod_charts = (await prod.get(f"/api/v1/dashboard/{found['ids'][0]}/charts")).json()
        assert [c["slice_name"] for c in prod_charts["result"]] == ["Promotion chart"]
        assert await _count(prod, "chart") == charts_before + 1
        assert await _count(prod, "dataset") == datasets_before, "dataset reused by uuid"
        again = await prod.post("/api/v1/dashboard/import/", files=files)
        assert again.status_code == 422, "existing dashboard refused without overwrite"
    finally:
        await dev.aclose()
        await prod.aclose()

"""One set of HTTP-level assertions run against the demo server AND a real Superset 6.1.0,
so the demo cannot drift from the real API shapes the tools rely on."""

from __future__ import annotations

import io
import json
import uuid
import zipfile
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import yaml

from superset_demo import DemoSuperset
from tests.superset_demo.test_bundle import REFERENCE, layout


@dataclass
class Target:
    name: str
    base_url: str
    transport: httpx.AsyncBaseTransport | None


@pytest.fixture(params=["demo", pytest.param("real", marks=pytest.mark.real_superset)])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Target:
    if request.param == "real":
        return Target("real", request.getfixturevalue("real_superset")["dev"], None)
    demo = DemoSuperset(tmp_path / "demo_superset.db")
    request.addfinalizer(demo.close)
    return Target("demo", demo.base_url("ss-dev"), demo.transport())


Connect = Callable[..., Awaitable[httpx.AsyncClient]]


@pytest.fixture
async def connect(target: Target) -> AsyncIterator[Connect]:
    clients: list[httpx.AsyncClient] = []

    async def make(*, login: bool = True, csrf: bool = True) -> httpx.AsyncClient:
        client = httpx.AsyncClient(base_url=target.base_url, timeout=60,
                                   headers={"Accept": "application/json"},
                                   **({"transport": target.transport} if target.transport
                                      else {}))
        clients.append(client)
        if login:
            resp = await client.post("/api/v1/security/login", json={
                "username": "admin", "password": "admin", "provider": "db", "refresh": True})
            assert set(resp.json()) == {"access_token", "refresh_token"}
            client.headers["Authorization"] = f"Bearer {resp.json()['access_token']}"
        if login and csrf:
            token = (await client.get("/api/v1/security/csrf_token/")).json()["result"]
            client.headers["X-CSRFToken"] = token
        return client

    yield make
    for client in clients:
        await client.aclose()


async def _sales_id(client: httpx.AsyncClient) -> int:
    return (await client.get("/api/v1/dashboard/sales-overview")).json()["result"]["id"]


async def test_auth_errors(connect: Connect) -> None:
    anon = await connect(login=False)
    bad = await anon.post("/api/v1/security/login", json={
        "username": "admin", "password": "wrong", "provider": "db"})
    assert (bad.status_code, bad.json()) == (401, {"message": "Not authorized"})
    missing = await anon.get("/api/v1/dashboard/")
    assert (missing.status_code, missing.json()) == (401, {"msg": "Missing Authorization Header"})
    garbage = await anon.get("/api/v1/dashboard/", headers={"Authorization": "Bearer x"})
    assert garbage.status_code == 422 and set(garbage.json()) == {"msg"}
    client = await connect()
    me = (await client.get("/api/v1/me/")).json()["result"]
    assert me["username"] == "admin" and {"id", "first_name", "last_name"} <= set(me)
    roles = (await client.get("/api/v1/me/roles/")).json()["result"]
    assert "Admin" in roles["roles"]


async def test_list_shapes_and_rison(connect: Connect) -> None:
    client = await connect()
    q = "(filters:!((col:dashboard_title,opr:ct,value:Sales)),page:0,page_size:25)"
    listing = (await client.get("/api/v1/dashboard/", params={"q": q})).json()
    assert {"count", "ids", "result"} <= set(listing)
    assert listing["ids"] == [r["id"] for r in listing["result"]] and listing["count"] >= 1
    assert {"id", "uuid", "dashboard_title", "slug", "published", "owners", "status", "url",
            "changed_on_utc", "changed_on_delta_humanized", "changed_by_name"} <= set(
        listing["result"][0])
    everything = (await client.get("/api/v1/dashboard/")).json()["count"]
    unknown = await client.get("/api/v1/dashboard/", params={
        "q": "(filters:!((col:dashboard_title,opr:zzz,value:Sales)))"})
    assert unknown.json()["count"] == everything
    charts = (await client.get("/api/v1/chart/", params={"q": "(page_size:500)"})).json()
    assert len(charts["result"]) == min(charts["count"], 100)
    assert {"id", "uuid", "slice_name", "viz_type", "datasource_id", "dashboards", "params",
            "owners"} <= set(charts["result"][0])
    datasets = (await client.get("/api/v1/dataset/")).json()
    assert {"id", "uuid", "table_name", "schema", "database", "owners", "kind"} <= set(
        datasets["result"][0])
    dbs = (await client.get("/api/v1/database/")).json()
    assert {"id", "uuid", "database_name", "backend"} <= set(dbs["result"][0])


async def test_get_shapes(connect: Connect) -> None:
    client = await connect()
    dash = (await client.get("/api/v1/dashboard/sales-overview")).json()["result"]
    assert {"id", "uuid", "dashboard_title", "slug", "published", "owners", "json_metadata",
            "position_json", "charts", "css", "changed_on", "url"} <= set(dash)
    assert isinstance(dash["json_metadata"], str)
    charts = (await client.get(f"/api/v1/dashboard/{dash['id']}/charts")).json()["result"]
    assert {"id", "slice_name", "form_data", "changed_on"} <= set(charts[0])
    datasets = (await client.get(f"/api/v1/dashboard/{dash['id']}/datasets")).json()["result"]
    assert {"id", "table_name", "schema", "database", "columns", "metrics"} <= set(datasets[0])
    ds_id = datasets[0]["id"]
    ds = (await client.get(f"/api/v1/dataset/{ds_id}")).json()
    assert ds["id"] == ds_id and {"columns", "metrics", "database", "table_name", "owners",
                                  "cache_timeout", "description", "uuid"} <= set(ds["result"])
    related = (await client.get(f"/api/v1/dataset/{ds_id}/related_objects")).json()
    assert set(related) == {"charts", "dashboards"}
    assert {"id", "slice_name", "viz_type"} == set(related["charts"]["result"][0])
    chart = (await client.get(f"/api/v1/chart/{charts[0]['id']}")).json()["result"]
    assert {"id", "uuid", "slice_name", "viz_type", "params", "datasource_id", "dashboards",
            "owners", "query_context"} <= set(chart)
    preview = await client.post("/api/v1/chart/data", json={
        "datasource": {"id": ds_id, "type": "table"},
        "queries": [{"columns": [], "metrics": [], "row_limit": 3}],
        "result_format": "json", "result_type": "samples"})
    result = preview.json()["result"][0]
    assert result["rowcount"] == 3 and len(result["data"]) == 3 and result["colnames"]
    for path in ("/api/v1/dashboard/999999", "/api/v1/chart/999999", "/api/v1/dataset/999999"):
        resp = await client.get(path)
        assert (resp.status_code, resp.json()) == (404, {"message": "Not found"}), path


async def test_writes_csrf_update_and_errors(connect: Connect) -> None:
    no_csrf = await connect(csrf=False)
    dash_id = await _sales_id(no_csrf)
    refused = await no_csrf.put(f"/api/v1/dashboard/{dash_id}", json={"css": ""})
    assert refused.status_code == 400
    assert "The CSRF token is missing." in refused.json()["errors"][0]["message"]
    client = await connect()
    body = {"dashboard_title": "Sales Overview", "published": True,
            "json_metadata": json.dumps({"color_scheme": "supersetColors"})}
    resp = await client.put(f"/api/v1/dashboard/{dash_id}", json=body)
    assert resp.status_code == 200
    assert resp.json()["id"] == dash_id and resp.json()["result"] == body
    unknown = await client.put(f"/api/v1/dashboard/{dash_id}", json={"bogus": 1})
    assert (unknown.status_code, unknown.json()) == (400, {"message": {"bogus": [
        "Unknown field."]}})
    bad = await client.put(f"/api/v1/dashboard/{dash_id}", json={"json_metadata": "{x"})
    assert (bad.status_code, bad.json()) == (400, {"message": {"json_metadata": [
        "JSON not valid"]}})
    owners = await client.put(f"/api/v1/dashboard/{dash_id}", json={"owners": [99999]})
    assert owners.status_code == 422 and "owners" in owners.json()["message"]
    for method in ("put", "delete"):
        kwargs = {"json": {"css": ""}} if method == "put" else {}
        missing = await getattr(client, method)("/api/v1/dashboard/999999", **kwargs)
        assert (missing.status_code, missing.json()) == (404, {"message": "Not found"})
    ds_id = (await client.get(f"/api/v1/dashboard/{dash_id}/datasets")).json()["result"][0]["id"]
    ds_put = await client.put(f"/api/v1/dataset/{ds_id}", json={"cache_timeout": 600})
    assert ds_put.json() == {"id": ds_id, "result": {"always_filter_main_dttm": False,
                                                 "cache_timeout": 600}}
    assert (await client.put(f"/api/v1/dataset/{ds_id}/refresh")).json() == {"message": "OK"}


def _as_new_dashboard(payload: bytes, title: str) -> bytes:
    """The same bundle with the dashboard given a new uuid, slug and title."""
    source, out = zipfile.ZipFile(io.BytesIO(payload)), io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        for name in source.namelist():
            data = source.read(name)
            if "/dashboards/" in name:
                doc = yaml.safe_load(data)
                doc.update(uuid=str(uuid.uuid4()), slug=None, dashboard_title=title)
                data = yaml.safe_dump(doc).encode()
            target.writestr(name, data)
    return out.getvalue()


async def test_export_import_delete(connect: Connect) -> None:
    client = await connect()
    dash_id = await _sales_id(client)
    export = await client.get("/api/v1/dashboard/export/", params={"q": f"!({dash_id})"})
    assert export.headers["content-type"] == "application/zip"
    ours, reference = layout(export.content), layout(REFERENCE.read_bytes())
    assert set(ours) == set(reference)
    for kind in reference:
        assert reference[kind] <= ours[kind], kind
    files = {"formData": ("bundle.zip", export.content, "application/zip")}
    refused = await client.post("/api/v1/dashboard/import/", files=files)
    assert refused.status_code == 422 and "overwrite=true" in refused.json()["errors"][0][
        "message"]
    ok = await client.post("/api/v1/dashboard/import/", files=files, data={"overwrite": "true"})
    assert ok.json() == {"message": "OK"}
    charts_before = (await client.get("/api/v1/chart/")).json()["count"]
    title = f"Contract copy {uuid.uuid4().hex[:8]}"
    copy = {"formData": ("copy.zip", _as_new_dashboard(export.content, title),
                         "application/zip")}
    assert (await client.post("/api/v1/dashboard/import/", files=copy)).json() == {
        "message": "OK"}
    assert (await client.get("/api/v1/chart/")).json()["count"] == charts_before, (
        "nested charts are reused, not duplicated")
    found = (await client.get("/api/v1/dashboard/", params={
        "q": f"(filters:!((col:dashboard_title,opr:eq,value:'{title}')))"})).json()
    assert found["count"] == 1
    new_id = found["ids"][0]
    assert (await client.delete(f"/api/v1/dashboard/{new_id}")).json() == {"message": "OK"}
    assert (await client.get(f"/api/v1/dashboard/{new_id}")).status_code == 404

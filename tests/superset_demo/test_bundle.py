"""Export bundles match the real reference zip's layout; import and env-to-env migration."""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path

import yaml

# A copy of a real Superset 6.1.0 export (shared/reference/), kept beside the tests.
REFERENCE = Path(__file__).with_name("superset-6.1.0-dashboard-export-example.zip")


def layout(payload: bytes) -> dict[str, set[str]]:
    """File kind -> YAML keys, with names reduced to their pattern (uuid-free, id-free)."""
    archive = zipfile.ZipFile(io.BytesIO(payload))
    roots = {name.split("/", 1)[0] for name in archive.namelist()}
    assert len(roots) == 1 and re.fullmatch(r"dashboard_export_\d{8}T\d{6}", roots.pop())
    kinds: dict[str, set[str]] = {}
    for name in archive.namelist():
        relative = name.split("/", 1)[1]
        kind = re.sub(r"/[^/]+\.yaml$", "/*.yaml", relative)
        kind = re.sub(r"^datasets/[^/]+/", "datasets/<db>/", kind)
        keys = set(yaml.safe_load(archive.read(name)))
        kinds.setdefault(kind, set()).update(keys)
    return kinds


async def export(client, dashboard_id: int) -> bytes:
    resp = await client.get("/api/v1/dashboard/export/", params={"q": f"!({dashboard_id})"})
    assert resp.status_code == 200 and resp.headers["content-type"] == "application/zip"
    assert resp.headers["content-disposition"].startswith("attachment; filename=dashboard_export_")
    return resp.content


async def test_export_layout_equals_reference(login) -> None:
    client = await login()
    ours = layout(await export(client, 3))
    reference = layout(REFERENCE.read_bytes())
    assert set(ours) == set(reference)
    for kind in reference:
        assert ours[kind] == reference[kind], kind
    assert (await client.get("/api/v1/dashboard/export/", params={"q": "!(999)"})
            ).status_code == 404


def _form(payload: bytes, overwrite: bool) -> dict:
    data = {"overwrite": "true"} if overwrite else {}
    return {"files": {"formData": ("bundle.zip", payload, "application/zip")}, "data": data}


async def test_import_refuses_existing_dashboard_unless_overwrite(login) -> None:
    client = await login("prod")
    payload = await export(await login("ss-dev"), 3)
    refused = await client.post("/api/v1/dashboard/import/", **_form(payload, False))
    assert refused.status_code == 422
    error = refused.json()["errors"][0]
    assert "overwrite=true" in error["message"] and error["error_type"] == "GENERIC_COMMAND_ERROR"
    ok = await client.post("/api/v1/dashboard/import/", **_form(payload, True))
    assert ok.json() == {"message": "OK"}
    prod3 = (await client.get("/api/v1/dashboard/3")).json()["result"]
    assert len(prod3["charts"]) == 6, "the dev version's extra charts were added"
    assert "supersetColors" in prod3["json_metadata"]


async def test_migrate_dev_to_staging_by_export_and_import(login) -> None:
    dev, staging = await login("ss-dev"), await login("staging")
    dev3 = (await dev.get("/api/v1/dashboard/3")).json()["result"]
    before = (await staging.get("/api/v1/dataset/", params={"q": "(page_size:100)"})).json()
    charts_before = (await staging.get("/api/v1/chart/", params={"q": "(page_size:1)"})).json()
    resp = await staging.post("/api/v1/dashboard/import/", **_form(await export(dev, 3), False))
    assert resp.json() == {"message": "OK"}
    found = (await staging.get("/api/v1/dashboard/", params={
        "q": f"(filters:!((col:uuid,opr:eq,value:'{dev3['uuid']}')))"})).json()
    assert found["count"] == 1
    new_id = found["ids"][0]
    assert new_id not in {1, 2, 3}, "a new id in the target; matched by uuid, not id"
    copied = (await staging.get(f"/api/v1/dashboard/{new_id}")).json()["result"]
    assert copied["dashboard_title"] == dev3["dashboard_title"]
    charts = (await staging.get(f"/api/v1/dashboard/{new_id}/charts")).json()["result"]
    assert len(charts) == 6
    after = (await staging.get("/api/v1/dataset/", params={"q": "(page_size:100)"})).json()
    assert after["count"] == before["count"], "the existing sales dataset is reused"
    charts_after = (await staging.get("/api/v1/chart/", params={"q": "(page_size:1)"})).json()
    assert charts_after["count"] == charts_before["count"] + 6
    datasets = (await staging.get(f"/api/v1/dashboard/{new_id}/datasets")).json()["result"]
    assert [d["id"] for d in datasets] == [1]

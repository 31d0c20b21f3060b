"""Lists with Rison, get by id/slug/uuid, updates, deletes and dataset endpoints."""

from __future__ import annotations

import json

from superset_demo.catalog import stable_uuid

Q_SALES = "(filters:!((col:dashboard_title,opr:ct,value:sales)),page:0,page_size:25)"


async def test_list_filters_paging_and_cap(login) -> None:
    client = await login()
    everything = (await client.get("/api/v1/dashboard/", params={"q": "(page_size:100)"})).json()
    assert everything["count"] == 13 and len(everything["ids"]) == 13
    assert {"count", "ids", "result"} <= set(everything)
    sales = (await client.get("/api/v1/dashboard/", params={"q": Q_SALES})).json()
    assert sales["count"] == 2
    assert all("sales" in r["dashboard_title"].lower() for r in sales["result"])
    unknown = await client.get("/api/v1/dashboard/", params={
        "q": "(filters:!((col:dashboard_title,opr:nope,value:sales)))"})
    assert unknown.json()["count"] == 13, "an unknown operator is silently ignored"
    published = (await client.get("/api/v1/dashboard/", params={
        "q": "(filters:!((col:published,opr:eq,value:!t)),page_size:100)"})).json()
    assert 3 not in published["ids"] and published["count"] == 10
    page1 = (await client.get("/api/v1/dashboard/", params={
        "q": "(order_column:dashboard_title,order_direction:asc,page:1,page_size:5)"})).json()
    titles = [r["dashboard_title"] for r in page1["result"]]
    assert len(titles) == 5 and titles == sorted(titles) and page1["count"] == 13
    capped = (await client.get("/api/v1/chart/", params={"q": "(page_size:500)"})).json()
    assert capped["count"] == 52 and len(capped["result"]) == 52
    default = (await client.get("/api/v1/chart/")).json()
    assert len(default["result"]) == 20, "FAB's default page size"
    on_three = (await client.get("/api/v1/chart/", params={
        "q": "(filters:!((col:dashboards,opr:rel_m_m,value:3)),page_size:100)"})).json()
    assert sorted(on_three["ids"]) == [9, 10, 11, 12, 49, 50]
    in_db = (await client.get("/api/v1/dataset/", params={
        "q": "(filters:!((col:database,opr:rel_o_m,value:2)),page_size:100)"})).json()
    assert in_db["count"] == 6 and all(r["database"]["id"] == 2 for r in in_db["result"])
    dbs = (await client.get("/api/v1/database/")).json()
    assert dbs["count"] == 2 and {"database_name", "backend", "uuid"} <= set(dbs["result"][0])


async def test_get_dashboard_by_id_slug_and_uuid(login) -> None:
    client = await login()
    by_id = (await client.get("/api/v1/dashboard/3")).json()["result"]
    by_slug = (await client.get("/api/v1/dashboard/sales-overview")).json()["result"]
    by_uuid = (await client.get(f"/api/v1/dashboard/{by_id['uuid']}")).json()["result"]
    assert by_id["id"] == by_slug["id"] == by_uuid["id"] == 3
    assert isinstance(by_id["json_metadata"], str) and json.loads(by_id["json_metadata"])
    assert by_id["published"] is False and len(by_id["charts"]) == 6
    charts = (await client.get("/api/v1/dashboard/sales-overview/charts")).json()["result"]
    assert [c["id"] for c in charts] == [9, 10, 11, 12, 49, 50]
    assert {"slice_name", "form_data", "id"} <= set(charts[0])
    datasets = (await client.get("/api/v1/dashboard/3/datasets")).json()["result"]
    assert [d["table_name"] for d in datasets] == ["sales"]
    missing = await client.get("/api/v1/dashboard/999")
    assert missing.status_code == 404 and missing.json() == {"message": "Not found"}


async def test_update_and_delete_dashboard(login) -> None:
    client = await login()
    body = {"dashboard_title": "Revenue 2026", "published": True, "owners": [1, 2],
            "json_metadata": json.dumps({"color_scheme": "bnbColors"})}
    resp = await client.put("/api/v1/dashboard/3", json=body)
    assert resp.status_code == 200
    assert resp.json()["id"] == 3 and resp.json()["result"] == body
    got = (await client.get("/api/v1/dashboard/3")).json()["result"]
    assert got["dashboard_title"] == "Revenue 2026" and got["published"] is True
    assert [o["id"] for o in got["owners"]] == [1, 2]
    bad = await client.put("/api/v1/dashboard/3", json={"json_metadata": "{nope"})
    assert bad.status_code == 400 and bad.json() == {"message": {"json_metadata": [
        "JSON not valid"]}}
    unknown = await client.put("/api/v1/dashboard/3", json={"bogus": 1})
    assert unknown.json() == {"message": {"bogus": ["Unknown field."]}}
    owners = await client.put("/api/v1/dashboard/3", json={"owners": [999]})
    assert owners.status_code == 422 and "owners" in owners.json()["message"]
    slug = await client.put("/api/v1/dashboard/3", json={"slug": "web-traffic"})
    assert slug.status_code == 422
    deleted = await client.delete("/api/v1/dashboard/3")
    assert deleted.json() == {"message": "OK"}
    assert (await client.get("/api/v1/dashboard/3")).status_code == 404
    assert (await client.delete("/api/v1/dashboard/3")).status_code == 404


async def test_dataset_endpoints(login) -> None:
    client = await login()
    got = (await client.get("/api/v1/dataset/2")).json()
    assert got["id"] == 2 and got["result"]["table_name"] == "orders"
    assert len(got["result"]["columns"]) == 6 and got["result"]["database"]["id"] == 1
    put = await client.put("/api/v1/dataset/2", json={"cache_timeout": 600})
    assert put.json() == {"id": 2, "result": {"always_filter_main_dttm": False,
                                                 "cache_timeout": 600}}
    assert (await client.get("/api/v1/dataset/2")).json()["result"]["cache_timeout"] == 600
    bad = await client.put("/api/v1/dataset/2", json={"cache_timeout": "soon"})
    assert bad.status_code == 400
    assert (await client.put("/api/v1/dataset/2/refresh")).json() == {"message": "OK"}
    related = (await client.get("/api/v1/dataset/2/related_objects")).json()
    assert related["charts"]["count"] == 7 and related["dashboards"]["count"] >= 2
    assert {"id", "slice_name", "viz_type"} == set(related["charts"]["result"][0])
    preview = await client.post("/api/v1/chart/data", json={
        "datasource": {"id": 2, "type": "table"},
        "queries": [{"columns": [], "metrics": [], "row_limit": 5}],
        "result_format": "json", "result_type": "samples"})
    result = preview.json()["result"][0]
    assert result["rowcount"] == 5 and result["colnames"][0] == "order_id"
    again = await client.post("/api/v1/chart/data", json={
        "datasource": {"id": 2, "type": "table"}, "queries": [{"row_limit": 5}]})
    assert again.json()["result"][0]["data"] == result["data"], "previews are deterministic"
    deleted = await client.delete("/api/v1/dataset/2")
    assert deleted.json() == {"message": "OK"}, "succeeds although charts use it"
    chart = (await client.get("/api/v1/chart/2")).json()["result"]
    assert chart["datasource_id"] == 2 and chart["datasource_uuid"] is None
    assert (await client.get("/api/v1/dataset/2")).status_code == 404


async def test_environments_differ_on_purpose(login) -> None:
    dev, staging, prod = await login("ss-dev"), await login("staging"), await login("prod")
    assert (await staging.get("/api/v1/dashboard/3")).status_code == 404
    prod3 = (await prod.get("/api/v1/dashboard/3")).json()["result"]
    dev3 = (await dev.get("/api/v1/dashboard/3")).json()["result"]
    assert prod3["uuid"] == dev3["uuid"] == stable_uuid("dashboard", "sales-overview")
    assert len(prod3["charts"]) == 4 < len(dev3["charts"])
    assert prod3["changed_on"] < dev3["changed_on"]
    counts = {}
    for name, client in (("ss-dev", dev), ("staging", staging), ("prod", prod)):
        listing = (await client.get("/api/v1/dashboard/", params={"q": "(page_size:100)"}))
        counts[name] = listing.json()["count"]
        assert (await client.get("/api/v1/chart/", params={"q": "(page_size:1)"})).json()[
            "count"] >= 40
        assert (await client.get("/api/v1/dataset/")).json()["count"] >= 10
    assert counts == {"ss-dev": 13, "staging": 11, "prod": 11}

"""The agent's tools against real Apache Superset 6.1.0 (two instances, dev and prod, CSRF
on), through the code path the agent uses: settings -> per-env clients with a service
login -> argument validation -> execution (timeouts, retry policy, truncation).

Every read tool runs once, every write is checked with a plain GET afterwards, a dashboard
moves from dev to prod, the offline model answers "list the dashboards" and renames a
dashboard after approval, and a contract test runs the same assertions on the demo server
and the real one at the level the model sees, so the demo cannot drift.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agent.errors import ToolInputError, ToolNotFound
from agent.tools.registry import ToolRegistry, select_tools
from storage import Database
from tests.agent.superset_support import Harness, make_harness
from tests.real_superset.tools_support import (
    SALES_DASHBOARD_SLUG,
    AdminRest,
    assert_shape,
    real_harness,
    unique,
)

real = pytest.mark.real_superset


@pytest.fixture
async def h(real_superset: dict[str, str], tmp_path: Path) -> AsyncIterator[Harness]:
    harness = real_harness(real_superset, tmp_path)
    yield harness
    await harness.clients.aclose()


async def ok(h: Harness, tool: str, env: str | None = "dev", **arguments: Any) -> Any:
    """Run like the loop does and return the JSON the model would read (not truncated)."""
    result = await h.run(tool, ctx_env=env, **arguments)
    assert result.ok, result.text
    assert not result.truncated, f"{tool}: use a smaller page so the whole result is seen"
    return json.loads(result.text)


# reads -------------------------------------------------------------------------------------


@real
async def test_dashboard_reads_of_the_seeded_dashboard(h: Harness, dev: AdminRest) -> None:
    seeded = await dev.get("dashboard", SALES_DASHBOARD_SLUG)
    assert seeded is not None
    listing = await ok(h, "list_dashboards", search="Sales Overview")
    assert seeded["id"] in [row["id"] for row in listing["dashboards"]]
    assert listing["count"] == len(listing["dashboards"])

    dash = await ok(h, "get_dashboard", dashboard_id=seeded["id"])
    assert (dash["title"], dash["uuid"], dash["slug"]) == (
        "Sales Overview", seeded["uuid"], SALES_DASHBOARD_SLUG)
    assert sorted(dash["charts"]) == ["Sales by region", "Sales count"]
    assert dash["owners"] == ["Admin User"]

    charts = await ok(h, "get_dashboard_charts", dashboard_id=seeded["id"])
    assert {(c["name"], c["viz_type"]) for c in charts["charts"]} == {
        ("Sales count", "big_number_total"), ("Sales by region", "table")}

    datasets = await ok(h, "get_dashboard_datasets", dashboard_id=seeded["id"])
    [sales] = datasets["datasets"]
    assert (sales["table_name"], sales["database"]) == ("sales", "sales")
    # Real Superset prunes `columns` here to those the charts use; the count is all of them.
    assert sales["columns"] == 5 and sales["metrics"] >= 1

    export = await ok(h, "export_dashboard", dashboard_id=seeded["id"])
    assert export["counts"] == {"dashboards": 1, "charts": 2, "datasets": 1, "databases": 1}
    assert {o["uuid"] for o in export["objects"] if o["kind"] == "dashboard"} == {dash["uuid"]}
    assert "metadata.yaml" in export["files"]
    assert h.clients.get("dev").auth.logins == 1, "one service login serves every call"


@real
async def test_dataset_and_chart_reads(h: Harness, dev: AdminRest) -> None:
    sales_id = (await dev.sales_dataset())["id"]
    listing = await ok(h, "list_datasets", search="sales")
    assert {"id": sales_id, "table_name": "sales", "database": "sales"}.items() <= next(
        row for row in listing["datasets"] if row["id"] == sales_id).items()

    detail = await ok(h, "get_dataset", dataset_id=sales_id)
    assert [c["name"] for c in detail["columns"]] == ["id", "sold_at", "product", "region",
                                                      "amount"]
    assert {"name": "count", "expression": "COUNT(*)"} in detail["metrics"]
    assert (detail["database"], detail["owners"]) == ("sales", ["Admin User"])

    usage = await ok(h, "get_dataset_usage", dataset_id=sales_id)
    assert {"Sales count", "Sales by region"} <= {c["name"] for c in usage["charts"]["items"]}
    assert "Sales Overview" in {d["title"] for d in usage["dashboards"]["items"]}
    assert usage["charts"]["count"] == len(usage["charts"]["items"])

    preview = await ok(h, "preview_dataset", dataset_id=sales_id, limit=3)
    assert preview["columns"] == ["id", "sold_at", "product", "region", "amount"]
    assert preview["row_count"] == 3 and preview["rows"][0]["region"] in {"EMEA", "AMER",
                                                                           "APAC"}

    charts = await ok(h, "list_charts", search="Sales count")
    row = next(c for c in charts["charts"] if c["name"] == "Sales count")
    assert row["viz_type"] == "big_number_total" and row["dashboards"] == ["Sales Overview"]


@real
async def test_preview_of_a_metadata_only_example_is_a_clear_tool_error(
    h: Harness, dev: AdminRest
) -> None:
    """`load-examples --only-metadata` leaves the example tables absent: the model gets
    Superset's reason as a tool error, nothing crashes and nothing is retried."""
    [example] = await dev.find("dataset", "table_name", "bart_lines")
    result = await h.run("preview_dataset", ctx_env="dev", dataset_id=example["id"])
    assert not result.ok and not result.retryable and not result.retry_exhausted
    assert result.text.startswith("Error: Superset (dev) rejected the request for preview")
    assert "no such table" in result.text


@real
async def test_environment_and_capability_tools(h: Harness,
                                                real_superset: dict[str, str]) -> None:
    envs = await ok(h, "list_environments")
    assert envs["environments"] == [
        {"name": "dev", "tier": "dev", "kind": "superset", "url": real_superset["dev"]},
        {"name": "prod", "tier": "prod", "kind": "superset", "url": real_superset["prod"]}]
    ctx = h.context("dev", role="viewer")
    ctx.offered = select_tools(ToolRegistry(h.tools.values()), role="viewer",
                               object_type="dashboard")
    spec = h.tools["show_capabilities"]
    caps = await spec.run(spec.args_schema(), ctx)
    assert caps["role"] == "viewer" and caps["environment"] == "dev"
    assert {t["risk"] for t in caps["tools"]} == {"read"}


# writes (CSRF on) --------------------------------------------------------------------------


@real
async def test_update_publish_and_delete_a_dashboard(h: Harness, dev: AdminRest) -> None:
    sales_id = (await dev.sales_dataset())["id"]
    title = unique("Tool test")
    dash_id, chart_id = await dev.dashboard_with_chart(title, sales_id)
    me = await dev.me()
    slug = title.lower().replace(" ", "-")

    updated = await ok(h, "update_dashboard", dashboard_id=dash_id, title=f"{title} v2",
                       slug=slug, owners=[me])
    assert updated["changed"] == ["dashboard_title", "owners", "slug"]
    after = await dev.get("dashboard", dash_id)
    assert after is not None
    assert (after["dashboard_title"], after["slug"], [o["id"] for o in after["owners"]]) == (
        f"{title} v2", slug, [me])

    assert (await ok(h, "set_dashboard_published", dashboard_id=dash_id,
                     published=True))["published"] is True
    assert (await dev.get("dashboard", dash_id) or {})["published"] is True

    with pytest.raises(ToolInputError, match="owners"):
        await h.call("update_dashboard", ctx_env="dev", dashboard_id=dash_id, owners=[99_999])
    with pytest.raises(ToolNotFound, match="999999"):
        await h.call("update_dashboard", ctx_env="dev", dashboard_id=999_999, title="x")

    deleted = await ok(h, "delete_dashboard", dashboard_id=dash_id)
    assert deleted == {"env": "dev", "deleted": dash_id, "title": f"{title} v2",
                       "charts_kept": 1, "note": deleted["note"]}
    assert await dev.get("dashboard", dash_id) is None
    assert await dev.get("chart", chart_id) is not None, "its chart stays"


@real
async def test_update_and_refresh_a_dataset(h: Harness, dev: AdminRest) -> None:
    name = unique("tool_test").replace(" ", "_")
    ds_id = await dev.virtual_dataset(name)
    me = await dev.me()

    result = await ok(h, "update_dataset", dataset_id=ds_id, description="Regional sales",
                      cache_timeout=120, owners=[me])
    assert result["changed"] == ["cache_timeout", "description", "owners"]
    after = await dev.get("dataset", ds_id) or {}
    assert (after["description"], after["cache_timeout"], [o["id"] for o in after["owners"]]
            ) == ("Regional sales", 120, [me])

    assert (await ok(h, "refresh_dataset_columns", dataset_id=ds_id))["refreshed"] is True
    refreshed = await dev.get("dataset", ds_id) or {}
    assert {c["column_name"] for c in refreshed["columns"]} == {"region", "product", "amount"}
    preview = await ok(h, "preview_dataset", dataset_id=ds_id, limit=2)
    assert preview["row_count"] == 2 and set(preview["rows"][0]) == {"region", "product",
                                                                     "amount"}


# migration between two real instances ------------------------------------------------------


@real
async def test_migrate_a_new_dashboard_from_dev_to_prod(
    real_superset: dict[str, str], tmp_path: Path, db: Database, dev: AdminRest,
    prod: AdminRest,
) -> None:
    h = real_harness(real_superset, tmp_path, db=db)
    try:
        await _migrate_and_check(h, dev, prod)
    finally:
        await h.clients.aclose()


def _kinds(objects: list[dict[str, Any]]) -> set[tuple[str, str]]:
    return {(o["kind"], o["name"]) for o in objects}


async def _migrate_and_check(h: Harness, dev: AdminRest, prod: AdminRest) -> None:
    table = unique("promo").replace(" ", "_")
    ds_id = await dev.virtual_dataset(table)
    title = unique("Promotion")
    dash_id, _ = await dev.dashboard_with_chart(title, ds_id)
    pair = {"dashboard_id": dash_id, "source_env": "dev", "target_env": "prod"}
    new = {("dashboard", title), ("chart", f"{title} chart"), ("dataset", table)}

    before = await ok(h, "compare_environments", None, **pair)
    assert {(o["kind"], o["name"]): o["status"] for o in before["objects"]} == {
        **dict.fromkeys(new, "missing"), ("database", "sales"): "same"}
    plan = await ok(h, "plan_migration", None, **pair)
    assert _kinds(plan["create"]) == new and plan["overwrite"] == []
    assert _kinds(plan["reuse"]) == {("database", "sales")}

    moved = await ok(h, "migrate_dashboard", None, **pair)
    assert moved["migrated"] and moved["created"] == plan["create"]
    target_id = moved["dashboard"]["target_id"]
    copy = await prod.get("dashboard", target_id) or {}
    assert (copy["dashboard_title"], copy["uuid"]) == (title, plan["dashboard"]["uuid"])
    prod_charts = await ok(h, "get_dashboard_charts", "prod", dashboard_id=target_id)
    assert [c["name"] for c in prod_charts["charts"]] == [f"{title} chart"]
    prod_datasets = await ok(h, "get_dashboard_datasets", "prod", dashboard_id=target_id)
    assert [(d["table_name"], d["database"]) for d in prod_datasets["datasets"]] == [
        (table, "sales")]
    for obj in plan["create"]:  # same uuids in prod, so the next promotion overwrites
        [row] = await prod.find(obj["kind"], "uuid", obj["uuid"])
        prod.adopt(obj["kind"], row["id"])

    again = await ok(h, "plan_migration", None, **pair)
    assert _kinds(again["overwrite"]) == {("dashboard", title)} and again["create"] == []
    after = await ok(h, "compare_environments", None, **pair)
    assert after["counts"] == {"missing": 0, "different": 0, "same": 4}, after
    history = await ok(h, "migration_history", None, dashboard_id=dash_id)
    [record] = history["migrations"]
    assert (record["status"], record["source_env"], record["target_env"],
            record["target_dashboard_id"], record["dashboard_title"]) == (
        "succeeded", "dev", "prod", target_id, title)


# one contract for the demo server and the real one, at the level the model sees ------------

@dataclass
class Side:
    h: Harness
    env: str
    target_env: str


@pytest.fixture(params=["demo", pytest.param("real", marks=real)])
def side(request: pytest.FixtureRequest, tmp_path: Path) -> Side:
    if request.param == "real":
        return Side(real_harness(request.getfixturevalue("real_superset"), tmp_path),
                    "dev", "prod")
    return Side(make_harness(tmp_path), "ss-dev", "prod")


@pytest.fixture
async def contract(side: Side) -> AsyncIterator[Side]:
    yield side
    await side.h.clients.aclose()
    if side.h.demo is not None:
        side.h.demo.close()


async def test_read_tools_give_the_model_the_same_shapes_on_demo_and_real(
    contract: Side
) -> None:
    h, env = contract.h, contract.env

    async def read(tool: str, ctx_env: str | None = env, **arguments: Any) -> Any:
        data = await ok(h, tool, ctx_env, **arguments)
        assert_shape(tool, data)
        return data

    dash_id = (await h.clients.get(env).get("dashboard", SALES_DASHBOARD_SLUG))["id"]
    listing = await read("list_dashboards", search="Sales Overview", page_size=5)
    assert dash_id in [row["id"] for row in listing["dashboards"]]
    dash = await read("get_dashboard", dashboard_id=dash_id)
    charts = await read("get_dashboard_charts", dashboard_id=dash_id)
    datasets = await read("get_dashboard_datasets", dashboard_id=dash_id)
    export = await read("export_dashboard", dashboard_id=dash_id)
    assert dash["chart_count"] == len(dash["charts"]) == charts["count"] == export["counts"][
        "charts"]
    assert datasets["count"] == export["counts"]["datasets"] == len(datasets["datasets"])
    assert [o["uuid"] for o in export["objects"] if o["kind"] == "dashboard"] == [dash["uuid"]]

    ds = datasets["datasets"][0]
    detail = await read("get_dataset", dataset_id=ds["id"])
    assert ds["columns"] == len(detail["columns"]) and ds["metrics"] == len(detail["metrics"])
    usage = await read("get_dataset_usage", dataset_id=ds["id"])
    assert dash_id in [d["id"] for d in usage["dashboards"]["items"]]
    preview = await read("preview_dataset", dataset_id=ds["id"], limit=3)
    assert preview["row_count"] == len(preview["rows"]) == 3
    assert set(preview["rows"][0]) <= set(preview["columns"])
    for tool in ("list_datasets", "list_charts"):
        page = await read(tool, page_size=5)
        assert len(page[tool.removeprefix("list_")]) == 5 <= page["count"]

    pair = {"dashboard_id": dash_id, "source_env": env, "target_env": contract.target_env}
    diff = await read("compare_environments", None, **pair)
    assert diff["dashboard"]["uuid"] == dash["uuid"] and diff["dashboard"]["target_id"]
    assert sum(diff["counts"].values()) == len(diff["objects"])
    plan = await read("plan_migration", None, **pair)
    assert plan["dry_run"] is True
    assert [o["uuid"] for o in plan["overwrite"]] == [dash["uuid"]]
    assert sum(plan["counts"].values()) == len(export["objects"])

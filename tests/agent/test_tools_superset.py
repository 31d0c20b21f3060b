"""Dashboard, dataset and chart tools against the bundled demo Superset, in-process: results
are compact and right, bad input gives clear errors and changes nothing in Superset."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from agent.errors import ToolAuthError, ToolInputError, ToolNotFound, TransientToolError
from agent.tools.datasets import related_objects
from tests.agent.superset_support import Harness, make_harness


@pytest.fixture
def h(tmp_path) -> Iterator[Harness]:
    harness = make_harness(tmp_path)
    yield harness
    harness.demo.close()


async def test_list_dashboards_has_the_count_and_compact_rows(h: Harness):
    result = await h.run("list_dashboards")
    assert result.ok and not result.truncated
    data = json.loads(result.text)
    assert data["count"] == len(h.demo.store.all("ss-dev", "dashboard"))
    first = data["dashboards"][0]
    assert set(first) <= {"id", "title", "slug", "published", "changed", "url", "owners"}
    assert "json_metadata" not in result.text and "position_json" not in result.text


async def test_list_search_filters_by_title(h: Harness):
    data = await h.call("list_dashboards", search="sales")
    assert data["count"] >= 1
    assert all("sales" in row["title"].lower() for row in data["dashboards"])


async def test_dashboard_detail_charts_datasets_and_export(h: Harness):
    dash = await h.call("get_dashboard", dashboard_id=1)
    assert dash["title"] and dash["uuid"] and dash["chart_count"] == len(dash["charts"])
    charts = await h.call("get_dashboard_charts", dashboard_id=1)
    assert charts["count"] == dash["chart_count"]
    datasets = await h.call("get_dashboard_datasets", dashboard_id=1)
    assert datasets["count"] >= 1 and all("table_name" in d for d in datasets["datasets"])
    export = await h.call("export_dashboard", dashboard_id=1)
    assert export["counts"]["dashboards"] == 1
    assert export["counts"]["charts"] == dash["chart_count"]
    assert export["counts"]["datasets"] == datasets["count"]
    assert any(f.startswith("dashboards/") for f in export["files"])
    assert {o["uuid"] for o in export["objects"] if o["kind"] == "dashboard"} == {dash["uuid"]}


async def test_dataset_tools(h: Harness):
    listing = await h.call("list_datasets", search="sales")
    ds_id = listing["datasets"][0]["id"]
    detail = await h.call("get_dataset", dataset_id=ds_id)
    assert detail["columns"] and detail["table_name"]
    usage = await h.call("get_dataset_usage", dataset_id=ds_id)
    assert usage["charts"]["count"] == len(usage["charts"]["items"]) >= 1
    assert usage == {"env": "ss-dev", "dataset_id": ds_id,
                     **await related_objects(h.clients.get("ss-dev"), ds_id)}
    preview = await h.call("preview_dataset", dataset_id=ds_id, limit=3)
    assert preview["row_count"] == 3 == len(preview["rows"])
    assert set(preview["rows"][0]) <= set(preview["columns"])


async def test_list_charts_and_the_env_argument_wins(h: Harness):
    dev = await h.call("list_charts", ctx_env="ss-dev")
    staging = await h.call("list_charts", ctx_env="ss-dev", env_id="staging")
    assert staging["env"] == "staging" and staging["count"] < dev["count"]


async def test_write_tools_change_superset(h: Harness):
    await h.call("update_dashboard", dashboard_id=2, title="Funnel v2", slug="funnel-v2")
    await h.call("set_dashboard_published", dashboard_id=2, published=False)
    dash = await h.call("get_dashboard", dashboard_id=2)
    assert (dash["title"], dash["slug"], dash["published"]) == ("Funnel v2", "funnel-v2", False)
    await h.call("update_dataset", dataset_id=2, description="Orders, cleaned", cache_timeout=60)
    assert (await h.call("get_dataset", dataset_id=2))["description"] == "Orders, cleaned"
    assert (await h.call("refresh_dataset_columns", dataset_id=2))["refreshed"] is True


async def test_delete_tools_report_what_they_removed(h: Harness):
    deleted = await h.call("delete_dashboard", dashboard_id=4)
    assert deleted["deleted"] == 4 and deleted["title"]
    with pytest.raises(ToolNotFound):
        await h.call("get_dashboard", dashboard_id=4)
    usage = await h.call("get_dataset_usage", dataset_id=5)
    gone = await h.call("delete_dataset", dataset_id=5)
    assert gone["orphaned_charts"] == usage["charts"]["count"]


# bad input: clear errors for the model, nothing changed in Superset -----------------------

@pytest.mark.parametrize(("tool", "arguments", "expected"), [
    ("get_dashboard", {"dashboard_id": "abc"}, "dashboard_id"),
    ("get_dashboard", {"dashboard_id": -3}, "dashboard_id"),
    ("get_dashboard", {}, "dashboard_id: Field required"),
    ("list_dashboards", {"page_size": -1}, "page_size"),
    ("list_dashboards", {"page_size": 1000}, "page_size"),
    ("list_dashboards", {"bogus": 1}, "bogus"),
    ("update_dashboard", {"dashboard_id": 1, "title": "T" * 10_240}, "title"),
    ("update_dashboard", {"dashboard_id": 1, "slug": "no spaces!"}, "slug"),
    ("set_dashboard_published", {"dashboard_id": 1, "published": "maybe"}, "published"),
    ("update_dataset", {"dataset_id": 1, "cache_timeout": -5}, "cache_timeout"),
    ("preview_dataset", {"dataset_id": 1, "limit": 0}, "limit"),
    ("list_charts", {"env_id": "no such/env"}, "env_id"),
])
async def test_invalid_arguments_are_clear_errors(h: Harness, tool, arguments, expected):
    before = h.state()
    result = await h.run(tool, **arguments)
    assert not result.ok and not result.retryable
    assert result.text.startswith(f"Error: Invalid arguments for {tool}")
    assert expected in result.text
    assert h.state() == before


@pytest.mark.parametrize(("tool", "arguments", "error", "text"), [
    ("get_dashboard", {"dashboard_id": 99_999}, ToolNotFound,
     "dashboard 99999 was not found in environment 'ss-dev'"),
    ("update_dashboard", {"dashboard_id": 99_999, "title": "x"}, ToolNotFound, "99999"),
    ("delete_dashboard", {"dashboard_id": 99_999}, ToolNotFound, "99999"),
    ("delete_dataset", {"dataset_id": 99_999}, ToolNotFound, "99999"),
    ("update_dataset", {"dataset_id": 99_999, "description": "x"}, ToolNotFound, "99999"),
    ("get_dataset_usage", {"dataset_id": 99_999}, ToolNotFound, "99999"),
    ("update_dashboard", {"dashboard_id": 1}, ToolInputError, "Nothing to change"),
    ("update_dataset", {"dataset_id": 1}, ToolInputError, "Nothing to change"),
    ("update_dashboard", {"dashboard_id": 1, "title": "x", "description": "d"}, ToolInputError,
     "cannot change a dashboard's description"),
])
async def test_unknown_ids_and_empty_updates_change_nothing(h: Harness, tool, arguments,
                                                            error, text):
    before = h.state()
    with pytest.raises(error, match=text):
        await h.call(tool, **arguments)
    assert h.state() == before


async def test_superset_side_validation_message_reaches_the_model(h: Harness):
    before = h.state()
    taken = (await h.call("get_dashboard", dashboard_id=1))["slug"]
    result = await h.run("update_dashboard", dashboard_id=2, slug=taken)
    assert not result.ok and "rejected" in result.text
    assert h.state() == before


@pytest.mark.parametrize(("env_id", "text"), [
    ("nowhere", "Unknown environment 'nowhere'. Known environments: ss-dev, staging, prod"),
    (None, "No Superset environment was given or selected"),
])
async def test_unknown_or_missing_environment_names_the_known_ones(h: Harness, env_id, text):
    result = await h.run("list_dashboards", ctx_env=env_id)
    assert not result.ok and text in result.text


async def test_demo_5xx_is_transient_and_not_retried_by_the_client(h: Harness):
    h.demo.set_faults("ss-dev", {"status": 503, "count": 1, "methods": ["GET"]})
    with pytest.raises(TransientToolError, match="HTTP 503"):
        await h.call("list_dashboards")
    assert (await h.call("list_dashboards"))["count"] >= 1  # the fault was used up by one call


async def test_role_limited_superset_user_surfaces_403(h: Harness):
    from agent.superset import ServiceAuth, SupersetClient

    gamma = SupersetClient("ss-dev", base_url=h.demo.base_url("ss-dev"),
                           transport=h.demo.transport(), auth=ServiceAuth("gamma", "gamma"))
    before = h.state()
    with pytest.raises(ToolAuthError):
        await gamma.delete("dashboard", 1, what="dashboard 1")
    assert h.state() == before
    await gamma.aclose()

"""Migration tools against the demo server: compare, plan (create before, overwrite after),
migrate ss-dev -> staging with charts and datasets, and the history on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agent.errors import ToolInputError, ToolNotFound
from storage import Database
from tests.agent.superset_support import Harness, make_harness

DRAFT = 3  # "Sales Overview": in ss-dev and prod, not in staging (demo seed)
DEV_ONLY = 13  # a dev-only dashboard on a dev-only dataset


@pytest.fixture
def h(tmp_path, db: Database) -> Iterator[Harness]:
    harness = make_harness(tmp_path, db=db)
    yield harness
    harness.demo.close()


def _uuids(plan: dict, key: str, kind: str) -> set[str]:
    return {obj["uuid"] for obj in plan[key] if obj["kind"] == kind}


async def test_plan_says_create_before_and_overwrite_after_migration(h: Harness):
    before = h.state()
    plan = await h.call("plan_migration", dashboard_id=DRAFT, source_env="ss-dev",
                        target_env="staging")
    assert h.state() == before  # a dry run
    assert plan["dry_run"] is True
    assert _uuids(plan, "create", "dashboard") == {plan["dashboard"]["uuid"]}
    assert plan["overwrite"] == []
    assert _uuids(plan, "create", "chart")  # the charts only this dashboard uses

    result = await h.call("migrate_dashboard", dashboard_id=DRAFT, source_env="ss-dev",
                          target_env="staging")
    assert result["migrated"] and result["dashboard"]["target_id"]
    assert result["created"] == plan["create"]

    again = await h.call("plan_migration", dashboard_id=DRAFT, source_env="ss-dev",
                         target_env="staging")
    assert _uuids(again, "overwrite", "dashboard") == {plan["dashboard"]["uuid"]}
    assert again["create"] == []


async def test_migrate_copies_the_dashboard_with_its_charts_and_datasets(h: Harness):
    source = await h.call("export_dashboard", dashboard_id=DEV_ONLY, ctx_env="ss-dev")
    wanted = {(o["kind"], o["uuid"]) for o in source["objects"]}
    staging_before = {(kind, row["uuid"]) for (env, kind), rows in h.state().items()
                      if env == "staging" for row in rows}
    assert ("dashboard", next(u for k, u in wanted if k == "dashboard")) not in staging_before
    assert any(k == "dataset" and (k, u) not in staging_before for k, u in wanted)

    result = await h.call("migrate_dashboard", dashboard_id=DEV_ONLY, source_env="ss-dev",
                          target_env="staging")
    target_id = result["dashboard"]["target_id"]
    copy = await h.call("export_dashboard", dashboard_id=target_id, ctx_env="staging")
    assert {(o["kind"], o["uuid"]) for o in copy["objects"]} == wanted
    charts = await h.call("get_dashboard_charts", dashboard_id=target_id, ctx_env="staging")
    assert charts["count"] == source["counts"]["charts"]
    datasets = await h.call("get_dashboard_datasets", dashboard_id=target_id,
                            ctx_env="staging")
    assert datasets["count"] == source["counts"]["datasets"]
    assert result["counts"]["create"] == len(result["created"]) >= 3


async def test_compare_reports_missing_then_same(h: Harness):
    diff = await h.call("compare_environments", dashboard_id=DRAFT, source_env="ss-dev",
                        target_env="staging")
    statuses = {o["uuid"]: o["status"] for o in diff["objects"]}
    assert statuses[diff["dashboard"]["uuid"]] == "missing"
    assert diff["counts"]["missing"] >= 1 and diff["dashboard"]["target_id"] is None
    assert diff["differs"] is True and next(iter(diff)) == "differs"  # first: survives a cut
    await h.call("migrate_dashboard", dashboard_id=DRAFT, source_env="ss-dev",
                 target_env="staging")
    after = await h.call("compare_environments", dashboard_id=DRAFT, source_env="ss-dev",
                         target_env="staging")
    assert after["counts"]["missing"] == 0
    dash = next(o for o in after["objects"] if o["kind"] == "dashboard")
    assert dash["status"] == "same"
    assert after["differs"] is (after["counts"]["different"] > 0)


async def test_compare_shows_what_differs_in_prod(h: Harness):
    diff = await h.call("compare_environments", dashboard_id=DRAFT, source_env="ss-dev",
                        target_env="prod")
    dash = next(o for o in diff["objects"] if o["kind"] == "dashboard")
    assert dash["status"] == "different"
    fields = {d["field"] for d in dash["differences"]}
    assert fields & {"published", "metadata", "position"}


async def test_history_records_migrations_newest_first(h: Harness):
    empty = await h.call("migration_history")
    assert empty == {"count": 0, "migrations": []}
    await h.call("migrate_dashboard", dashboard_id=DRAFT, source_env="ss-dev",
                 target_env="staging")
    await h.call("migrate_dashboard", dashboard_id=DEV_ONLY, source_env="ss-dev",
                 target_env="staging")
    history = await h.call("migration_history")
    assert history["count"] == 2
    newest, oldest = history["migrations"]
    assert (newest["dashboard_id"], oldest["dashboard_id"]) == (DEV_ONLY, DRAFT)
    assert newest["status"] == "succeeded" and newest["user"] == "demo-admin"
    assert newest["source_env"] == "ss-dev" and newest["target_env"] == "staging"
    only = await h.call("migration_history", dashboard_id=DRAFT, limit=5)
    assert [m["dashboard_id"] for m in only["migrations"]] == [DRAFT]


async def test_failed_import_is_recorded_and_changes_nothing(h: Harness):
    await h.call("list_dashboards", ctx_env="staging")  # log in first: login is a POST too
    before = h.state()
    h.demo.set_faults("staging", {"status": 422, "count": 1, "methods": ["POST"]})
    result = await h.run("migrate_dashboard", dashboard_id=DRAFT, source_env="ss-dev",
                         target_env="staging")
    assert not result.ok and not result.retryable
    assert h.state() == before
    history = await h.call("migration_history")
    assert history["migrations"][0]["status"] == "failed"


@pytest.mark.parametrize(("arguments", "error", "text"), [
    ({"dashboard_id": DRAFT, "source_env": "ss-dev", "target_env": "ss-dev"}, ToolInputError,
     "the same environment"),
    ({"dashboard_id": DRAFT, "source_env": "ss-dev", "target_env": "mars"}, ToolInputError,
     "Unknown environment 'mars'. Known environments: ss-dev, staging, prod"),
    ({"dashboard_id": 99_999, "source_env": "ss-dev", "target_env": "staging"}, ToolNotFound,
     "99999"),
])
@pytest.mark.parametrize("tool", ["migrate_dashboard", "plan_migration", "compare_environments"])
async def test_bad_migration_requests_change_nothing(h: Harness, tool, arguments, error, text):
    before = h.state()
    with pytest.raises(error, match=text):
        await h.call(tool, **arguments)
    assert h.state() == before

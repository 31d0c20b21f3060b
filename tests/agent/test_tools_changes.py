"""`recent_changes` (issue 13, item 7): one object's changes from the app's own records (the
audit log and the migration history), on SQLite and PostgreSQL, showing a person only what
the audit panel would show them."""

from __future__ import annotations

from typing import Any

import pytest

from agent.identity import Identity
from agent.settings import EnvironmentConfig, Settings
from agent.tools.changes import CHANGE_TOOLS, RecentChangesArgs
from agent.tools.registry import ToolContext, ToolServices
from storage import Database, migrations_log
from storage import audit as audit_repo

_TOOL = CHANGE_TOOLS[0]


def _seed(db: Database) -> None:
    with db.session() as session:
        for user, tool, args, env, action in [
            ("alice", "update_dashboard", {"dashboard_id": 3, "title": "Q4"}, "ss-dev",
             "executed"),
            ("bob", "set_dashboard_published", {"dashboard_id": 3, "published": True},
             "ss-dev", "executed"),
            ("alice", "delete_dashboard", {"dashboard_id": 3}, "ss-dev", "approved"),
            ("alice", "update_dashboard", {"dashboard_id": 4, "title": "Other"}, "ss-dev",
             "executed"),
            ("alice", "update_dashboard", {"dashboard_id": 3, "title": "Prod"}, "prod",
             "executed"),
            ("alice", "update_dataset", {"dataset_id": 3, "cache_timeout": 60}, "ss-dev",
             "executed"),
        ]:
            audit_repo.append_entry(session=session, user_id=user, role="admin", action=action,
                                    tool=tool, args=args, env_id=env, outcome="succeeded")
        migrations_log.record_migration(session=session, user_id="alice", source_env="ss-dev",
                                        target_env="prod", dashboard_id=3, status="succeeded",
                                        target_dashboard_id=3)
        migrations_log.record_migration(session=session, user_id="bob", source_env="staging",
                                        target_env="ss-dev", dashboard_id=9, status="failed",
                                        target_dashboard_id=3, error="boom")


def _settings(db: Database, *, demo: bool) -> Settings:
    envs = [] if demo else [EnvironmentConfig(name="ss-dev", base_url="http://127.0.0.1:9",
                                              tier="dev")]
    return Settings(database_url=db.url, **({"superset_environments": envs} if envs else {}))


async def _changes(db: Database, who: Identity, *, demo: bool, **args: Any) -> dict[str, Any]:
    ctx = ToolContext(identity=who, settings=_settings(db, demo=demo), env_id="ss-dev",
                      services=ToolServices(db=db))
    return await _TOOL.run(RecentChangesArgs(**args), ctx)


@pytest.mark.parametrize("demo", [False, True])
async def test_an_admin_outside_the_demo_sees_everyones_changes_inside_it_only_their_own(
        db: Database, demo: bool) -> None:
    _seed(db)
    result = await _changes(db, Identity("alice", "Alice", "admin"), demo=demo, object_id=3)
    seen = [(c["source"], c["tool"], c["user"]) for c in result["changes"]]
    expected = [("migration history", "migrate_dashboard", "bob"),
                ("migration history", "migrate_dashboard", "alice"),
                ("audit log", "set_dashboard_published", "bob"),
                ("audit log", "update_dashboard", "alice")]
    assert sorted(seen) == sorted(e for e in expected if not demo or e[2] == "alice")
    assert result["env"] == "ss-dev" and result["count"] == len(seen)
    assert ("your own" in result["scope"]) is demo
    title_change = next(c for c in result["changes"] if c["tool"] == "update_dashboard")
    assert title_change["changes"] == {"title": "Q4"} and title_change["outcome"] == "succeeded"


async def test_a_viewer_sees_only_their_own_changes_even_outside_the_demo(db: Database) -> None:
    _seed(db)
    result = await _changes(db, Identity("bob", "Bob", "viewer"), demo=False, object_id=3)
    assert {c["user"] for c in result["changes"]} == {"bob"}
    assert {c["tool"] for c in result["changes"]} == {"set_dashboard_published",
                                                      "migrate_dashboard"}


async def test_other_objects_environments_and_undone_decisions_are_left_out(
        db: Database) -> None:
    _seed(db)
    admin = Identity("alice", "Alice", "admin")
    dataset = await _changes(db, admin, demo=False, object_type="dataset", object_id=3)
    assert [c["tool"] for c in dataset["changes"]] == ["update_dataset"]
    prod = await _changes(db, admin, demo=False, object_id=3, env_id="prod")
    assert [(c["tool"], c["changes"].get("title")) for c in prod["changes"]] == [
        ("migrate_dashboard", None), ("update_dashboard", "Prod")]
    limited = await _changes(db, admin, demo=False, object_id=3, limit=1)
    assert limited["count"] == 1 and limited["changes"][0]["source"] == "migration history"

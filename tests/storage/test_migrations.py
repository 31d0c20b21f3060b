"""Schema migrations (issue 14, item 3): the revisions are the schema, checked against the
models; a database the previous release made upgrades with nothing lost; replicas that
start together migrate once; `python -m storage` does the same by hand.

The previous release's databases are files made by that release's code
(`tests/fixtures/previous_release/make.py`, run from a checkout of it)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Column, Integer, MetaData, Table, create_engine, text
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import SQLModel

from runtime import build_runtime
from storage import Database, migrate
from storage import conversations as repo
from storage.migrations import HEAD
from tests.fakes.runs import all_rows, collect, table_columns

PREVIOUS = Path(__file__).resolve().parent.parent / "fixtures" / "previous_release"
ROOT = Path(__file__).resolve().parents[2]


def _differences(db: Database, metadata: MetaData = SQLModel.metadata) -> list:
    with db.engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        return compare_metadata(context, metadata)


def test_the_migrations_make_exactly_the_models_schema(db: Database) -> None:
    """Fails when a model changes without a revision (run `alembic revision --autogenerate`
    through `storage.migrate`'s configuration, see the README)."""
    assert migrate.current(db.engine) == migrate.head()
    assert _differences(db) == []


def test_the_head_the_app_checks_at_start_is_the_newest_revision() -> None:
    assert migrate.head() == HEAD


def test_the_schema_check_sees_a_model_the_migrations_lack(db: Database) -> None:
    extra = MetaData()
    for table in SQLModel.metadata.sorted_tables:
        table.to_metadata(extra)
    Table("messages", extra, Column("added_later", Integer), extend_existing=True)
    assert [diff[0] for diff in _differences(db, extra)] == ["add_column"]


def test_the_audit_log_stays_append_only_under_migrations(db: Database) -> None:
    with db.engine.begin() as conn:
        conn.execute(text("INSERT INTO audit_log (at, user_id, role, action, tool, outcome) "
                          "VALUES (CURRENT_TIMESTAMP, 'u', 'admin', 'approved', 't', '')"))
    for statement in ("DELETE FROM audit_log", "UPDATE audit_log SET outcome = 'x'"):
        with pytest.raises(SQLAlchemyError, match="append-only"), db.engine.begin() as conn:
            conn.execute(text(statement))


def _previous_release(database_url: str) -> None:
    """Put the previous release's database where `database_url` points."""
    if database_url.startswith("sqlite"):
        shutil.copyfile(PREVIOUS / "agent.sqlite", database_url.removeprefix("sqlite:///"))
        return
    schema = database_url.rsplit("%3D", 1)[1]
    dump = (PREVIOUS / "agent_postgresql.sql").read_text().replace("__SCHEMA__", schema)
    engine = create_engine(database_url)
    with engine.begin() as conn:
        conn.exec_driver_sql(dump)  # no parameters: psycopg sends it as one simple query
    engine.dispose()


async def test_a_database_of_the_previous_release_upgrades_with_nothing_lost(
        database_url: str, settings) -> None:  # type: ignore[no-untyped-def]
    _previous_release(database_url)
    legacy = Database(database_url)
    assert migrate.current(legacy.engine) is None  # made by create_all: no alembic_version
    before, columns = all_rows(legacy), table_columns(legacy)
    assert before["audit_log"] and before["side_question_requests"] and before["messages"]

    legacy.create_schema()
    assert migrate.current(legacy.engine) == migrate.head()
    after = all_rows(legacy, columns)  # the columns there were: unchanged
    assert {name: rows for name, rows in after.items() if name in before} == before
    added = all_rows(legacy)  # tables that revisions added since come empty
    assert {name: rows for name, rows in added.items() if name not in before} == {
        name: [] for name in added if name not in before}
    assert _differences(legacy) == []
    with legacy.engine.connect() as conn:  # each message counter starts at the newest seq
        counters = conn.execute(text(
            "SELECT c.last_seq, (SELECT max(m.seq) FROM messages m "
            "WHERE m.conversation_id = c.id) FROM conversations c")).all()
    assert counters and all(last == (newest or 0) for last, newest in counters)
    legacy.dispose()

    rt = build_runtime(settings)  # the app on the upgraded database: the next turn works
    try:
        identity, token = rt.issuer.mint_demo("admin")  # demo-admin, the fixture's owner
        live = await rt.agent.start_turn(message="what can you do?", conv_id="conv-previous",
                                         user_id=identity.user_id, user_jwt=token,
                                         env_id="ss-dev", uicontext_str=None)
        assert (await collect(live))[-1]["status"] == "completed"
        with rt.db.session() as session:
            said = [row.content for row in repo.list_messages(
                session=session, conversation_id="conv-previous") if row.role == "user"]
        assert said == ["list the dashboards", "publish dashboard 1", "what can you do?"]
    finally:
        await rt.aclose()


def test_replicas_starting_together_migrate_once(database_url: str) -> None:
    """Without the lock, the second CREATE TABLE fails on PostgreSQL ("already exists")."""
    replicas = [Database(database_url) for _ in range(3)]
    start = threading.Barrier(len(replicas))
    failures: list[BaseException] = []

    def boot(replica: Database) -> None:
        start.wait()
        try:
            replica.create_schema()
        except BaseException as exc:  # collected for the assertion
            failures.append(exc)

    threads = [threading.Thread(target=boot, args=(replica,)) for replica in replicas]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads), "a replica never finished"
    assert failures == []
    with replicas[0].engine.connect() as conn:
        assert conn.execute(text("SELECT version_num FROM alembic_version")).all() == [
            (migrate.head(),)]
    for replica in replicas:
        replica.dispose()


def _storage_cli(database_url: str, *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "storage", *args], cwd=ROOT, text=True,
                          capture_output=True, timeout=120,
                          env={**os.environ, "DATABASE_URL": database_url})
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_python_m_storage_upgrades_reports_and_downgrades(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/cli.db"
    head = migrate.head()
    assert _storage_cli(url, "current") == f"none (head {head})"
    assert _storage_cli(url, "upgrade") == f"{head} (head {head})"
    assert _storage_cli(url, "downgrade", "base") == f"none (head {head})"
    engine = create_engine(url)
    with engine.connect() as conn:
        left = conn.execute(text("SELECT name FROM sqlite_master WHERE type = 'table'")).all()
    engine.dispose()
    assert left == [("alembic_version",)]

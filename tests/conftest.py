"""Shared fixtures: offline defaults, and a database on SQLite and on PostgreSQL.

Storage-touching tests take the `db` fixture and run once per backend. PostgreSQL tests
use a fresh schema each (search_path), so they neither see nor leave other tests' rows.
Where PostgreSQL is unreachable they are skipped, except under CI=true, where that is a
failure: CI must exercise PostgreSQL.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from agent.settings import apply_offline_defaults

apply_offline_defaults()

from sqlalchemy import create_engine, text  # noqa: E402

from storage import Database  # noqa: E402

POSTGRES_URL = os.environ.get(
    "TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)
BACKENDS = ["sqlite", "postgresql"]


def _postgres_available() -> str | None:
    try:
        engine = create_engine(POSTGRES_URL, connect_args={"connect_timeout": 3})
        with engine.connect() as conn:
            conn.execute(text("select 1"))
        engine.dispose()
        return None
    except Exception as exc:  # any failure to connect means "not available here"
        return f"{type(exc).__name__}: {exc}"[:300]


_PG_PROBLEM: list[str | None] = []


def postgres_problem() -> str | None:
    if not _PG_PROBLEM:
        _PG_PROBLEM.append(_postgres_available())
    return _PG_PROBLEM[0]


@contextmanager
def postgres_schema() -> Iterator[str]:
    """A URL whose connections use a fresh, private PostgreSQL schema, dropped afterwards."""
    problem = postgres_problem()
    if problem:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"PostgreSQL is required under CI=true but unreachable: {problem}")
        pytest.skip(f"PostgreSQL unreachable: {problem}")
    schema = f"t_{uuid.uuid4().hex[:12]}"
    admin = create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    sep = "&" if "?" in POSTGRES_URL else "?"
    try:
        yield f"{POSTGRES_URL}{sep}options=-csearch_path%3D{schema}"
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture
def postgres_schema_url() -> Iterator[str]:
    with postgres_schema() as url:
        yield url


@pytest.fixture(params=BACKENDS)
def database_url(request: pytest.FixtureRequest, tmp_path) -> str:  # type: ignore[no-untyped-def]
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/test.db"
    return request.getfixturevalue("postgres_schema_url")


@pytest.fixture
def db(database_url: str) -> Iterator[Database]:
    database = Database(database_url)
    database.create_schema()
    yield database
    database.dispose()


@pytest.fixture
def settings(database_url: str, tmp_path):  # type: ignore[no-untyped-def]
    from agent.settings import Settings

    return Settings(database_url=database_url, data_dir=tmp_path / "data",
                    auth_jwt_secret="test-secret-" + "x" * 32)


@pytest.fixture
def runtime(settings):  # type: ignore[no-untyped-def]
    from runtime import build_runtime

    rt = build_runtime(settings)
    yield rt
    rt.close()


@pytest.fixture(scope="session")
def litellm_loaded() -> None:
    """Import litellm once, without a bound: the first model call of a process otherwise
    imports it (30 s to minutes on a loaded 2-core machine), and a test's bounded wait for
    an event would measure that import instead of the app. Fixtures of model servers take
    this one."""
    import litellm  # noqa: F401


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The suite runs on three pytest-xdist workers (`--dist loadgroup`, pyproject): tests
    that share expensive fixtures stay on one worker, so nothing starts twice. A module's
    tests share its app server and browser (module scope); every real-Superset test shares
    the session's Superset instances. First among the hooks: xdist's worker reads the
    groups in its own hook of this name, which otherwise ran before these were added (the
    modules' tests were split and each half started its own server)."""
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        group = "real_superset" if path.startswith("tests/real_superset/") else path
        item.add_marker(pytest.mark.xdist_group(group))

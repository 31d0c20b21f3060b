"""Honest records after a crash (issue 12): `python app.py` killed with -9 (or stopped with
SIGTERM) in the middle of an answer or of an approved write, then started again as the same
replica. Real processes, a real SQLite database and the bundled demo Superset, whose
`hold_after_ms` fault commits a write and then holds its answer, as a slow proxy would.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from gradio_client import Client

from agent.run_leases import BUSY, INTERRUPTED_MARK
from tests.fakes.gradio_api import api_client
from tests.web.conftest import free_port

ROOT = Path(__file__).resolve().parent.parent
HOLD = {"prod": {"count": 0, "methods": ["DELETE"], "hold_after_ms": 60_000}}


class App:
    """One `python app.py` process on a fixed port, data directory and replica name."""

    def __init__(self, tmp: Path, **env: str) -> None:
        self.tmp = tmp
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {**os.environ, "GRADIO_SERVER_PORT": str(self.port),
                    "DATABASE_URL": f"sqlite:///{tmp}/agent.db", "DATA_DIR": str(tmp / "data"),
                    "SIDE_REPLICA_NAME": "crash-test", "SIDE_STALE_AFTER_S": "2", **env}
        self.process: subprocess.Popen[str] | None = None

    def start(self, **env: str) -> App:
        self.process = subprocess.Popen(
            [sys.executable, "app.py"], cwd=ROOT, env={**self.env, **env},
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)
        until(lambda: self._serves(), 90, "python app.py did not serve /agent")
        return self

    def _serves(self) -> bool:
        assert self.process is not None and self.process.poll() is None, "app.py exited"
        try:
            return httpx.get(f"{self.url}/agent/", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def kill(self, sig: int = signal.SIGKILL) -> None:
        assert self.process is not None
        self.process.send_signal(sig)
        self.process.wait(timeout=60)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)

    def client(self) -> Client:
        return api_client(f"{self.url}/agent", download_files=False)

    def token(self, user: str) -> tuple[str, str]:
        body = httpx.post(f"{self.url}/api/demo/token", json={"user": user}, timeout=10).json()
        return body["user_id"], body["user_jwt"]

    def rows(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        with sqlite3.connect(self.tmp / "agent.db", timeout=10) as db:
            return db.execute(sql, args).fetchall()

    def dashboard_exists(self, env: str, pk: int) -> bool:
        with sqlite3.connect(self.tmp / "data" / "demo_superset.db", timeout=10) as db:
            return bool(db.execute("SELECT 1 FROM objects WHERE env=? AND kind='dashboard' "
                                   "AND id=?", (env, pk)).fetchall())


def until(check: Callable[[], Any], timeout_s: float, message: str) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(message)


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    process = App(tmp_path)
    yield process
    process.stop()


def test_kill_mid_answer_keeps_the_partial_answer_marked_interrupted(app: App) -> None:
    app.start(OFFLINE_TOKEN_DELAY_MS="60")
    user = app.token("viewer")
    client = app.client()  # held: a collected client would cancel the job, and the run
    job = client.submit("what can you do?", None, "crash-answer", *user, "ss-dev",
                        api_name="/agent_handler")
    partial = until(lambda: (app.rows("SELECT partial FROM run_leases") or [("",)])[0][0],
                    60, "no heartbeat carried the streamed answer")
    app.kill()
    del job

    app.start()  # the same replica: its dead run ends at once
    (status,) = app.rows("SELECT status FROM runs WHERE conversation_id='crash-answer'")
    assert status == ("interrupted",)
    (last,) = app.rows("SELECT content, meta FROM messages WHERE conversation_id="
                       "'crash-answer' ORDER BY seq DESC LIMIT 1")
    assert last[0].startswith(partial.strip()) and last[0].endswith(INTERRUPTED_MARK)
    assert json.loads(last[1]) == {"status": "interrupted"}
    assert app.rows("SELECT * FROM run_leases") == []
    _, events = app.client().predict("which environments are there?", None, "crash-answer",
                                     *user, "ss-dev", api_name="/agent_handler")
    assert events[-1]["status"] == "completed"  # the conversation is free again


def _approve_a_delete_and_wait_until_it_landed(app: App, pk: int, user: tuple[str, str]
                                               ) -> tuple[str, str, Any]:
    client = app.client()
    context = json.dumps({"objectType": "dashboard", "objectId": pk, "envId": "prod"})
    conv = f"crash-write-{pk}"
    _, events = client.predict(f"delete dashboard {pk}", None, conv, *user, "prod", context,
                               api_name="/agent_handler")
    card = next(e for e in events if e["type"] == "confirm_required")
    # The dangerous-action countdown is the page's; the API takes the decision at once.
    app.job = client.submit(conv, *user, card["confirmation_id"], "approve",  # type: ignore[attr-defined]
                            api_name="/confirm_tool")  # held, so the client keeps it open
    until(lambda: app.rows("SELECT 1 FROM audit_log WHERE action='executing' AND call_id=?",
                           card["call_id"]), 60, "the write never started")
    until(lambda: not app.dashboard_exists("prod", pk), 60, "the write never landed")
    return conv, card["call_id"], card["confirmation_id"]


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["kill-9", "sigterm"])
def test_a_write_in_flight_at_a_crash_is_recorded_as_status_unknown(app: App,
                                                                     sig: int) -> None:
    app.start(DEMO_FAULTS=json.dumps(HOLD))
    user = app.token("admin")  # its secret lives in DATA_DIR: valid after the restart too
    conv, call_id, confirmation_id = _approve_a_delete_and_wait_until_it_landed(app, 5, user)
    app.kill(sig)  # SIGTERM: the held answer outlasts uvicorn's 5 s grace

    app.start()
    (result,) = app.rows("SELECT content, meta FROM messages WHERE tool_call_id=?", call_id)
    assert result[0].startswith("Error: status unknown") and "check Superset" in result[0]
    assert json.loads(result[1])["status"] == "unknown"
    actions = app.rows("SELECT action, outcome FROM audit_log WHERE confirmation_id=? "
                       "ORDER BY id", confirmation_id)
    assert [a for a, _ in actions] == ["approved", "executing", "executed"]
    assert "status unknown" in actions[-1][1]
    (outcome,) = app.rows("SELECT outcome FROM confirmations WHERE id=?", confirmation_id)
    assert "status unknown" in outcome[0]
    assert app.rows("SELECT status FROM runs WHERE conversation_id=? AND status='running'",
                    conv) == []
    with pytest.raises(Exception, match="already approved"):  # nothing runs twice
        app.client().predict(conv, *user, confirmation_id, "approve", api_name="/confirm_tool")


def test_two_app_processes_on_one_postgresql_run_one_turn_per_conversation(
        tmp_path: Path, postgres_schema_url: str) -> None:
    """Two replicas (`python app.py` twice) on one PostgreSQL, the same turn sent to both
    at once: exactly one runs; the other is told the conversation is busy."""
    shared = {"DATABASE_URL": postgres_schema_url, "AUTH_JWT_SECRET": "replicas-" + "r" * 32,
              "OFFLINE_TOKEN_DELAY_MS": "30"}
    one = App(tmp_path / "one", **shared, SIDE_REPLICA_NAME="one")
    two = App(tmp_path / "two", **shared, SIDE_REPLICA_NAME="two")
    try:
        one.start()
        two.start()
        user = one.token("editor")  # one secret: the token is valid on both replicas
        jobs = [app.client().submit("what can you do?", None, "both", *user, "ss-dev",
                                    api_name="/agent_handler") for app in (one, two)]
        outcomes: list[str] = []
        for job in jobs:
            try:
                outcomes.append(job.result(timeout=120)[1][-1]["status"])
            except Exception as exc:  # the refused replica's answer
                outcomes.append(str(exc))
        assert sorted(outcomes) == sorted(["completed", BUSY]), outcomes
    finally:
        one.stop()
        two.stop()

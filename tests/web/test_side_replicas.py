"""Side questions across replicas (SPEC §9): two real `python app.py` processes on one
PostgreSQL database. A question submitted on A streams to completion from B's SSE route,
and one-running-per-parent holds across both (B answers 409 busy while A's runs).

PostgreSQL only: replicas sharing SQLite is not a supported deployment. Under CI=true the
`postgres_schema()` context manager fails instead of skipping.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import postgres_schema
from tests.fakes.gradio_api import api_client
from tests.test_app_process import app_process
from tests.web.conftest import free_port
from tests.web.side_support import LONG_SIDE, MAIN_QUESTION, SHORT_SIDE, auth, sse_events

# Slow tokens: the long side answer takes seconds, so B can try to submit while it runs.
TOKEN_DELAY_MS = "40"
TIMEOUT = httpx.Timeout(10.0, read=30.0)  # read: the longest gap between two SSE lines


@pytest.fixture
def replicas(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, str]]:
    """Two app processes (A, B) on one private PostgreSQL schema and one token secret."""
    # app_process copies os.environ when it starts a process, so both replicas get these.
    monkeypatch.setenv("OFFLINE_TOKEN_DELAY_MS", TOKEN_DELAY_MS)
    monkeypatch.setenv("AUTH_JWT_SECRET", "replica-test-secret-" + "z" * 32)
    with contextlib.ExitStack() as stack:
        url = stack.enter_context(postgres_schema())
        a = stack.enter_context(app_process(url, tmp_path / "a", free_port()))
        b = stack.enter_context(app_process(url, tmp_path / "b", free_port()))
        yield a, b


def _main_turn(url: str, user_id: str, token: str) -> str:
    """One real agent turn on `url`, so the parent has a snapshot; returns its id."""
    client = api_client(f"{url}/agent/")
    try:
        _, events = client.predict(MAIN_QUESTION, None, "", user_id, token, "ss-dev", None,
                                   api_name="/agent_handler")
    finally:
        client.close()
    assert events[-1]["status"] == "completed"
    return events[0]["conv_id"]


def test_submit_on_one_replica_stream_from_the_other(replicas: tuple[str, str]) -> None:
    a, b = replicas
    who = httpx.post(f"{a}/api/demo/token", json={"user": "editor"}, timeout=10).json()
    headers = auth(who["user_jwt"])
    conv_id = _main_turn(a, who["user_id"], who["user_jwt"])
    side = f"/api/conversations/{conv_id}/side-questions"

    with httpx.Client(base_url=a, timeout=TIMEOUT) as on_a, \
            httpx.Client(base_url=b, timeout=TIMEOUT) as on_b:
        submitted = on_a.post(side, json={"question": LONG_SIDE}, headers=headers)
        assert submitted.status_code == 202, submitted.text
        request_id = submitted.json()["id"]

        sequences: list[int] = []
        answers: list[str] = []
        busy: httpx.Response | None = None
        with on_b.stream("GET", f"/api/side-questions/{request_id}/events",
                         headers=headers) as stream:
            assert stream.status_code == 200
            for event in sse_events(stream):
                assert event.event == "message", event  # not "cleared"
                state = event.data
                assert state["id"] == request_id
                sequences.append(event.id)
                answers.append(state["answer"] or "")
                if busy is None and state["status"] == "running" and state["answer"]:
                    # A's question is streaming: B must see the parent as busy.
                    busy = on_b.post(side, json={"question": SHORT_SIDE}, headers=headers)
                if state["status"] != "running":
                    break

        assert busy is not None, "the answer never streamed while running"
        assert busy.status_code == 409 and busy.headers["x-error-code"] == "busy", busy.text
        assert state["status"] == "completed", state
        assert all(x < y for x, y in itertools.pairwise(sequences)), sequences
        assert len(answers) >= 3, "B saw no intermediate answers"
        assert all(later.startswith(earlier) for earlier, later in
                   itertools.pairwise(answers)), "the cumulative answer shrank or changed"
        assert len(answers[-1]) > len(answers[0])

        history = on_a.get(side, headers=headers).json()
        assert history["running"] is None
        newest = history["items"][0]
        assert newest["id"] == request_id and newest["status"] == "completed"
        assert newest["answer"] == state["answer"]
        # the busy attempt left no row behind
        assert [item["id"] for item in history["items"]] == [request_id]

"""What each conversation leaves in the server stays bounded (issue 16, item 7; not timed).

Measured before: per new visitor, one Gradio session holding its own ~190 KB copy of this
page's config and the last value of every output, and one finished run held for five
minutes together with its task, whose context held the request that started it (and that
request's connection and socket). Here: Gradio's session table keeps at most
UI_SESSION_CAPACITY sessions, none with the deep-link copy; a finished run lets its task
go, and the run table keeps at most MAX_FINISHED_RUNS finished runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI
from starlette.routing import Mount

from agent import run_host
from tests.fakes.gradio_api import api_client
from tests.web.conftest import LiveServer, sqlite_server
from web.gradio_sessions import LeanSessionState

CAPACITY = 4
VISITORS = 10


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    yield from sqlite_server(tmp_path_factory, ui_session_capacity=CAPACITY,
                             runs_burst_per_user=1000, runs_per_minute_per_user=1000)


def _gradio_app(server: LiveServer) -> Any:
    app: FastAPI = server.server.config.app  # type: ignore[assignment]
    while not isinstance(app, FastAPI):  # the middlewares around it
        app = app.app  # type: ignore[attr-defined]
    return next(route.app for route in app.routes
                if isinstance(route, Mount) and isinstance(route.app, FastAPI))


def test_sessions_and_finished_runs_stay_bounded(live_server: LiveServer,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(run_host, "MAX_FINISHED_RUNS", 3)
    client = api_client(live_server.agent_url, download_files=False)
    for _ in range(VISITORS):  # each a new tab (session) and visitor, one turn each
        client.reset_session()
        user_id, token = live_server.token("viewer")
        _, events = client.predict("which environments are there?", None, "", user_id, token,
                                   "ss-dev", api_name="/agent_handler")
        assert events[-1]["status"] == "completed"
    client.close()

    # Gradio's queue keeps at most 100 event records and never summarises them with
    # pandas (it did after every event, for a monitoring page the app does not enable)
    queue = _gradio_app(live_server).get_blocks()._queue
    assert queue.events_recorded >= VISITORS and queue.event_count_at_last_cache == 0
    assert len(queue.event_analytics) <= 100

    sessions = _gradio_app(live_server).state_holder.session_data
    assert 0 < len(sessions) <= CAPACITY
    for state in sessions.values():
        assert isinstance(state, LeanSessionState)
        assert state.config_values == {}  # no copy of the page, no chat kept per session

    runs = live_server.runtime.agent.runs._live
    assert len(runs) <= 3 + 1  # forgotten at each launch: the cap, plus the newest
    assert all(live.task is None for live in runs.values() if live.finished.is_set())

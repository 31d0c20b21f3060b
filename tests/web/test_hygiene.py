"""Request hygiene at the HTTP boundary, against real app servers: bodies over the limit
stop while being read (chunked too), errors never echo what was sent, NaN and non-UTF-8
bodies are clear 4xx, raw Gradio calls with the wrong shape are a plain 422 that logs
nothing, and nobody can skip the queue (`/gradio_api/run/...`) past its concurrency limit."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agent.settings import Settings
from tests.fakes.openai_server import ScriptedOpenAIServer
from tests.fakes.runs import scripted_settings
from tests.waits import EVENT_WAIT_S
from tests.web.conftest import LiveServer, start_server

TIMEOUT = 60


def _chunks(total: int, size: int = 65536) -> Iterator[bytes]:
    for _ in range(total // size):
        yield b"x" * size


@pytest.mark.parametrize("path", ["/api/demo/token", "/agent/gradio_api/call/agent_handler",
                                  "/agent/gradio_api/queue/join"])
def test_a_body_over_the_limit_stops_while_it_is_read(live_server: LiveServer,
                                                      path: str) -> None:
    limit = live_server.runtime.settings.max_request_body_bytes
    declared = httpx.post(live_server.url + path, content=b"x" * (limit + 1), timeout=TIMEOUT,
                          headers={"content-type": "application/json"})
    chunked = httpx.post(live_server.url + path, content=_chunks(50 * 1024 * 1024),
                         headers={"content-type": "application/json"}, timeout=TIMEOUT)
    for response in (declared, chunked):
        assert response.status_code == 413
        assert response.json() == {"detail": f"The request body is larger than {limit:,} "
                                              "bytes."}


def test_errors_never_echo_the_input(live_server: LiveServer) -> None:
    big = "z" * 200_000  # under the body limit, far over anything worth echoing
    answers = [httpx.post(f"{live_server.url}/api/demo/token", json={"user": big},
                          timeout=TIMEOUT),
               httpx.post(f"{live_server.url}/api/demo/token", content=b'{"user": NaN}',
                          headers={"content-type": "application/json"}, timeout=TIMEOUT),
               httpx.post(f"{live_server.url}/agent/gradio_api/call/agent_handler",
                          content=f"data={big}", timeout=TIMEOUT,
                          headers={"content-type": "application/x-www-form-urlencoded"})]
    assert [a.status_code for a in answers] == [422, 422, 422]
    assert all(len(a.content) < 2000 and "zzz" not in a.text for a in answers)
    assert answers[0].json()["detail"][0]["loc"] == ["body", "user"]
    broken = httpx.post(f"{live_server.url}/api/demo/token", content=b'{"user": "\xff"}',
                        headers={"content-type": "application/json"}, timeout=TIMEOUT)
    assert broken.status_code == 400


def test_raw_gradio_calls_of_the_wrong_shape_are_a_quiet_422(
    live_server: LiveServer, capfd: pytest.CaptureFixture[str],
) -> None:
    _, token = live_server.token("viewer")
    url = f"{live_server.url}/agent/gradio_api/call"
    cases = {
        "agent_handler": [["too", "few", token]],
        "side_question_history": [["c", "u", token, [1, 2]], ["c", "u", token, float("nan")]],
        "confirm_tool": [[]],
    }
    for api, datas in cases.items():
        for data in datas:
            response = httpx.post(f"{url}/{api}", timeout=TIMEOUT,
                                  content=json.dumps({"data": data}, allow_nan=True),
                                  headers={"content-type": "application/json"})
            assert response.status_code == 422, (api, data, response.text)
            assert token not in response.text
    assert httpx.post(f"{url}/agent_handler", json=[1, 2], timeout=TIMEOUT).status_code == 422
    printed = "".join(capfd.readouterr())
    assert "Traceback" not in printed and token not in printed


@pytest.fixture(scope="module")
def slow_model() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as server:
        yield server


@pytest.fixture(scope="module")
def limited(slow_model: ScriptedOpenAIServer, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[LiveServer]:
    tmp: Path = tmp_path_factory.mktemp("limited")
    base = Settings(database_url=f"sqlite:///{tmp}/app.db", data_dir=tmp / "data",
                    auth_jwt_secret="limited-" + "l" * 32, ui_concurrency_limit=3)
    server = start_server(scripted_settings(base, slow_model.base_url))
    yield server
    server.stop()


def test_thirty_raw_calls_never_put_more_runs_in_flight_than_the_limit(
    limited: LiveServer, slow_model: ScriptedOpenAIServer,
) -> None:
    replies = [slow_model.reply_text(f"answer {i}", deltas=3, hold_after=1) for i in range(30)]
    user_id, token = limited.token("viewer")
    body = json.dumps({"data": ["hi", None, "", user_id, token, "ss-dev", None]})
    skipped = [httpx.post(f"{limited.url}/agent/gradio_api/run/agent_handler", content=body,
                          headers={"content-type": "application/json"}, timeout=TIMEOUT)
               for _ in range(30)]
    assert {r.status_code for r in skipped} == {404}  # the queue cannot be skipped
    assert slow_model.max_in_flight == 0

    ids = [httpx.post(f"{limited.url}/agent/gradio_api/call/agent_handler", content=body,
                      headers={"content-type": "application/json"},
                      timeout=TIMEOUT).json()["event_id"] for _ in range(30)]
    streams = [threading.Thread(target=lambda e=event_id: httpx.get(
        f"{limited.url}/agent/gradio_api/call/agent_handler/{e}", timeout=120).read())
        for event_id in ids]
    for thread in streams:
        thread.start()
    for reply in replies:  # one at a time: each waits at the model until let go
        assert reply.reached.wait(EVENT_WAIT_S)
        assert slow_model.in_flight <= 3
        reply.release.set()
    for thread in streams:
        thread.join(120)
    assert 1 <= slow_model.max_in_flight <= 3

"""The side-question REST and SSE contract (SPEC §9) against a real app server, on SQLite
and PostgreSQL: every route and status code, idempotency, SSE resume and clear, paging."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import httpx
import pytest
from sse_starlette import ServerSentEvent

from side_questions.views import SideRequestPublic
from tests.web.conftest import LiveServer
from tests.web.side_support import (
    LONG_SIDE,
    SHORT_SIDE,
    SSEEvent,
    auth,
    clone_parent,
    run_main_turn,
    seed_history,
    sse_events,
)
from web.side_routes import _state_frame

# Slow tokens keep a long side answer running for seconds (busy, cancel, SSE, clear).
# One caller throughout: this module checks the process-wide contract (one running per
# parent, the process cap of 4); per-person shares are tests/web/test_fair_share.py's.
SERVER_SETTINGS = {"offline_token_delay_ms": 60, "side_max_running_per_user": 4}
TIMEOUT = httpx.Timeout(60.0)


@dataclass
class World:
    server: LiveServer
    http: httpx.Client
    main: str  # the viewer's conversation with a real main turn
    viewer: tuple[str, str]
    editor: tuple[str, str]

    def parent(self, owner: str | None = None, **kwargs: object) -> str:
        return clone_parent(self.server, self.main, owner or self.viewer[0], **kwargs)  # type: ignore[arg-type]

    def submit(self, conv_id: str, question: str, cid: str | None = None,
               token: str | None = None) -> httpx.Response:
        body = {"question": question} | ({"client_request_id": cid} if cid else {})
        return self.http.post(f"/api/conversations/{conv_id}/side-questions", json=body,
                              headers=auth(token or self.viewer[1]))

    def history(self, conv_id: str, before: int | None = None) -> httpx.Response:
        params = {"before": before} if before is not None else {}
        return self.http.get(f"/api/conversations/{conv_id}/side-questions", params=params,
                             headers=auth(self.viewer[1]))

    def follow(self, request_id: str, last_event_id: int | None = None) -> list[SSEEvent]:
        headers = auth(self.viewer[1])
        if last_event_id is not None:
            headers["Last-Event-ID"] = str(last_event_id)
        with self.http.stream("GET", f"/api/side-questions/{request_id}/events",
                              headers=headers) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            return list(sse_events(response))

    def cancel(self, request_id: str) -> httpx.Response:
        return self.http.post(f"/api/side-questions/{request_id}/cancel",
                              headers=auth(self.viewer[1]))


@pytest.fixture(scope="module")
def world(live_server: LiveServer) -> Iterator[World]:
    viewer = live_server.token("viewer")
    editor = live_server.token("editor")
    main = "side-main"
    run_main_turn(live_server, main, *viewer)
    with httpx.Client(base_url=live_server.url, timeout=TIMEOUT) as http:
        yield World(live_server, http, main, viewer, editor)


def _finished(world: World, request_id: str) -> dict:
    events = world.follow(request_id)
    assert events[-1].data["status"] != "running"
    return events[-1].data


# -- submission ------------------------------------------------------------------------


def test_submit_then_idempotent_repeat_returns_the_same_object(world: World) -> None:
    parent = world.parent()
    first = world.submit(parent, SHORT_SIDE, "cid-1")
    assert first.status_code == 202
    created = first.json()
    assert set(created) >= {"id", "ordinal", "question", "answer", "status", "error", "model",
                            "snapshot_at", "usage", "sequence", "created_at", "context_info"}
    assert created["question"] == SHORT_SIDE and created["ordinal"] == 1
    final = _finished(world, created["id"])
    assert final["status"] == "completed" and "show_capabilities" in final["answer"]
    again = world.submit(parent, SHORT_SIDE, "cid-1")
    assert again.status_code == 200
    assert again.json() == final  # the same request object, not a new one
    reused = world.submit(parent, "another question", "cid-1")
    assert reused.status_code == 409 and reused.headers["x-error-code"] == \
        "client_request_id_reused"


def test_repeat_while_running_is_200_with_the_same_id(world: World) -> None:
    parent = world.parent()
    first = world.submit(parent, LONG_SIDE, "cid-run")
    assert first.status_code == 202
    again = world.submit(parent, LONG_SIDE, "cid-run")
    assert again.status_code == 200 and again.json()["id"] == first.json()["id"]
    assert world.cancel(first.json()["id"]).json()["status"] == "cancelled"


def test_busy_parent_conflicts_and_cancel_frees_it(world: World) -> None:
    parent = world.parent()
    running = world.submit(parent, LONG_SIDE).json()
    busy = world.submit(parent, SHORT_SIDE)
    assert busy.status_code == 409 and busy.headers["x-error-code"] == "busy"
    cancelled = world.cancel(running["id"])
    assert cancelled.status_code == 200
    assert cancelled.json()["status"] == "cancelled" and cancelled.json()["id"] == running["id"]
    page = world.history(parent).json()
    assert page["running"] is None and page["items"][0]["status"] == "cancelled"
    again = world.submit(parent, SHORT_SIDE)
    assert again.status_code == 202  # free again
    _finished(world, again.json()["id"])


def test_no_snapshot_and_changed_model_conflict(world: World) -> None:
    empty = world.parent(snapshot=False)
    response = world.submit(empty, SHORT_SIDE)
    assert response.status_code == 409 and response.headers["x-error-code"] == "no_snapshot"
    assert "run the main agent first" in response.json()["detail"]
    other = world.parent(model="openai/some-other-model")
    response = world.submit(other, SHORT_SIDE)
    assert response.status_code == 409 and response.headers["x-error-code"] == "config_changed"


def test_process_limit_answers_429(world: World) -> None:
    limit = world.server.runtime.settings.side_max_running_per_process
    parents = [world.parent() for _ in range(limit + 1)]
    started = []
    for parent in parents[:limit]:
        response = world.submit(parent, LONG_SIDE)
        assert response.status_code == 202, response.text
        started.append(response.json()["id"])
    try:
        over = world.submit(parents[-1], SHORT_SIDE)
        assert over.status_code == 429 and over.headers["retry-after"]
    finally:
        for request_id in started:
            world.cancel(request_id)
    freed = world.submit(parents[-1], SHORT_SIDE)
    assert freed.status_code == 202
    _finished(world, freed.json()["id"])


@pytest.mark.parametrize(("body", "status"), [
    (b"{not json", 400),
    ({"question": "   "}, 400),
    ({"question": "x" * 4001}, 413),
    ({"question": "x" * 70_000}, 413),
    ({}, 422),
    ({"question": 42}, 422),
    ({"question": "ok", "extra": 1}, 422),
    ({"question": "ok", "client_request_id": "bad id with spaces"}, 422),
    (["question"], 422),
])
def test_bad_bodies(world: World, body: object, status: int) -> None:
    parent = world.parent()
    url = f"/api/conversations/{parent}/side-questions"
    headers = auth(world.viewer[1])
    if isinstance(body, bytes):
        response = world.http.post(url, content=body,
                                   headers={**headers, "Content-Type": "application/json"})
    else:
        response = world.http.post(url, json=body, headers=headers)
    assert response.status_code == status, response.text
    assert world.history(parent).json()["items"] == []  # nothing was stored


def test_question_of_exactly_4000_characters_is_accepted(world: World) -> None:
    parent = world.parent()
    response = world.submit(parent, "y" * 4000)
    assert response.status_code == 202
    assert response.json()["question"] == "y" * 4000
    world.cancel(response.json()["id"])


# -- ownership and authentication ------------------------------------------------------


def test_foreign_and_unknown_parents_look_the_same(world: World) -> None:
    parent = world.parent()
    request_id = world.submit(parent, SHORT_SIDE).json()["id"]
    editor = auth(world.editor[1])
    for conv_id in (parent, "no-such-conversation"):
        base = f"/api/conversations/{conv_id}/side-questions"
        answers = [world.http.get(base, headers=editor),
                   world.http.post(base, json={"question": "hi"}, headers=editor),
                   world.http.delete(base, headers=editor)]
        assert [r.status_code for r in answers] == [404, 404, 404]
        assert {r.json()["detail"] for r in answers} == {"Conversation not found."}
    for method, path in (("GET", "events"), ("POST", "cancel")):
        foreign, unknown = (world.http.request(method, f"/api/side-questions/{rid}/{path}",
                                               headers=editor)
                            for rid in (request_id, "0" * 32))
        assert (foreign.status_code, foreign.text) == (unknown.status_code, unknown.text)
        assert foreign.status_code == 404
    assert _finished(world, request_id)["status"] == "completed"  # untouched by the editor


def test_tokens(world: World) -> None:
    parent = world.parent()
    url = f"/api/conversations/{parent}/side-questions"
    assert world.http.get(url, headers=auth("not-a-jwt")).status_code == 401
    assert world.http.get(url, headers={"Authorization": "Basic abc"}).status_code == 401
    # demo mode: no token is the shared anonymous demo viewer, not this visitor
    assert world.http.get(url).status_code == 404
    assert world.http.get(url, headers=auth(world.editor[1])).status_code == 404
    anonymous = world.parent(owner="demo-viewer")
    assert world.http.get(f"/api/conversations/{anonymous}/side-questions").status_code == 200


# -- history ---------------------------------------------------------------------------


def test_history_pages_20_20_5(world: World) -> None:
    parent = world.parent()
    seed_history(world.server, parent, 45)
    sizes, ordinals, before = [], [], None
    while True:
        page = world.history(parent, before).json()
        sizes.append(len(page["items"]))
        ordinals += [item["ordinal"] for item in page["items"]]
        if page["next_cursor"] == 0:
            break
        before = page["next_cursor"]
    assert sizes == [20, 20, 5]
    assert ordinals == list(range(45, 0, -1))  # newest first, no gap, no repeat
    assert page["running"] is None
    snapshot = page["snapshot"]
    assert snapshot["run_id"] and snapshot["version"] >= 1 and snapshot["time"]
    assert snapshot["model"] == world.server.runtime.settings.agent_model


def test_history_shows_the_running_request(world: World) -> None:
    parent = world.parent()
    running = world.submit(parent, LONG_SIDE).json()
    page = world.history(parent).json()
    assert page["running"]["id"] == running["id"] and page["running"]["status"] == "running"
    assert page["items"][0]["id"] == running["id"]
    world.cancel(running["id"])


# -- server-sent events ----------------------------------------------------------------


def test_sse_cumulative_increasing_and_resumable(world: World) -> None:
    parent = world.parent()
    request_id = world.submit(parent, LONG_SIDE).json()["id"]
    headers = auth(world.viewer[1])
    seen: list[SSEEvent] = []
    with world.http.stream("GET", f"/api/side-questions/{request_id}/events",
                           headers=headers) as response:
        for event in sse_events(response):
            seen.append(event)
            if len(seen) == 3:
                break  # drop the stream mid-answer; the request keeps running
    first = seen[0]
    assert first.event == "message" and first.data["id"] == request_id
    assert first.data["status"] == "running" and first.data["question"] == LONG_SIDE
    resumed = world.follow(request_id, last_event_id=seen[-1].id)
    events = seen + resumed
    ids = [e.id for e in events]
    assert ids == sorted(set(ids)), "ids must strictly increase across the resume"
    assert all(e.id == e.data["sequence"] for e in events)
    for earlier, later in itertools.pairwise(events):
        assert later.data["answer"].startswith(earlier.data["answer"])  # cumulative
    assert events[-1].data["status"] == "completed" and len(events[-1].data["answer"]) > 200
    # resuming after the last event of a finished request yields nothing and ends
    assert world.follow(request_id, last_event_id=ids[-1]) == []
    again = world.follow(request_id)
    assert len(again) == 1 and again[0].data == events[-1].data


def test_followers_of_one_request_share_each_update_serialised_once(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by bench/concurrency.py's 100 SSE followers: every follower serialised (and
    framed) the same cumulative answer again for every update. With three following at
    once, each update's JSON is made once, and all three still read the whole answer."""
    made: list[int] = []
    dump = SideRequestPublic.model_dump_json

    def counting(self: SideRequestPublic, **kwargs: object) -> str:
        made.append(self.sequence)
        return dump(self, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(SideRequestPublic, "model_dump_json", counting)
    request_id = world.submit(world.parent(), LONG_SIDE).json()["id"]

    def follow(_: int) -> list[SSEEvent]:
        with httpx.Client(base_url=world.server.url, timeout=TIMEOUT) as http, http.stream(
                "GET", f"/api/side-questions/{request_id}/events",
                headers=auth(world.viewer[1])) as response:
            assert response.status_code == 200
            return list(sse_events(response))

    with ThreadPoolExecutor(3) as pool:
        followed = list(pool.map(follow, range(3)))
    for events in followed:
        assert events[-1].data["status"] == "completed"
        assert [e.id for e in events] == sorted({e.id for e in events})
    assert followed[0][-1].data == followed[1][-1].data == followed[2][-1].data
    assert len(made) >= 3, "the answer streamed in several updates"
    assert len(made) == len(set(made)), "an update was serialised once per follower"


def test_a_state_frame_is_what_the_sse_library_would_encode() -> None:
    """The route frames state events itself (once per follower, from the shared JSON); pin
    that it stays byte for byte the library's framing, separator included."""
    text = SideRequestPublic(id="r", ordinal=1, question="q", answer="a\nb\r\u2028 é",
                             status="running", error=None, model="m", snapshot_at=None,
                             usage={}, sequence=7, created_at=None,
                             context_info={}).model_dump_json()
    assert _state_frame(7, text) == ServerSentEvent(text, id="7").encode()


def test_sse_cleared_event_on_clear(world: World) -> None:
    parent = world.parent()
    request_id = world.submit(parent, LONG_SIDE).json()["id"]
    events: list[SSEEvent] = []
    with world.http.stream("GET", f"/api/side-questions/{request_id}/events",
                           headers=auth(world.viewer[1])) as response:
        for event in sse_events(response):
            events.append(event)
            if len(events) == 1:
                cleared = world.http.delete(f"/api/conversations/{parent}/side-questions",
                                            headers=auth(world.viewer[1]))
                assert cleared.status_code == 200
                assert cleared.json()["items"] == [] and cleared.json()["running"] is None
                assert cleared.json()["snapshot"] is not None  # the main snapshot stays
    assert events[-1].event == "cleared" and events[-1].data["status"] == "cleared"
    assert events[-1].id > events[-2].id
    response = world.http.get(f"/api/side-questions/{request_id}/events",
                              headers=auth(world.viewer[1]))
    assert response.status_code == 404
    assert world.history(parent).json()["items"] == []
    after = world.submit(parent, SHORT_SIDE)
    assert after.status_code == 202  # usable after clear
    _finished(world, after.json()["id"])


def test_openapi_documents_the_routes(world: World) -> None:
    spec = world.http.get("/openapi.json").json()
    paths = spec["paths"]
    side = paths["/api/conversations/{conv_id}/side-questions"]
    assert set(side) >= {"get", "post", "delete"}
    assert {"200", "202", "400", "409", "413", "422", "429"} <= set(side["post"]["responses"])
    assert "/api/side-questions/{request_id}/events" in paths
    assert "/api/side-questions/{request_id}/cancel" in paths
    assert "SideQuestionCreate" in spec["components"]["schemas"]


def test_nul_characters_are_dropped(world: World) -> None:
    """Found by the fuzzer: PostgreSQL cannot store NUL; it must not become a 500."""
    parent = world.parent()
    response = world.submit(parent, "which\x00 tools did you use?", "nul-1")
    assert response.status_code == 202, response.text
    assert response.json()["question"] == "which tools did you use?"
    assert world.submit(parent, "which\x00 tools did you use?", "nul-1").status_code == 200
    _finished(world, response.json()["id"])

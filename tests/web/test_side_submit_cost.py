"""What one side submission costs the database, counted with SQLAlchemy events (issue 16;
not timed): `POST .../side-questions` → 202 is one connection, one transaction and two
statements (the UPDATE that takes the ordinal, checks the owner and reads the snapshot's
version, then the INSERT), on SQLite and PostgreSQL. Once the parent's snapshot has been
read, the next submission reuses it instead of reading and parsing its JSON again.

The route runs over the real runtime (authentication, ownership, throttle, snapshot), in
this process through httpx's ASGI transport; answers come from the scripted
OpenAI-compatible server, which can hold an answer mid-stream so that "running here" is a
state the test waits for, not a race it hopes to win."""

from __future__ import annotations

import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import event

from agent.settings import Settings
from agent.snapshots import make_snapshot
from runtime import Runtime, build_runtime
from side_questions.snapshot_store import SnapshotStore
from storage import conversations as conv_repo
from tests.fakes.openai_server import ScriptedOpenAIServer
from tests.side_questions.conftest import main_messages
from web.side_routes import build_side_router

PARENT = "cost-parent"


@dataclass
class Counted:
    """Statements, connection checkouts, transactions begun and commits while `on`."""

    on: bool = False
    statements: list[str] = field(default_factory=list)
    checkouts: int = 0
    begins: int = 0
    commits: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def reset(self) -> None:
        self.statements, self.checkouts, self.begins, self.commits = [], 0, 0, 0

    def listen(self, runtime: Runtime) -> None:
        engine = runtime.db.engine
        event.listen(engine, "before_cursor_execute", self._statement)
        event.listen(engine.pool, "checkout", self._checkout)
        event.listen(engine, "begin", self._begin)
        event.listen(engine, "commit", self._commit)

    def _statement(self, _conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if self.on:
            with self._lock:
                self.statements.append(statement.split(None, 1)[0].upper())

    def _checkout(self, *_args: Any) -> None:
        self.checkouts += 1 if self.on else 0

    def _begin(self, *_args: Any) -> None:
        self.begins += 1 if self.on else 0

    def _commit(self, *_args: Any) -> None:
        self.commits += 1 if self.on else 0


@pytest.fixture(scope="module")
def model_server(litellm_loaded: None) -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as server:
        yield server


@pytest.fixture
def runtime(database_url: str, tmp_path: Path, model_server: ScriptedOpenAIServer
            ) -> Iterator[Runtime]:
    runtime = build_runtime(Settings(database_url=database_url, data_dir=tmp_path / "data",
                                     agent_model="openai/scripted", agent_api_key="sk-cost",
                                     agent_api_base=model_server.base_url,
                                     auth_jwt_secret="cost-test-secret-" + "z" * 32))
    runtime.side_questions.stop()  # no background sweep inside the counted window
    yield runtime
    runtime.db.dispose()


@pytest.fixture
async def http(runtime: Runtime) -> AsyncIterator[httpx.AsyncClient]:
    app = FastAPI()
    app.include_router(build_side_router(runtime), prefix="/api")
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://test") as client:
        yield client
    await runtime.side_questions.aclose()


def _parent_with_snapshot(runtime: Runtime, owner: str) -> None:
    settings = runtime.settings
    with runtime.db.session() as session:
        conv_repo.create_conversation(session=session, owner_id=owner, conversation_id=PARENT)
    SnapshotStore(runtime.db).save(make_snapshot(
        conversation_id=PARENT, run_id="run-1", version=1, boundary="run_end",
        system_prompt="You are the Superset agent.", messages=main_messages(3), tools=[],
        params={}, model=settings.agent_model, api_base=settings.agent_api_base,
        run_started_at=1.0))


async def test_a_submission_is_one_transaction_of_two_statements(
        runtime: Runtime, http: httpx.AsyncClient, model_server: ScriptedOpenAIServer) -> None:
    identity, token = runtime.issuer.mint_demo("viewer", uuid.uuid4().hex[:16])
    _parent_with_snapshot(runtime, identity.user_id)
    headers = {"Authorization": f"Bearer {token}"}
    side = runtime.side_questions
    counted = Counted()
    counted.listen(runtime)
    held = []
    for _ in range(2):  # the first reads the snapshot, the second reuses what it read
        model_server.reply_text("get_dashboard.")
        counted.reset()
        counted.on = True
        answer = await http.post(f"/api/conversations/{PARENT}/side-questions",
                                 json={"question": "which tools did you use?"},
                                 headers=headers)
        counted.on = False  # the answer's own work starts after the 202
        assert answer.status_code == 202, answer.text
        assert (counted.checkouts, counted.begins, counted.commits) == (1, 1, 1), counted
        assert counted.statements == ["UPDATE", "INSERT"], counted.statements
        held.append(side.snapshots.frozen(PARENT))
        final = [update async for update in side.follow(answer.json()["id"])][-1]
        assert final.request is not None and final.request.status == "completed", final
    assert held[0] is not None and held[1] is held[0]  # not read and parsed again


async def test_following_a_request_running_here_reads_no_ownership_again(
        runtime: Runtime, http: httpx.AsyncClient, model_server: ScriptedOpenAIServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The submission checked who owns the parent, so the first SSE event of a request this
    process runs needs no ownership read (run_in_threadpool's threads did that read); a
    caller who does not own it still gets the same 404 as for an unknown request.

    The answer is held mid-stream until the first event has arrived: an answer that ended
    before the GET is no longer running here, and then reading its owner is right (this
    test failed in CI on PostgreSQL, where the 404 checks took long enough for it to end)."""
    held = model_server.reply_text("get_dashboard, twice.", deltas=4, hold_after=1)
    identity, token = runtime.issuer.mint_demo("viewer", uuid.uuid4().hex[:16])
    _, stranger = runtime.issuer.mint_demo("editor", uuid.uuid4().hex[:16])
    _parent_with_snapshot(runtime, identity.user_id)
    answer = await http.post(f"/api/conversations/{PARENT}/side-questions",
                             json={"question": "which tools did you use?"},
                             headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 202, answer.text
    request_id = answer.json()["id"]
    assert await held.until_reached(), "the model server never got the side answer's call"
    assert runtime.side_questions.verified_owner(request_id) == identity.user_id
    foreign = await http.get(f"/api/side-questions/{request_id}/events",
                             headers={"Authorization": f"Bearer {stranger}"})
    unknown = await http.get(f"/api/side-questions/{'0' * 32}/events",
                             headers={"Authorization": f"Bearer {stranger}"})
    assert (foreign.status_code, foreign.text) == (unknown.status_code, unknown.text)
    assert foreign.status_code == 404
    reads: list[str] = []

    def seen(*_args: Any) -> None:
        if threading.current_thread().name.startswith("AnyIO"):
            reads.append(threading.current_thread().name)

    service, follow = runtime.side_questions, runtime.side_questions.follow

    async def follow_then_let_it_end(request_id: str) -> AsyncIterator[Any]:
        """The route's own follow; the held answer goes on once the first event is out
        (httpx's ASGI transport hands the body over only when the response ends)."""
        async for update in follow(request_id):
            yield update
            held.release.set()

    monkeypatch.setattr(service, "follow", follow_then_let_it_end)
    event.listen(runtime.db.engine, "before_cursor_execute", seen)
    try:
        async with http.stream("GET", f"/api/side-questions/{request_id}/events",
                               headers={"Authorization": f"Bearer {token}"}) as events:
            assert events.status_code == 200
            lines = [line async for line in events.aiter_lines() if line.startswith("data:")]
    finally:
        held.release.set()
        event.remove(runtime.db.engine, "before_cursor_execute", seen)
    assert lines and reads == []

"""Fixtures for side-question tests: a scripted OpenAI-compatible server on loopback, settings
pointing litellm at it, a parent conversation with a saved snapshot, and the service."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from sqlalchemy import event

from agent.model_gateway import LiteLLMGateway
from agent.settings import Settings
from agent.snapshots import make_snapshot
from side_questions.service import SideQuestionService
from side_questions.snapshot_store import SnapshotStore
from storage import Database
from storage import conversations as conv_repo
from tests.fakes.openai_server import ScriptedOpenAIServer, ScriptedReply

API_KEY = "sk-side-SENTINEL-KEY-0123456789"
MODEL = "openai/scripted"
SYSTEM_PROMPT = ('You are the Superset agent.\n<context>{"objectType": "dashboard", '
                 '"objectId": 42, "envId": "ss-dev", "role": "viewer"}</context>')


ErrorAfterReply = ScriptedReply  # `error_after=`: an in-stream error after partial output


class SideServer(ScriptedOpenAIServer):
    """The shared scripted server, telling side answers from summaries."""

    def side_requests(self) -> list[Any]:
        return [r for r in self.requests if "<side_question/>" in str(r.messages[:1])]

    def summary_requests(self) -> list[Any]:
        return [r for r in self.requests if "<side_summary/>" in str(r.messages[:1])]


@pytest.fixture(scope="session")
def model_server(litellm_loaded: None) -> Iterator[SideServer]:
    with SideServer() as server:
        yield server


@pytest.fixture
def server(model_server: SideServer) -> Iterator[SideServer]:
    model_server.requests.clear()
    with model_server._lock:
        model_server._replies.clear()
    yield model_server
    with model_server._lock:
        for reply in model_server._replies:
            reply.release.set()
        model_server._replies.clear()


@pytest.fixture(scope="session")
def gateway() -> LiteLLMGateway:
    return LiteLLMGateway()


def side_settings(database_url: str, server: ScriptedOpenAIServer, **overrides: Any) -> Settings:
    values: dict[str, Any] = {"database_url": database_url, "agent_model": MODEL,
                              "agent_api_base": server.base_url, "agent_api_key": API_KEY,
                              "auth_jwt_secret": "side-test-secret-" + "x" * 32}
    return Settings(**{**values, **overrides})


def main_messages(turns: int = 1, size: int = 40) -> list[dict[str, Any]]:
    """A paired main transcript: per turn a question, a tool call, its result and an answer."""
    messages: list[dict[str, Any]] = []
    for turn in range(turns):
        call_id = f"call_{turn}"
        messages += [
            {"role": "user", "content": f"main question {turn} " + "q" * size},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": call_id, "type": "function",
                 "function": {"name": "get_dashboard", "arguments": '{"id": 42}'}}]},
            {"role": "tool", "tool_call_id": call_id, "name": "get_dashboard",
             "content": f"dashboard 42 'Sales' turn {turn} " + "r" * size},
            {"role": "assistant", "content": f"main answer {turn} " + "a" * size},
        ]
    return messages


def seed_parent(db: Database, settings: Settings, parent: str = "conv-1", *,
                messages: list[dict[str, Any]] | None = None, run_id: str = "run-1",
                version: int = 1) -> None:
    with db.session() as session:
        if conv_repo.get_conversation(session=session, conversation_id=parent) is None:
            conv_repo.create_conversation(session=session, owner_id="alice",
                                          conversation_id=parent)
    SnapshotStore(db).save(make_snapshot(
        conversation_id=parent, run_id=run_id, version=version, boundary="run_end",
        system_prompt=SYSTEM_PROMPT, messages=main_messages() if messages is None else messages,
        tools=[{"type": "function", "function": {"name": "get_dashboard", "parameters": {
            "type": "object", "properties": {"id": {"type": "integer"}}}}}],
        params={"temperature": 0.0, "max_tokens": 1024}, model=settings.agent_model,
        api_base=settings.agent_api_base, run_started_at=1.0))


def stored_request(db: Database, parent: str, question: str = "why?") -> int:
    """One running side question of generation 0 on a new parent conversation, as its
    submission stores it; its id."""
    from storage import side_repository as side_repo

    with db.session() as session:
        conv_repo.create_conversation(session=session, owner_id="u", conversation_id=parent)
        side_repo.ensure_session(session=session, parent_id=parent)
    with db.session() as session:
        created = side_repo.create_request(
            session=session, parent_id=parent, generation=0, client_request_id="c1",
            question=question, model="m", snapshot_run_id=None, snapshot_version=None,
            snapshot_at=None)
        assert created is not None
        return created.id


@pytest.fixture
async def side_factory(db: Database, server: SideServer, gateway: LiteLLMGateway,  # type: ignore[no-untyped-def]
                       database_url: str):
    """Builds services over the test database; closes them at the end."""
    made: list[SideQuestionService] = []

    def build(**overrides: Any) -> SideQuestionService:
        options = {k: overrides.pop(k) for k in ("max_running", "timeout_s", "interval_s")
                   if k in overrides}
        # Each service stands for its own replica unless a test says otherwise.
        overrides.setdefault("side_replica_name", f"replica-{len(made)}")
        settings = side_settings(database_url, server, **overrides)
        service = SideQuestionService(settings=settings, db=db, gateway=gateway,
                                      snapshots=SnapshotStore(db), **options)
        made.append(service)
        return service

    yield build
    for service in made:
        await service.aclose()


@pytest.fixture
async def side(side_factory, db: Database) -> AsyncIterator[SideQuestionService]:  # type: ignore[no-untyped-def]
    service = side_factory()
    seed_parent(db, service.settings)
    yield service


class WriteCounter:
    """Counts INSERT/UPDATE/DELETE statements on one table via SQLAlchemy engine events."""

    def __init__(self, db: Database, table: str) -> None:
        self.count = 0
        self.table = table
        self.db = db
        event.listen(db.engine, "before_cursor_execute", self._seen)

    def _seen(self, _conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        head = statement.lstrip().split(None, 1)[0].upper()
        if head in {"INSERT", "UPDATE", "DELETE"} and self.table in statement:
            self.count += 1

    def close(self) -> None:
        event.remove(self.db.engine, "before_cursor_execute", self._seen)


async def finished(service: SideQuestionService, request_id: str) -> Any:
    """Follow a request to its end and return the final public state."""
    last = None
    async for update in service.follow(request_id):
        last = update.request
    return last

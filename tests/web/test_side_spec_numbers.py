"""SPEC §9 numbers at the REST surface, on SQLite and PostgreSQL: two runtimes on one
database racing fresh submissions into one parent get exactly one 202 `running` and one
409 `busy` (only the partial unique index can decide it: both have passed the
application's busy check), and a history of exactly 20 items is one page (`next_cursor`
0) while 21 need a cursor.

Each runtime is served by its own FastAPI app over httpx's ASGI transport (no Gradio, no
uvicorn): the routes, the service and the storage are the real ones.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from agent.settings import Settings
from agent.snapshots import make_snapshot
from runtime import Runtime, build_runtime
from side_questions.snapshot_store import SnapshotStore
from storage import conversations as conv_repo
from storage import side_repository as side_repo
from tests.side_questions.race_support import OrdinalClaimGate
from tests.web.side_support import auth
from web.routes import build_api_router

PARENT = "spec-parent"


@dataclass
class Replica:
    runtime: Runtime
    http: httpx.AsyncClient


@pytest.fixture
async def replicas(settings: Settings, tmp_path: Path) -> AsyncIterator[list[Replica]]:
    """Two runtimes (replicas a and b) on the test database, each behind its own app.
    Slow offline tokens keep the winning answer running while the loser tries."""
    made: list[Replica] = []
    for name in ("a", "b"):
        runtime = build_runtime(settings.model_copy(update={
            "side_replica_name": f"replica-{name}", "data_dir": tmp_path / name,
            "offline_token_delay_ms": 200}))
        app = FastAPI()
        app.include_router(build_api_router(runtime))
        http = httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url=f"http://replica-{name}", timeout=30)
        made.append(Replica(runtime, http))
    yield made
    for replica in made:
        await replica.http.aclose()
        await replica.runtime.aclose()
        replica.runtime.close()


def _owned_parent_with_snapshot(runtime: Runtime) -> str:
    """A conversation of the demo viewer whose snapshot matches the current model."""
    identity, token = runtime.issuer.mint_demo("viewer")
    settings = runtime.settings
    with runtime.db.session() as session:
        conv_repo.create_conversation(session=session, owner_id=identity.user_id,
                                      conversation_id=PARENT)
    SnapshotStore(runtime.db).save(make_snapshot(
        conversation_id=PARENT, run_id="run-1", version=1, boundary="run_end",
        system_prompt="You are the Superset agent.",
        messages=[{"role": "user", "content": "what can you do?"},
                  {"role": "assistant", "content": "I can list and inspect dashboards."}],
        tools=[], params={}, model=settings.agent_model, api_base=settings.agent_api_base,
        run_started_at=1.0))
    return token


async def test_racing_submissions_on_two_replicas_answer_202_and_409(
    replicas: list[Replica],
) -> None:
    token = _owned_parent_with_snapshot(replicas[0].runtime)
    url = f"/api/conversations/{PARENT}/side-questions"
    gate = OrdinalClaimGate(*(replica.runtime.db.engine for replica in replicas))
    try:
        responses = await asyncio.gather(*[
            replica.http.post(url, headers=auth(token), json={
                "question": f"Asked on replica {index}?", "client_request_id": f"fresh-{index}"})
            for index, replica in enumerate(replicas)])
    finally:
        gate.close()
    statuses = sorted(response.status_code for response in responses)
    assert statuses == [202, 409], [(r.status_code, r.text) for r in responses]
    accepted = next(r for r in responses if r.status_code == 202)
    refused = next(r for r in responses if r.status_code == 409)
    assert refused.headers["X-Error-Code"] == "busy"
    assert "already running" in refused.json()["detail"]
    assert accepted.json()["status"] == "running"
    for replica in replicas:  # both replicas see the same single running request
        page = (await replica.http.get(url, headers=auth(token))).json()
        assert page["running"]["id"] == accepted.json()["id"]
        assert [item["id"] for item in page["items"]] == [accepted.json()["id"]]


def _seed_completed(runtime: Runtime, first: int, last: int) -> None:
    with runtime.db.session() as session:
        for number in range(first, last + 1):
            row = side_repo.create_request(
                session=session, parent_id=PARENT, generation=0,
                client_request_id=f"seed-{number}", question=f"question {number}",
                model="offline", snapshot_run_id=None, snapshot_version=None,
                snapshot_at=None)
            assert row is not None
            side_repo.update_request(session=session, request_id=row.id, generation=0,
                                     status="completed", answer=f"answer {number}")


async def test_history_route_next_cursor_is_0_for_exactly_20_items(
    replicas: list[Replica],
) -> None:
    replica = replicas[0]
    token = _owned_parent_with_snapshot(replica.runtime)
    url = f"/api/conversations/{PARENT}/side-questions"
    _seed_completed(replica.runtime, 1, 20)
    page = (await replica.http.get(url, headers=auth(token))).json()
    assert [item["ordinal"] for item in page["items"]] == list(range(20, 0, -1))
    assert page["next_cursor"] == 0

    _seed_completed(replica.runtime, 21, 21)
    first = (await replica.http.get(url, headers=auth(token))).json()
    assert [item["ordinal"] for item in first["items"]] == list(range(21, 1, -1))
    assert first["next_cursor"] == 2
    second = (await replica.http.get(url, headers=auth(token),
                                     params={"before": first["next_cursor"]})).json()
    assert [item["ordinal"] for item in second["items"]] == [1]
    assert second["next_cursor"] == 0

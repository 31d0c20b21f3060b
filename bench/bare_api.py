"""The bare FastAPI baseline for side questions: a submit that does one INSERT and answers
202, and an SSE route whose first event is that row, followed by recorded events.

Run by the benchmarks as a process of its own (`python -m bench.bare_api` under uvicorn),
configured by BENCH_PORT, BENCH_DATABASE_URL (SQLite, or PostgreSQL with a private schema in
its search_path) and BENCH_REPLAY: a JSON list `[{"wait_s", "data"}, ...]` of SSE payloads
the app sent for one side question (`bench.clients.save_replay`, read at the first stream),
streamed after the first event with the model's own delay. It imports nothing of the app:
SQLAlchemy Core, one table, SQLite in WAL mode with synchronous=NORMAL as the app's engine
sets it (same durability).
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel
from sqlalchemy import Column, DateTime, MetaData, String, Table, Text, create_engine, event
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.concurrency import run_in_threadpool

METADATA = MetaData()
REQUESTS = Table("bare_side_requests", METADATA,
                 Column("id", String(64), primary_key=True),
                 Column("parent_id", String(64), nullable=False),
                 Column("question", Text, nullable=False),
                 Column("status", String(16), nullable=False),
                 Column("created_at", DateTime(timezone=True), nullable=False))


class Submit(BaseModel):
    question: str
    client_request_id: str | None = None


def build(database_url: str, replay_path: Path) -> FastAPI:
    replay: list[dict[str, Any]] = []
    engine = create_engine(database_url)
    if engine.dialect.name == "sqlite":
        @event.listens_for(engine, "connect")
        def _wal(connection, _record) -> None:  # type: ignore[no-untyped-def]
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=NORMAL")
    METADATA.create_all(engine)
    app = FastAPI()

    @app.get("/health")
    def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.post("/api/conversations/{conv_id}/side-questions", status_code=202)
    def submit(conv_id: str, body: Submit) -> dict[str, Any]:
        row = {"id": uuid.uuid4().hex, "parent_id": conv_id, "question": body.question,
               "status": "running", "created_at": datetime.now(UTC)}
        with engine.begin() as connection:
            connection.execute(REQUESTS.insert().values(**row))
        return row

    def read(request_id: str) -> dict[str, Any] | None:
        with engine.connect() as connection:
            found = connection.execute(
                REQUESTS.select().where(REQUESTS.c.id == request_id)).mappings().first()
        return dict(found) if found else None

    @app.get("/api/side-questions/{request_id}/events")
    async def events(request_id: str) -> EventSourceResponse:
        if not replay and replay_path.exists():
            replay.extend(json.loads(replay_path.read_text()))

        async def stream() -> AsyncIterator[ServerSentEvent]:
            row = await run_in_threadpool(read, request_id)
            if row is not None:
                yield ServerSentEvent(json.dumps(row, default=str), id="1")
            for number, item in enumerate(replay, 2):
                if item["wait_s"]:
                    await asyncio.sleep(item["wait_s"])
                yield ServerSentEvent(json.dumps(item["data"]), id=str(number))

        return EventSourceResponse(stream(), ping=15)

    return app


if __name__ == "__main__":
    uvicorn.run(build(os.environ["BENCH_DATABASE_URL"], Path(os.environ["BENCH_REPLAY"])),
                host="127.0.0.1", port=int(os.environ["BENCH_PORT"]), log_level="warning")

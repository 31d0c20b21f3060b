"""Helpers for tests that drive the agent service: settings for the scripted model, event
collection with a deadline, and a dump of every stored row (for secret scans)."""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy import inspect, select
from sqlmodel import SQLModel

from agent.service import LiveRun
from agent.settings import Settings
from storage import Database

__all__ = ["SENTINEL_KEY", "all_rows", "collect", "of_type", "scripted_settings"]

SENTINEL_KEY = "sk-sentinel-4f9c2b7e1d8a6350"


def scripted_settings(settings: Settings, base_url: str, **overrides: Any) -> Settings:
    """The given settings, pointed at the scripted server through litellm's openai provider."""
    return settings.model_copy(update={
        "agent_model": "openai/scripted", "agent_api_base": base_url,
        "agent_api_key": SENTINEL_KEY, **overrides,
    })


async def collect(live: LiveRun, timeout_s: float = 60.0) -> list[dict[str, Any]]:
    """Follow a run to its end and return all its events (fails the test on a hang)."""

    async def _follow() -> None:
        async for _ in live.follow():
            pass

    await asyncio.wait_for(_follow(), timeout=timeout_s)
    return list(live.events)


def of_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [event for event in events if event["type"] == kind]


def all_rows(db: Database) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table, for 'nothing changed' and 'no secret stored' checks."""
    rows: dict[str, list[tuple[Any, ...]]] = {}
    existing = set(inspect(db.engine).get_table_names())
    with db.engine.connect() as conn:
        for table in SQLModel.metadata.sorted_tables:
            if table.name not in existing:
                continue
            rows[table.name] = sorted(
                (tuple(row) for row in conn.execute(select(table))), key=repr)
    return rows

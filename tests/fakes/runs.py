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

__all__ = ["SENTINEL_KEY", "all_rows", "collect", "of_type", "scripted_settings",
           "table_columns"]

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


def all_rows(db: Database, columns: dict[str, set[str]] | None = None
             ) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table, for 'nothing changed' and 'no secret stored' checks: the
    columns the database has (an older schema lacks some), or only `columns` (by table)."""
    rows: dict[str, list[tuple[Any, ...]]] = {}
    inspector = inspect(db.engine)
    existing = set(inspector.get_table_names())
    with db.engine.connect() as conn:
        for table in SQLModel.metadata.sorted_tables:
            if table.name not in existing or (columns is not None
                                              and table.name not in columns):
                continue
            wanted = columns.get(table.name) if columns is not None else {
                column["name"] for column in inspector.get_columns(table.name)}
            selected = [column for column in table.columns if column.name in (wanted or ())]
            rows[table.name] = sorted(
                (tuple(row) for row in conn.execute(select(*selected))), key=repr)
    return rows


def table_columns(db: Database) -> dict[str, set[str]]:
    """The columns each table of the database has now."""
    inspector = inspect(db.engine)
    return {name: {column["name"] for column in inspector.get_columns(name)}
            for name in inspector.get_table_names()}

"""Public shapes of side questions: the request object, history pages and follow updates.

Only these leave the service, so a column that must stay on the server (parent id,
generation, client request id) never reaches a response.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from typing import Any, Literal

from pydantic import BaseModel

from storage.side_models import RUNNING, SideQuestionRequest

__all__ = ["HistoryPage", "LiveRequest", "SideRequestPublic", "SideUpdate", "SubmitResult"]


def _iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    return (value if value.tzinfo else value.replace(tzinfo=UTC)).isoformat()


class SideRequestPublic(BaseModel):
    id: str
    ordinal: int
    question: str
    answer: str
    status: str
    error: str | None
    model: str
    snapshot_at: str | None
    usage: dict[str, Any]
    sequence: int
    created_at: str | None
    context_info: dict[str, Any]

    @classmethod
    def from_row(cls, row: SideQuestionRequest) -> SideRequestPublic:
        return cls(id=row.id, ordinal=row.ordinal, question=row.question, answer=row.answer,
                   status=row.status, error=row.error, model=row.model,
                   snapshot_at=_iso(row.snapshot_at), usage=dict(row.usage or {}),
                   sequence=row.sequence, created_at=_iso(row.created_at),
                   context_info=dict(row.context_info or {}))

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> SideRequestPublic:
        """From a row's columns as written (`side_repository.insert_running`)."""
        return cls(id=values["id"], ordinal=values["ordinal"], question=values["question"],
                   answer=values["answer"], status=values["status"], error=values["error"],
                   model=values["model"], snapshot_at=_iso(values["snapshot_at"]),
                   usage=dict(values["usage"]), sequence=values["sequence"],
                   created_at=_iso(values["created_at"]),
                   context_info=dict(values["context_info"]))

    @property
    def terminal(self) -> bool:
        return self.status != RUNNING


@dataclass(frozen=True, eq=False)
class SideUpdate:
    """One step of following a request: its full cumulative state, or `cleared`.

    Every follower of a live request is handed the same update for a sequence
    (`LiveRequest.follow`), so its JSON is made once however many follow it: a hundred
    followers serialised the same cumulative answer a hundred times per update."""

    kind: Literal["state", "cleared"]
    sequence: int
    request: SideRequestPublic | None

    @cached_property
    def request_json(self) -> str:
        """The request object as JSON (`null` for `cleared`)."""
        return self.request.model_dump_json() if self.request is not None else "null"


@dataclass(frozen=True)
class SubmitResult:
    request: SideRequestPublic
    created: bool  # False: the same client_request_id and question were submitted before


@dataclass(frozen=True)
class HistoryPage:
    items: list[SideRequestPublic]
    running: SideRequestPublic | None
    snapshot: dict[str, Any] | None
    next_cursor: int  # 0 = no more

    def as_dict(self) -> dict[str, Any]:
        return {"items": [item.model_dump() for item in self.items],
                "running": self.running.model_dump() if self.running else None,
                "snapshot": self.snapshot, "next_cursor": self.next_cursor}


@dataclass
class LiveRequest:
    """In-process state of a running request; followers wake on every change."""

    state: SideRequestPublic
    parent_id: str
    generation: int
    owner_id: str | None = None  # whose share it counts against
    owner_verified: bool = False  # the submission checked that owner_id owns the parent
    task: asyncio.Task[None] | None = None
    cancel_reason: str | None = None
    cleared: bool = False
    gone: bool = False  # the database row was cleared or ended elsewhere
    done: bool = False
    _changed: asyncio.Event = field(default_factory=asyncio.Event)
    _shared: SideUpdate | None = field(default=None, repr=False)  # the current state's update

    def update(self, **fields: Any) -> SideRequestPublic:
        self.state = self.state.model_copy(
            update={**fields, "sequence": self.state.sequence + 1})
        self._notify()
        return self.state

    def finish(self, **fields: Any) -> None:
        if not self.cleared:
            self.update(**fields)
        self.done = True
        self._notify()

    def mark_cleared(self) -> None:
        self.cleared = True
        self.done = True
        self._notify()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    def _current(self) -> SideUpdate:
        """The update of the current state, one object for every follower."""
        shared = self._shared
        if shared is None or shared.request is not self.state:
            shared = self._shared = SideUpdate("state", self.state.sequence, self.state)
        return shared

    async def follow(self) -> AsyncIterator[SideUpdate]:
        last = 0
        while True:
            changed = self._changed
            if self.cleared:
                yield SideUpdate("cleared", self.state.sequence + 1, None)
                return
            if self.state.sequence > last:
                update = self._current()
                last = update.sequence
                yield update
                # Look again: while the follower handled that update the request may have
                # finished, and its terminal state must still be yielded before returning.
                continue
            if self.done:
                return
            await changed.wait()

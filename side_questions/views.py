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
    """In-process state of a running request; followers wake on every change.

    A streamed change is `stage`d: followers see it at the next turn of the event loop,
    unless `hold` keeps it for the answer's end, which then brings it in the same event.
    Why: an answer's last words and its usage come in the same read as the model's reply,
    and the end is announced only once it is stored; published at once, they woke every
    follower for one more event right before the end, and each follower's wait for the end
    spanned both fan-outs and the write between them (100 followers: the end came 22-26
    ms after the last words, measured; the top 1 % of all their gaps)."""

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
    _staged: asyncio.Handle | None = field(default=None, repr=False)  # a pending wake-up

    def update(self, **fields: Any) -> SideRequestPublic:
        """Change the state and wake the followers (with anything staged before)."""
        self._change(fields)
        self._notify()
        return self.state

    def stage(self, **fields: Any) -> None:
        """Change the state; the followers wake at the next turn of the event loop (one
        event for everything staged in this turn), unless `hold` or `update` comes first."""
        self._change(fields)
        if self._staged is None:
            self._staged = asyncio.get_running_loop().call_soon(self._notify)

    def hold(self, at_most_s: float) -> None:
        """Keep what is staged for the end's event, if the end comes within `at_most_s`
        (the database answers slowly or is away: the words go out then, alone)."""
        if self._staged is not None:
            self._staged.cancel()
            self._staged = asyncio.get_running_loop().call_later(at_most_s, self._notify)

    def _change(self, fields: dict[str, Any]) -> None:
        self.state = self.state.model_copy(
            update={**fields, "sequence": self.state.sequence + 1})

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
        if self._staged is not None:  # published now, with this
            self._staged.cancel()
            self._staged = None
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

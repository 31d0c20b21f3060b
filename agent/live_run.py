"""One run's events as they happen, for any number of readers (the page, gradio_client,
Stop). The agent service owns these; nothing here touches the database."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from agent import events as ev
from agent.loop import RunRequest

__all__ = ["LiveRun"]


@dataclass
class LiveRun:
    """Events of one run as they happen; any number of readers can follow it."""

    run_id: str
    conversation_id: str
    owner_id: str
    request: RunRequest
    events: list[dict[str, Any]] = field(default_factory=list)
    finished: asyncio.Event = field(default_factory=asyncio.Event)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None
    finished_at: float | None = None
    started: bool = False  # its task has begun (see `cancel`)
    version: int = 0  # bumped by `poke`: readers render again (the queue beside it changed)

    def append(self, event: Any) -> None:
        self.events.append(event.model_dump(mode="json"))
        self.changed.set()

    def poke(self) -> None:
        self.version += 1
        self.changed.set()

    @property
    def status(self) -> str | None:
        last = self.events[-1] if self.events else None
        return last.get("status") if last and last.get("type") == "done" else None

    async def follow(self) -> AsyncIterator[list[dict[str, Any]]]:
        """Yield the growing event list whenever it changes, until the run is done.

        A reader waits only when it has seen everything, and then on `changed` alone (set
        by every append, poke and the end: `settle` and the run host set it with
        `finished`): no task of its own per update, and a reader that was busy while
        another cleared the flag still finds what is new."""
        seen, version = 0, self.version
        while True:
            if len(self.events) > seen or self.version != version:
                seen, version = len(self.events), self.version
                yield list(self.events)
                continue
            if self.finished.is_set():
                return
            self.changed.clear()
            await self.changed.wait()

    def streamed_text(self) -> str:
        """The answer text streamed since the last non-token event (kept if the process
        dies mid-answer). Empty while the step before it is still being written (behind the
        model call, agent/run_store.py): after a crash then, the transcript would show an
        answer built on tool results it does not hold."""
        if self.request.writing_behind:
            return ""
        text: list[str] = []
        for event in reversed(self.events):
            if event.get("type") != "token":
                break
            text.append(event.get("text", ""))
        return "".join(reversed(text))

    def cancel(self) -> None:
        """Stop the run. A task that has not begun yet is left to begin: it stores the
        person's message and the run, then stops at its first check, so a message stopped
        at once still shows (with "Stopped") instead of vanishing."""
        self.request.cancel_requested.set()
        if self.task is not None and self.started and not self.task.done():
            self.task.cancel()

    def settle(self) -> None:
        """End the event list with `done` and release readers, however the task ended.

        A task cancelled before its first step never runs `_drive`'s handlers, so this is
        also the task's done-callback; for a run that already ended it changes nothing.
        """
        if self.status is None:
            seq = self.events[-1]["seq"] if self.events else 0
            self.append(ev.EventStamper(self.run_id, seq)(ev.Done, status="cancelled"))
        self.finished_at = self.finished_at or time.monotonic()
        self.finished.set()
        self.changed.set()
        # The ended task is let go: it holds the context it was created in, which holds the
        # request that started the run (Gradio's request, and through it that request's
        # connection and socket), for as long as the run stays readable here.
        self.task = None

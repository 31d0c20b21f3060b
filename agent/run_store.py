"""What one run writes to the conversation, in as few transactions as its safety allows.

A run's messages wait in memory and are written together (`flush`, one transaction) when
something must rely on them: a write's approval card or its write-ahead audit row refers to
the call that asked for it, and any audit row must not be ahead of the transcript (recovery
reads both). A step's messages before the next model call are written behind it
(`write_behind`): the next prompt is built from what the run stored (`log`, see
agent/prompt_window.py) while the write runs, and every later write, flush or end waits for
it first (`settle`), so the transcript is written in order and never lands after the run's
end. The run's last messages are written with its end, the conversation's touch and the
release of its lease (`finish`), in one transaction. These writes are committed together
with other runs' writes waiting beside them (`storage.group_commit`): when many runs end at
once, they end in a few transactions instead of taking turns one by one. So a turn that
calls one read tool writes three times: its start (lease, run, the person's message;
`agent.admission`), the call with its result, and its end.

Why behind: with ten runs at once on SQLite, the step's write waited for the one writer
(23 ms median, 81 ms p90, up to 238 ms traced), and the answer's first word waited for it;
the model's first word takes as long, and now both run at once. Nothing the model is sent
has effects, and a write behind that fails fails the run where it next relies on the store
(what it did not write is written with the run's end, once).

What a crash (kill -9) leaves: messages not flushed yet are lost with the process; these
are only a model reply whose calls were read calls (never a write's call: it is flushed
before anything is sent) and their results, and with them whatever the next model call had
streamed meanwhile (never stored before its step's messages). The lease left behind ends
the run as `interrupted` (`agent.run_leases`), so the transcript says the answer was cut
off instead of showing a reply whose calls have no results.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from storage import Database
from storage import conversations as repo
from storage import run_leases as leases_repo

if TYPE_CHECKING:  # the loop imports this module; its types are for annotations only
    from agent.loop import RunRequest

__all__ = ["RunStore"]


class RunStore:
    """The run's unwritten messages and the transactions that write them."""

    def __init__(self, db: Database, request: RunRequest) -> None:
        self.db = db
        self.request = request
        self.pending: list[dict[str, Any]] = []  # messages not written yet, in order
        self.log: list[dict[str, Any]] = []  # every message the run stored, in order
        self.answered: set[str | None] = set()  # call ids whose result is stored (or queued)
        self._behind: asyncio.Future[None] | None = None  # the write `write_behind` started

    def store(self, **fields: Any) -> None:
        """Queue a message; it is written at the next `flush` or with the run's end."""
        self.pending.append(fields)
        self.log.append(fields)
        if fields.get("role") == "tool":
            self.answered.add(fields.get("tool_call_id"))

    def write_behind(self) -> None:
        """Start writing the queued messages, in one transaction, without waiting for it
        (after any write started before: they land in order)."""
        if self.pending:
            self.request.writing_behind = True
            self._behind = asyncio.ensure_future(self._write_after(self._behind))

    async def settle(self) -> None:
        """Wait for the write `write_behind` started; its error is raised here, once (what it
        did not write stays queued). A cancellation that arrives meanwhile waits for that
        write to end and is then raised, as `storage.off_loop` does: nothing this run
        writes is still landing after it goes on."""
        behind, self._behind = self._behind, None
        if behind is None:
            return
        try:
            await asyncio.shield(behind)
        except asyncio.CancelledError:
            with contextlib.suppress(BaseException):
                await behind  # its outcome is not wanted here; only that it has ended
            raise

    async def flush(self) -> None:
        """Write the queued messages now, in one transaction."""
        await self.settle()
        if self.pending:
            await self._commit(len(self.pending))

    def writer(self) -> Callable[[], None] | None:
        """The write of the messages queued now, for a worker thread that reads right after
        it (a prompt read back: one trip to the thread instead of two); None when none are.
        The caller has settled any write behind first."""
        return partial(self._write, len(self.pending)) if self.pending else None

    async def finish(self, status: str, error: str | None, usage: dict[str, Any]) -> None:
        """The queued messages, the run's end, the conversation's touch and the lease's
        release, in one transaction. The run host's heartbeat leaves a finishing run alone
        (its lease is about to go) and releases the lease itself if this fails."""
        try:
            await self.settle()
        except asyncio.CancelledError:  # stopped (again): the end is written all the same
            await self._end(status, error, usage)
            raise
        await self._end(status, error, usage)

    async def _end(self, status: str, error: str | None, usage: dict[str, Any]) -> None:
        self.request.finishing = True
        count = len(self.pending)

        def end(session: Any) -> None:
            self._append(session, count)
            self._finish(session, status, error, usage)

        await self.db.commit_together(end, then=partial(self._ended, count))

    async def _write_after(self, earlier: asyncio.Future[None] | None) -> None:
        if earlier is not None:
            await earlier
        if self.pending:
            await self._commit(len(self.pending))
        if self._behind in (None, asyncio.current_task()):  # none started since: all landed
            self.request.writing_behind = False

    async def _commit(self, count: int) -> None:
        """The first `count` queued messages, committed together with other runs' writes
        waiting beside them (`storage.group_commit`)."""
        await self.db.commit_together(partial(self._append, count=count),
                                      then=partial(self._written, count))

    # worker threads ----------------------------------------------------------------------

    def _append(self, session: Any, count: int) -> None:
        repo.append_messages(session=session, conversation_id=self.request.conversation_id,
                             messages=[{**fields, "run_id": self.request.run_id}
                                       for fields in self.pending[:count]])

    def _write(self, count: int) -> None:
        with self.db.session() as session:
            self._append(session, count)
        self._written(count)

    def _written(self, count: int) -> None:
        # Only once committed: a write that failed (or whose caller was cancelled while it
        # ran to its end) leaves exactly what is still unwritten for the next try.
        del self.pending[:count]

    def _finish(self, session: Any, status: str, error: str | None,
                usage: dict[str, Any]) -> None:
        request = self.request
        repo.finish_run(session=session, run_id=request.run_id, status=status,
                        usage=usage, error=error)
        repo.touch_conversation(session=session, conversation_id=request.conversation_id)
        leases_repo.release(session=session, run_id=request.run_id)

    def _ended(self, count: int) -> None:
        self._written(count)
        self.request.lease_released = True

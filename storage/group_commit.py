"""Group commit: writes that arrive while another is committing are committed together.

Why: when many runs end at once (a hundred streams that started together end together),
each run's end was its own transaction, each in its own worker thread. On SQLite the
process's writers take turns (`storage.write_gate`), and every turn is a hand-off to
another thread, which first waits for the GIL (up to the 5 ms switch interval while the
event loop streams other runs' words): traced at 100 streams, a run's last gap, from its
last words to its `done`, was the largest of its stream, 200-400 ms, while the hundred ends
took turns. Here one thread commits whatever is waiting, in one transaction, and hands the
outcome back to each caller: the last of a hundred ends waits for two or three
transactions, not for a hundred hand-offs. A write alone costs what it did (one transaction
in a worker thread).

Each write is `work(session)`, its statements, and optionally `then()`, what follows its
commit, run in the committing thread right after it (so it happens even when its caller was
cancelled meanwhile). What a caller sees is what its write alone would have given it:
- committed together: every caller returns;
- the batch failed in one write's statements (an IntegrityError, a bug): nothing of it
  landed (rolled back), and each write is tried again alone, so only the failing one fails;
- the database is unavailable (`DatabaseUnavailable`): every caller gets that error and no
  write is tried again here, since a commit that failed that way may have landed (as for a
  write alone, the caller decides). A connection is retried for the policy's budget from
  a write's arrival, as a write alone would have been, not a budget per batch ahead of it.

A cancelled caller waits for its write's transaction to end, then is cancelled
(`storage.off_loop`'s rule: nothing a run wrote is still landing after its end).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from storage.retry import DatabaseUnavailable

if TYPE_CHECKING:
    from sqlmodel import Session

    from storage.db import Database

__all__ = ["GroupCommit"]

# Writes in one transaction at most: SQLite's write lock is held for the whole batch, and
# a person's new turn (its claim) waits behind it.
MAX_BATCH = 32


@dataclass
class _Write:
    work: Callable[[Session], Any]
    then: Callable[[], Any] | None
    loop: asyncio.AbstractEventLoop
    done: asyncio.Future[None]
    deadline: float  # monotonic: how long its connection may be retried, from its arrival


class GroupCommit:
    """The writes waiting to be committed, and the one thread at a time that commits them."""

    def __init__(self, db: Database, max_batch: int = MAX_BATCH) -> None:
        self.db = db
        self.max_batch = max_batch
        self._lock = threading.Lock()
        self._waiting: list[_Write] = []
        self._committing = False
        self.transactions = 0  # batches committed or tried (for tests and traces)

    async def run(self, work: Callable[[Session], Any],
                  then: Callable[[], Any] | None = None) -> None:
        """Commit `work(session)`, together with the writes waiting beside it; `then()`
        once it is committed."""
        loop = asyncio.get_running_loop()
        write = _Write(work, then, loop, loop.create_future(),
                       time.monotonic() + self.db.retry.budget_s)
        with self._lock:
            self._waiting.append(write)
            start, self._committing = not self._committing, True
        if start:
            try:
                loop.run_in_executor(None, self._commit_waiting)
            except RuntimeError:  # the loop's executor is shut down: nothing will commit
                with self._lock:
                    self._waiting.remove(write)
                    self._committing = False
                raise
        try:
            await asyncio.shield(write.done)
        except asyncio.CancelledError:
            if not write.done.done():
                with contextlib.suppress(BaseException):
                    await write.done  # its outcome is not wanted; only that it has ended
            raise

    # the committing thread ----------------------------------------------------------------

    def _commit_waiting(self) -> None:
        while True:
            with self._lock:
                batch = self._waiting[:self.max_batch]
                del self._waiting[:self.max_batch]
                if not batch:
                    self._committing = False
                    return
            try:
                self._commit(batch)
            except BaseException as exc:  # handed to its callers, never lost
                for write in batch:
                    _settle(write, exc)

    def _commit(self, batch: list[_Write]) -> None:
        self.transactions += 1
        # A connection is retried while any write of the batch has time left, counted from
        # its arrival: in an outage, writes queued behind a failed batch have waited out
        # their budget with it, and fail without waiting a whole budget more each batch.
        left = max(0.0, max(write.deadline for write in batch) - time.monotonic())
        try:
            with self.db.session(connect_budget_s=left) as session:
                for write in batch:
                    write.work(session)
        except DatabaseUnavailable as exc:
            for write in batch:
                _settle(write, exc)
            return
        except Exception as exc:
            if len(batch) == 1:
                _settle(batch[0], exc)
                return
            for write in batch:  # rolled back: each alone, so only the failing one fails
                try:
                    self._commit([write])
                except BaseException as alone:  # handed to its caller
                    _settle(write, alone)
            return
        for write in batch:  # committed: each one's `then`, whatever another's does
            try:
                if write.then is not None:
                    write.then()
            except Exception as exc:
                _settle(write, exc)
                continue
            _settle(write, None)


def _settle(write: _Write, error: BaseException | None) -> None:
    """Hand a write's outcome to its caller's loop (once; a closed loop has nobody left)."""

    def settle() -> None:
        if write.done.done():
            return
        if error is None:
            write.done.set_result(None)
        else:
            write.done.set_exception(error)

    with contextlib.suppress(RuntimeError):
        write.loop.call_soon_threadsafe(settle)

"""Writes the latest value of something at most once per interval, off the event loop.

Both the snapshot store and the streaming answer need the same thing: many updates a
second in memory, few database writes, the newest value always winning, and a failed
write kept and retried instead of lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["ThrottledWriter"]

_log = logging.getLogger(__name__)

T = TypeVar("T")


class ThrottledWriter(Generic[T]):
    """Holds one pending value; a background task writes it in a worker thread when due.

    `write` runs in a thread and returns normally on success. On failure the pending value
    is kept; the task retries with backoff up to `max_retries` times, after which the next
    `offer` or `flush` tries again. `lane()`: a semaphore that writers of the same kind
    share, so that their background writes queue for it instead of all running at once
    (a `flush`, which someone waits for, does not queue).
    """

    def __init__(self, write: Callable[[T], object], *, interval_s: float = 0.25,
                 max_retries: int = 3, retry_delay_s: float = 0.25,
                 last_write: float | None = None,
                 lane: Callable[[], asyncio.Semaphore] | None = None) -> None:
        self._write = write
        self._lane = lane
        self.interval_s = interval_s
        self.max_retries = max_retries
        self.retry_delay_s = retry_delay_s
        self._pending: T | None = None
        self._last_write = last_write if last_write is not None else float("-inf")
        self._lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        self.failures = 0
        self.writes = 0

    @property
    def pending(self) -> T | None:
        return self._pending

    @property
    def last_write_at(self) -> float:
        """`time.monotonic()` at the start of the last write attempt."""
        return self._last_write

    @property
    def idle(self) -> bool:
        return self._pending is None and (self._task is None or self._task.done())

    def offer(self, value: T) -> None:
        """Make `value` the one to write next (call from the event loop; never blocks)."""
        if self._closed:
            return
        self._pending = value
        self.failures = 0
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while self._pending is not None and not self._closed:
            delay = self._last_write + self.interval_s - time.monotonic()
            if self.failures:
                delay = max(delay, min(5.0, self.retry_delay_s * 2 ** (self.failures - 1)))
            if delay > 0:
                await asyncio.sleep(delay)
            if self._closed:
                return
            async with self._lane() if self._lane is not None else contextlib.nullcontext():
                written = await self._write_pending()  # the newest value when the lane frees
            if not written and self.failures > self.max_retries:
                return  # keep the value; the next offer or flush tries again

    async def _write_pending(self) -> bool:
        async with self._lock:
            value = self._pending
            if value is None:
                return True
            self._last_write = time.monotonic()
            try:
                await asyncio.to_thread(self._write, value)
            except Exception as exc:  # database errors: keep the value for a retry
                self.failures += 1
                _log.warning("a throttled write failed (attempt %d), kept for a retry: %s",
                             self.failures, type(exc).__name__, exc_info=self.failures == 1)
                return False
            self.writes += 1
            self.failures = 0
            if self._pending is value:
                self._pending = None  # release it: the database has it now
            return True

    async def flush(self, attempts: int = 3) -> bool:
        """Write the pending value now, ignoring the interval; True when nothing is left."""
        for attempt in range(attempts):
            if self._pending is None:
                return True
            if not await self._write_pending():
                await asyncio.sleep(self.retry_delay_s * (attempt + 1))
        return self._pending is None

    async def close(self) -> None:
        """Drop the pending value and stop, waiting for a write already in flight. A task
        that is only waiting for its turn (the interval, the lane) is cancelled and not
        waited for: it writes nothing once closed, and waiting for it to take its
        cancellation cost a turn of the event loop, which under load (a hundred SSE
        followers) came between a side answer's last words and its end's write."""
        self._closed = True
        self._pending = None
        task = self._task
        if task is None or task.done():
            return
        if self._lock.locked():
            with contextlib.suppress(Exception):
                await task
        else:
            task.cancel()

"""One SQLite writer at a time in this process, handed on the moment it commits.

Why: SQLite takes one writer at a time, and a writer that finds the file locked waits in
its busy handler, which sleeps 1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100 ms between its
tries whether or not the lock was freed meanwhile. When many writes arrive at once, the
unlucky ones slept on while the lock stood free: traced (100 one-tool streams at once,
offline model at 20 ms a token; statement times from the engine's events), the write lock
was held about a sixth of the time, yet a run's first write (its conversation's INSERT)
took 0.1 ms of CPU and 9.6 ms of wall time (median), 330 ms (p90), up to 934 ms, and the
touch that opens a run's end up to 834 ms: a page saw its run start, or its `done`,
0.3-1.1 s late.

Here a write session's first write statement waits for the gate instead (a lock: the next
writer wakes as the last one commits), so the process's writers reach SQLite's lock one at
a time and find it free. The gate is taken lazily, at the first statement that is not a
SELECT (a session that only reads never waits), and given back right after the session's
commit or rollback (`storage.db.Database._session`). Measured side by side with the code
before (bench probes, 100 streams, 4 rounds each): the largest gap between a stream's
updates 348-1 140 ms -> 118-187 ms, the 99.9th percentile 90-530 -> 79-112 ms; the p99
45-54 -> 50-57 ms (a fair turn moves the middle of the writers' waits up as it cuts their
top); 10 streams alike (p99 median of 12 rounds 10.3 -> 10.9 ms).

Another process (a second process on the same file, a migration) still meets SQLite's own
lock and busy handler, as before. A thread that already holds the gate and writes in a
second session does not wait for itself, and no writer waits longer than SQLite's busy
timeout here before it goes on to SQLite's own lock: a gate that is never given back costs
what the busy handler would, not a deadlock.
"""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["WriteGate", "before_write"]

_GATE = "superset_agent.write_gate"  # Connection.info: this session's writes pass the gate
_HOLDS = "superset_agent.holds_gate"  # Connection.info: whether it took the gate (once)


def before_write(info: dict[Any, Any]) -> None:
    """A statement that writes is about to run on the connection whose `info` this is
    (`storage.db` decides what writes, for the commit as for the gate): a gated session
    tries the gate once, taken or not."""
    gate = info.get(_GATE)
    if gate is not None and _HOLDS not in info:
        info[_HOLDS] = gate._take()


class WriteGate:
    """The process's SQLite writer's turn, taken at a session's first write."""

    def __init__(self, timeout_s: float) -> None:
        self._lock = threading.Lock()
        self._owner: int | None = None
        self.timeout_s = timeout_s
        self.waited = 0  # writes that found the gate taken (for tests and traces)

    def enter(self, info: dict[Any, Any]) -> None:
        """Make a write session's connection (its `info`) pass the gate when it writes."""
        info[_GATE] = self
        info.pop(_HOLDS, None)

    def leave(self, info: dict[Any, Any]) -> None:
        """The session ended (committed, rolled back or closed): the next writer's turn."""
        info.pop(_GATE, None)
        if info.pop(_HOLDS, False):
            self._owner = None
            self._lock.release()

    def _take(self) -> bool:
        """True when this thread now holds the gate (to give back at `leave`)."""
        me = threading.get_ident()
        if self._owner == me:  # a second session of the holder: SQLite decides, as before
            return False
        if not self._lock.acquire(blocking=False):
            self.waited += 1
            if not self._lock.acquire(timeout=self.timeout_s):
                return False  # on to SQLite's own lock and busy handler
        self._owner = me
        return True

"""Replica-safe recovery of side questions: instance ids, timings, and the stale-row sweeper.

Several app processes share one database, so "running" cannot mean "running in this
process". Each process has an instance id; its running rows carry that id and a heartbeat
that every progress write refreshes (plus a touch when no tokens arrive). Any process may
end a row as `interrupted` once its heartbeat is older than `side_stale_after_s`: at
start, every `sweep_s` from a background thread, and before a submit finds its parent busy.
A live replica's answer is never touched, and a dead one's is ended within about
`stale_after_s + sweep_s`.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
import weakref
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "REPLICA_SEPARATOR",
    "RecoveryTimings",
    "StaleSweeper",
    "default_replica_name",
    "new_instance_id",
]

_log = logging.getLogger(__name__)
MAX_SWEEP_INTERVAL_S = 15.0


REPLICA_SEPARATOR = "|"


def default_replica_name(port: int) -> str:
    return f"{socket.gethostname()[:48]}:{port}"


def new_instance_id(replica: str | None = None) -> str:
    """`<replica>|<pid>.<random>`: the replica part is stable across restarts of the same
    replica, the rest is unique per process start."""
    replica = replica or default_replica_name(0)
    return f"{replica}{REPLICA_SEPARATOR}{os.getpid()}.{uuid.uuid4().hex[:12]}"


@dataclass(frozen=True)
class RecoveryTimings:
    """Derived from one setting so they stay in proportion: several heartbeats fit in the
    stale window (a slow write or a busy loop does not end a live answer), and a sweep
    runs at least twice per window."""

    stale_after_s: float

    @property
    def heartbeat_s(self) -> float:
        return self.stale_after_s / 4

    @property
    def sweep_s(self) -> float:
        return min(self.stale_after_s / 2, MAX_SWEEP_INTERVAL_S)


class StaleSweeper:
    """Calls `sweep` every `interval_s` in a daemon thread until stopped.

    A thread, not an asyncio task: the service is built before any event loop runs, and a
    replica with no side-question traffic must still end rows a dead replica left behind.
    It holds the sweep method weakly, so a service dropped without `stop()` (a test that
    never closes its runtime) does not keep a thread sweeping forever.
    """

    def __init__(self, sweep: Callable[[], object], *, interval_s: float,
                 name: str = "side-question-sweeper") -> None:
        self._sweep = weakref.WeakMethod(sweep)  # type: ignore[arg-type]
        self.interval_s = interval_s
        self._name = name
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.sweeps = 0

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        if self.running:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout_s)
        self._thread = None

    def _run(self) -> None:
        failing = False
        while not self._stop.wait(self.interval_s):
            sweep = self._sweep()
            if sweep is None:  # the service is gone
                return
            try:
                sweep()
                self.sweeps += 1
                failing = False
            except Exception as exc:  # the database may be briefly down: try next time
                if not failing:
                    _log.warning("side-question sweep failed: %s", exc)
                failing = True
            del sweep

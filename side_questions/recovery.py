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
import threading
import weakref
from collections.abc import Callable

from agent.replicas import (  # re-exported: the side-question service's names for them
    REPLICA_SEPARATOR,
    RecoveryTimings,
    default_replica_name,
    new_instance_id,
)

__all__ = [
    "REPLICA_SEPARATOR",
    "RecoveryTimings",
    "StaleSweeper",
    "default_replica_name",
    "new_instance_id",
]

_log = logging.getLogger(__name__)


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

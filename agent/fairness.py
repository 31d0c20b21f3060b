"""Fair shares per user (SPEC §10): token buckets for how often someone may start work.

Each user has a bucket of `burst` tokens that refills at `per_minute`; starting a run (or a
side question) takes one. An empty bucket answers how long until the next token, which the
caller turns into 429 + `Retry-After`. Buckets live in process memory: with several replicas
each enforces its own share (sticky sessions keep a person on one), which is the honest
choice for a limit that smooths bursts rather than guards an invariant.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

__all__ = ["UserRates"]

_MAX_USERS = 10_000  # full (idle) buckets are forgotten beyond this many users


class UserRates:
    def __init__(self, *, per_minute: float, burst: int,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.rate_per_s = per_minute / 60.0
        self.burst = max(1, burst)
        self.clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}  # user -> (tokens, updated at)
        self._lock = threading.Lock()

    def take(self, user: str) -> int:
        """Take a token for `user`: 0 when allowed, else whole seconds until one is back."""
        with self._lock:
            now = self.clock()
            tokens, updated = self._buckets.get(user, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - updated) * self.rate_per_s)
            if tokens >= 1.0:
                self._buckets[user] = (tokens - 1.0, now)
                self._forget_idle(now)
                return 0
            self._buckets[user] = (tokens, now)
            if self.rate_per_s <= 0:
                return 60
            return max(1, math.ceil((1.0 - tokens) / self.rate_per_s))

    def give_back(self, user: str) -> None:
        """Return a token taken for something that did not happen after all."""
        with self._lock:
            found = self._buckets.get(user)
            if found is not None:
                self._buckets[user] = (min(float(self.burst), found[0] + 1.0), found[1])

    def _forget_idle(self, now: float) -> None:
        if len(self._buckets) <= _MAX_USERS:
            return
        full = [user for user, (tokens, updated) in self._buckets.items()
                if tokens + (now - updated) * self.rate_per_s >= self.burst]
        for user in full:
            del self._buckets[user]

"""Coalesces streamed text deltas so a run emits about 20 token events a second at most."""

from __future__ import annotations

import time

__all__ = ["TokenCoalescer"]


class TokenCoalescer:
    """Buffers deltas; `add` returns text to emit once `interval_s` has passed since the last."""

    def __init__(self, interval_s: float = 0.05, clock=time.monotonic) -> None:  # type: ignore[no-untyped-def]
        self.interval_s = interval_s
        self._clock = clock
        self._buffer: list[str] = []
        self._last = clock()

    def add(self, text: str) -> str | None:
        self._buffer.append(text)
        now = self._clock()
        if now - self._last >= self.interval_s:
            self._last = now
            return self.flush()
        return None

    def flush(self) -> str | None:
        if not self._buffer:
            return None
        text = "".join(self._buffer)
        self._buffer.clear()
        return text

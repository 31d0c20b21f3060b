"""Coalesces streamed text deltas so a run emits about 20 token events a second at most
(SPEC: `token` events).

Two forms. `TokenCoalescer` is pulled: it can only emit when the next delta arrives, so
the last words before a pause wait for whatever comes next (the run's loop uses it for a
gateway that does not coalesce itself: litellm in the server's own process, as in tests).
`TextBatcher` pushes: the model worker process (`agent/model_worker.py`) sends through it,
so the served app's main runs, side answers and summaries all get coalesced text; it sends
a stream's first words at once, and its timer sends the words a pause would hold (while a
model streams a tool call's arguments, say) within one interval.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

__all__ = ["INTERVAL_S", "TextBatcher", "TokenCoalescer"]

INTERVAL_S = 0.05


class TokenCoalescer:
    """Buffers deltas; `add` returns text to emit once `interval_s` has passed since the last
    emit (or since it was made)."""

    def __init__(self, interval_s: float = INTERVAL_S, clock=time.monotonic) -> None:  # type: ignore[no-untyped-def]
        self.interval_s = interval_s
        self._clock = clock
        self._buffer: list[str] = []
        self._last = clock()

    @classmethod
    def for_gateway(cls, gateway: object) -> TokenCoalescer:
        """One that passes every delta straight on when the gateway's text comes coalesced
        already (`coalesces_text`: the worker process's), else one of `INTERVAL_S`."""
        return cls(0.0 if getattr(gateway, "coalesces_text", False) else INTERVAL_S)

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


class TextBatcher:
    """Sends text through `send` at most once per `interval_s`: the first delta at once, later
    ones joined and sent when the interval since the last send is over, by a timer on the
    running loop if no further delta comes. `flush` sends what is held now (before the
    stream's reply or error, so the text comes first); `close` drops it (nobody reads)."""

    def __init__(self, send: Callable[[str], None], interval_s: float = INTERVAL_S) -> None:
        self._send = send
        self.interval_s = interval_s
        self._loop = asyncio.get_running_loop()
        self._buffer: list[str] = []
        self._last = float("-inf")
        self._timer: asyncio.TimerHandle | None = None

    def add(self, text: str) -> None:
        self._buffer.append(text)
        due = self._last + self.interval_s
        if self._loop.time() >= due:
            self.flush()
        elif self._timer is None:
            self._timer = self._loop.call_at(due, self.flush)

    def flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._buffer:
            text = "".join(self._buffer)
            self._buffer.clear()
            self._last = self._loop.time()
            self._send(text)

    def take(self) -> str:
        """The text held now, for the caller to send along with what comes next (the
        stream's reply, in the same write); the timer goes."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        text = "".join(self._buffer)
        self._buffer.clear()
        return text

    def close(self) -> None:
        self._buffer.clear()
        self.flush()  # nothing left to send: only the timer goes

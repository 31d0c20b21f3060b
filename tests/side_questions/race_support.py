"""A deterministic race at the database boundary: hold two submissions at the same point.

SQLAlchemy engine events (not mocks of our own classes) stop each engine's first ordinal
claim until every engine has reached it, so both submissions have passed the service's
"is the parent busy?" read before either inserts: only the database can refuse one.
"""

from __future__ import annotations

import threading
from typing import Any

from sqlalchemy import Engine, event

__all__ = ["OrdinalClaimGate"]


class OrdinalClaimGate:
    """Holds each engine's first ordinal claim (the UPDATE that starts a request's insert,
    `create_request`) until every engine has reached it; `close()` removes the hook."""

    def __init__(self, *engines: Engine, timeout_s: float = 15.0) -> None:
        self.barrier = threading.Barrier(len(engines), timeout=timeout_s)
        self._waiting = {id(engine) for engine in engines}
        self._lock = threading.Lock()
        self._engines = engines
        for engine in engines:
            event.listen(engine, "before_cursor_execute", self._seen)

    def _seen(self, conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if not (statement.lstrip().upper().startswith("UPDATE")
                and "next_ordinal" in statement):
            return
        with self._lock:
            first = id(conn.engine) in self._waiting
            self._waiting.discard(id(conn.engine))
        if first:  # in a worker thread (the service's asyncio.to_thread), never the loop
            self.barrier.wait()

    def close(self) -> None:
        for engine in self._engines:
            if event.contains(engine, "before_cursor_execute", self._seen):
                event.remove(engine, "before_cursor_execute", self._seen)

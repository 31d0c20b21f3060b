"""The database's one retry policy, and which errors count as a passing outage.

A transient error is one that the same statement can survive a moment later: the server
refused or dropped the connection (it is restarting, a failover, a reset), PostgreSQL
serialization failures and deadlocks, and SQLite's "database is locked". Everything else
(a constraint, a syntax error, a missing table) is a bug or a conflict and is never retried.

When the retries run out, `storage.db.Database` raises `DatabaseUnavailable`, which carries
only the message people may see: no driver text, host or port (those go to the log).
"""

from __future__ import annotations

import asyncio
import sqlite3
from dataclasses import dataclass

from sqlalchemy import exc as sa_exc
from tenacity import (
    AsyncRetrying,
    Retrying,
    retry_if_exception,
    stop_before_delay,
    wait_exponential,
)

__all__ = [
    "DATABASE_UNAVAILABLE",
    "DEFAULT_POLICY",
    "DatabaseUnavailable",
    "RetryPolicy",
    "is_transient",
    "on_event_loop",
]

DATABASE_UNAVAILABLE = "The database is unavailable; try again shortly."

# PostgreSQL SQLSTATEs worth another try: serialization failure, deadlock, the server shutting
# down or starting up, too many connections; class 08 (connection exceptions) is added below.
_PG_TRANSIENT = {"40001", "40P01", "57P01", "57P02", "57P03", "53300"}
_SQLITE_TRANSIENT = ("database is locked", "database table is locked", "database is busy")


class DatabaseUnavailable(Exception):
    """The database could not be reached, or kept refusing, for the whole retry budget.

    The message is safe to show to anyone; `retry_after_s` is what REST puts in
    `Retry-After`. The driver's exception is the `__cause__`, for the log only.
    """

    def __init__(self, message: str = DATABASE_UNAVAILABLE, *, retry_after_s: int = 5) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


def is_transient(exc: BaseException) -> bool:
    """True for errors a retry a moment later can cure (see the module docstring)."""
    if isinstance(exc, DatabaseUnavailable | sa_exc.TimeoutError):
        return True  # an earlier outage, or every pooled connection busy for pool_timeout
    if not isinstance(exc, sa_exc.DBAPIError):
        return False
    if exc.connection_invalidated:
        return True
    orig = exc.orig
    if isinstance(orig, sqlite3.Error):
        return any(text in str(orig).lower() for text in _SQLITE_TRANSIENT)
    state = getattr(orig, "sqlstate", None)
    if state:
        return state in _PG_TRANSIENT or state.startswith("08")
    # psycopg without a SQLSTATE: the client side of the connection failed (refused,
    # reset, closed by the server, timed out connecting).
    return isinstance(exc, sa_exc.OperationalError | sa_exc.InterfaceError)


def on_event_loop() -> bool:
    """Whether the caller runs on an asyncio event loop's thread (blocking stalls it)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


@dataclass(frozen=True)
class RetryPolicy:
    """How long a database call keeps retrying transient errors, and how it waits.

    `budget_s` bounds a call on a request path, so an outage answers "unavailable" within
    a few seconds instead of hanging. On an event loop's own thread every sleep stalls all
    other requests (streams, health checks), so a call made there gets `loop_budget_s`.
    Waits grow from `first_wait_s` to `max_wait_s`: the cap is how soon after the database
    returns a long retry notices.
    """

    budget_s: float = 3.0
    loop_budget_s: float = 0.2
    first_wait_s: float = 0.05
    max_wait_s: float = 0.5

    def budget(self, budget_s: float | None = None) -> float:
        """The budget of a call made now, from here: `budget_s` or the default, capped on
        an event loop's thread."""
        chosen = self.budget_s if budget_s is None else budget_s
        return min(chosen, self.loop_budget_s) if on_event_loop() else chosen

    def _kwargs(self, budget_s: float) -> dict[str, object]:
        return {"retry": retry_if_exception(is_transient), "reraise": True,
                "stop": stop_before_delay(budget_s),
                "wait": wait_exponential(multiplier=self.first_wait_s, min=self.first_wait_s,
                                         max=self.max_wait_s)}

    def retrying(self, budget_s: float) -> Retrying:
        """Blocking retries for at most `budget_s` seconds (0: one attempt)."""
        return Retrying(**self._kwargs(budget_s))  # type: ignore[arg-type]

    def async_retrying(self, budget_s: float) -> AsyncRetrying:
        """The same with asyncio sleeps: the loop stays free and cancelling stops it."""
        return AsyncRetrying(**self._kwargs(budget_s))  # type: ignore[arg-type]


DEFAULT_POLICY = RetryPolicy()

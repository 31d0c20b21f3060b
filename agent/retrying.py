"""The one retry policy of tool calls (SPEC §5), configured once with tenacity.

Read tools are retried exactly once, after a fixed 1 s, on a transient failure (HTTP
502/503/504, connection error, read timeout — `TransientToolError` — or the tool's own
timeout). Writes are never retried: their outcome may be unknown, and only a person may
decide to try again. The wait is taken here, after the caller has been told (so the
`tool_retry` event reaches the UI before the pause, not after it).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from tenacity import RetryCallState, retry_if_exception, stop_after_attempt, wait_fixed
from tenacity.asyncio import AsyncRetrying

from agent.errors import TransientToolError

__all__ = ["READ_DELAY_S", "READ_MAX_ATTEMPTS", "RetryNotice", "is_transient", "with_retries"]

READ_MAX_ATTEMPTS = 2
READ_DELAY_S = 1.0


def is_transient(exc: BaseException) -> bool:
    return isinstance(exc, TransientToolError | TimeoutError)


@dataclass(frozen=True)
class RetryNotice:
    """Attempt `attempt` of `max_attempts` failed with `error`; the next starts after delay_s."""

    attempt: int
    max_attempts: int
    delay_s: float
    error: str


def _policy(on_retry: Callable[[RetryCallState], None]) -> AsyncRetrying:
    async def _deferred(_: float) -> None:  # the wait happens in with_retries, after notice
        return None

    return AsyncRetrying(stop=stop_after_attempt(READ_MAX_ATTEMPTS),
                         wait=wait_fixed(READ_DELAY_S), retry=retry_if_exception(is_transient),
                         reraise=True, before_sleep=on_retry, sleep=_deferred)


async def with_retries(attempt: Callable[[], Awaitable[Any]], *, retry: bool
                       ) -> AsyncIterator[RetryNotice | Any]:
    """Yield a `RetryNotice` before each retry and finally the attempt's value; the last
    failure propagates. With `retry=False` (writes) there is exactly one attempt."""
    if not retry:
        yield await attempt()
        return
    notices: list[RetryNotice] = []

    def on_retry(state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome else None
        delay = state.next_action.sleep if state.next_action else READ_DELAY_S
        notices.append(RetryNotice(attempt=state.attempt_number,
                                   max_attempts=READ_MAX_ATTEMPTS, delay_s=float(delay),
                                   error=str(error) or type(error).__name__))

    async for manager in _policy(on_retry):
        if notices:
            notice = notices.pop()
            yield notice
            await asyncio.sleep(notice.delay_s)
        with manager:
            value = await attempt()
        if not manager.retry_state.outcome or not manager.retry_state.outcome.failed:
            yield value
            return

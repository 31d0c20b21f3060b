"""Runs one validated tool call with a timeout and the retry policy, and turns failures
into results for the model.

A tool that fails becomes a result carrying the error; only cancellation propagates.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import httpx
from pydantic import ValidationError

from agent.errors import SupersetRefused, ToolFailure, TransientToolError
from agent.retrying import RetryNotice, is_transient, with_retries
from agent.secrets import scrub_patterns
from agent.tools.registry import ToolContext, ToolSpec
from agent.truncation import truncate

__all__ = ["ExecutionResult", "ToolTimedOut", "execute", "validate_args"]


class ToolTimedOut(TransientToolError):
    """The call ran past its deadline. Transient for a read; for a write, status unknown."""


@dataclass
class ExecutionResult:
    ok: bool
    text: str  # exactly what the model sees
    truncated: bool = False
    error: str | None = None
    retryable: bool = False
    retry_exhausted: bool = False
    timed_out: bool = False
    duration_ms: int = 0
    raw: Any = None
    # Superset's own permissions refused the person's token: a denial, not a failure.
    refused_reason: str | None = None


def validate_args(spec: ToolSpec, arguments: dict[str, Any]) -> tuple[Any, str | None]:
    """Validate arguments against the tool's schema; return (model, error text)."""
    try:
        return spec.args_schema.model_validate(arguments), None
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}"
            for err in exc.errors()[:5]
        )
        return None, f"Invalid arguments for {spec.name}: {problems}"


def _timed_out(exc: BaseException) -> bool:
    """The tool's own deadline, or Superset's HTTP timeout (a read or write timeout)."""
    return isinstance(exc, ToolTimedOut) or isinstance(exc.__cause__, httpx.TimeoutException)


async def execute(
    spec: ToolSpec, args: Any, ctx: ToolContext, *, timeout_s: float, output_limit: int,
    scrub: Callable[[str], str] = scrub_patterns,
) -> AsyncIterator[RetryNotice | ExecutionResult]:
    """Run a validated call under the retry policy: yield a `RetryNotice` before each retry
    (reads only) and finally one `ExecutionResult`. Writes run exactly once. Everything that
    came back from outside (errors, output) leaves through `scrub`, so no credential that
    Superset or a proxy echoed reaches an event, the store or a prompt."""
    started = time.monotonic()
    is_read = spec.risk == "read"

    def elapsed() -> int:
        return int((time.monotonic() - started) * 1000)

    async def attempt() -> Any:
        try:
            return await asyncio.wait_for(spec.run(args, ctx), timeout=timeout_s)
        except TimeoutError as exc:
            raise ToolTimedOut(f"{spec.name} timed out after {timeout_s:g} s.") from exc

    try:
        raw: Any = None
        async for item in with_retries(attempt, retry=is_read):
            if isinstance(item, RetryNotice):
                yield dataclasses.replace(item, error=scrub(item.error))
            else:
                raw = item
    except ToolFailure as exc:
        transient = is_transient(exc)
        error = scrub(str(exc))
        yield ExecutionResult(
            ok=False, text=f"Error: {error}", error=error, timed_out=_timed_out(exc),
            retryable=is_read and transient, retry_exhausted=is_read and transient,
            duration_ms=elapsed(),
            refused_reason=scrub(exc.reason) if isinstance(exc, SupersetRefused) else None)
        return
    text, truncated = truncate(raw, output_limit)
    text = scrub(text)
    yield ExecutionResult(ok=True, text=text, truncated=truncated, duration_ms=elapsed(),
                          raw=raw)

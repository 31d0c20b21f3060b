"""Runs one validated tool call with a timeout and turns failures into results for the model.

A tool that fails becomes a result carrying the error; only cancellation propagates.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from agent.errors import ToolFailure, TransientToolError
from agent.tools.registry import ToolContext, ToolSpec
from agent.truncation import truncate

__all__ = ["ExecutionResult", "execute_tool", "validate_args"]


@dataclass
class ExecutionResult:
    ok: bool
    text: str  # exactly what the model sees
    truncated: bool = False
    error: str | None = None
    retryable: bool = False
    timed_out: bool = False
    duration_ms: int = 0
    raw: Any = None


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


async def execute_tool(
    spec: ToolSpec, args: Any, ctx: ToolContext, *, timeout_s: float, output_limit: int
) -> ExecutionResult:
    started = time.monotonic()

    def elapsed() -> int:
        return int((time.monotonic() - started) * 1000)

    try:
        raw = await asyncio.wait_for(spec.run(args, ctx), timeout=timeout_s)
    except TimeoutError:
        return ExecutionResult(ok=False, text=f"Error: {spec.name} timed out after {timeout_s:g} s.",
                               error=f"timed out after {timeout_s:g} s", timed_out=True,
                               retryable=spec.risk == "read", duration_ms=elapsed())
    except ToolFailure as exc:
        return ExecutionResult(ok=False, text=f"Error: {exc}", error=str(exc),
                               retryable=isinstance(exc, TransientToolError),
                               duration_ms=elapsed())
    text, truncated = truncate(raw, output_limit)
    return ExecutionResult(ok=True, text=text, truncated=truncated, duration_ms=elapsed(), raw=raw)

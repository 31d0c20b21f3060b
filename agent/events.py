"""Every event of an agent run (SPEC §2) as a pydantic model with a `type` discriminator.

The wire format is `model_dump(mode="json")`. The loop builds events through an
`EventStamper`, which gives each one the run id, an increasing `seq` and a timestamp.
"""

from __future__ import annotations

import time
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, TypeAdapter

__all__ = [
    "AgentEvent",
    "ConfirmRequired",
    "Done",
    "EventStamper",
    "MessageEvent",
    "PermissionDenied",
    "RunStarted",
    "Token",
    "ToolCall",
    "ToolError",
    "ToolResult",
    "ToolRetry",
    "ToolTimeout",
    "Usage",
    "Warning",
    "parse_event",
]

ToolRisk = Literal["read", "write", "dangerous"]
RunStatus = Literal["completed", "awaiting_confirmation", "cancelled", "failed"]


class _Event(BaseModel):
    run_id: str
    seq: int = 0
    ts: float = 0.0


class Usage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cost_usd: float | None = None  # None: the provider's price is unknown (e.g. offline)

    def add(self, other: Usage) -> Usage:
        costs = [c for c in (self.cost_usd, other.cost_usd) if c is not None]
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            cost_usd=sum(costs) if costs else None,
        )


class RunStarted(_Event):
    type: Literal["run_started"] = "run_started"
    conv_id: str
    context: dict[str, Any] | None
    env_id: str | None
    env_tier: str | None
    tools: list[str]
    model: str


class Token(_Event):
    type: Literal["token"] = "token"
    text: str


class ToolCall(_Event):
    type: Literal["tool_call"] = "tool_call"
    call_id: str
    tool: str
    args: dict[str, Any]
    env_id: str | None
    tool_risk: ToolRisk | None


class ToolRetry(_Event):
    type: Literal["tool_retry"] = "tool_retry"
    call_id: str
    tool: str
    attempt: int
    max_attempts: int
    delay_s: float
    error: str


class ToolResult(_Event):
    type: Literal["tool_result"] = "tool_result"
    call_id: str
    tool: str
    summary: str
    truncated: bool
    duration_ms: int
    decision: str | None = None  # "approved": it ran after the person approved it
    # A write with a stored pre-image: its `executing` audit row, which `undo_change` takes.
    undo_audit_id: int | None = None


class ToolError(_Event):
    type: Literal["tool_error"] = "tool_error"
    call_id: str
    tool: str
    error: str
    retryable: bool
    retry_exhausted: bool
    duration_ms: int = 0
    decision: str | None = None  # "denied" / "expired": the person's call, not a failure


class ToolTimeout(_Event):
    type: Literal["tool_timeout"] = "tool_timeout"
    call_id: str
    tool: str
    timeout_s: float
    is_write_tool: bool
    retryable: bool
    message: str


class PermissionDenied(_Event):
    type: Literal["permission_denied"] = "permission_denied"
    call_id: str
    tool: str
    reason: str
    required_role: str | None


class ConfirmRequired(_Event):
    type: Literal["confirm_required"] = "confirm_required"
    confirmation_id: str
    call_id: str
    tool: str
    args: dict[str, Any]
    env_id: str | None
    tool_risk: ToolRisk
    env_risk: str | None
    permission_risk: str
    dangerous: bool
    countdown_s: int
    summary: str
    expires_at: float
    # For updates: [{"field", "before", "after"}] ("before" None when it could not be read).
    changes: list[dict[str, Any]] = Field(default_factory=list)
    # For deletes and migrations: [{"kind", "count", "effect", "names"}] (agent.impact).
    impact: list[dict[str, Any]] = Field(default_factory=list)


class Warning(_Event):
    type: Literal["warning"] = "warning"
    message: str


class MessageEvent(_Event):
    type: Literal["message"] = "message"
    role: Literal["assistant"] = "assistant"
    content: str
    # Superset pages of the objects the answer names, built by the server (object_links)
    links: list[dict[str, Any]] = Field(default_factory=list)


class Done(_Event):
    type: Literal["done"] = "done"
    status: RunStatus
    usage: Usage = Field(default_factory=Usage)
    error: str | None = None
    # A completed run's time as its stored answer keeps it (agent/loop.py `answer_meta`), so
    # the live footnote and the one a reload shows read the same; None where none is stored.
    duration_s: float | None = None


AgentEvent = Annotated[
    RunStarted
    | Token
    | ToolCall
    | ToolRetry
    | ToolResult
    | ToolError
    | ToolTimeout
    | PermissionDenied
    | ConfirmRequired
    | Warning
    | MessageEvent
    | Done,
    Field(discriminator="type"),
]

_adapter: TypeAdapter[AgentEvent] = TypeAdapter(AgentEvent)


def parse_event(data: dict[str, Any]) -> AgentEvent:
    """Validate one wire-format event dict back into its model."""
    return _adapter.validate_python(data)


class EventStamper:
    """Gives every event of one run its run id, an increasing sequence and a timestamp."""

    def __init__(self, run_id: str, start_seq: int = 0) -> None:
        self.run_id = run_id
        self._seq = start_seq

    def __call__(self, event_cls: type[_Event], **fields: Any) -> Any:
        self._seq += 1
        return event_cls(run_id=self.run_id, seq=self._seq, ts=time.time(), **fields)

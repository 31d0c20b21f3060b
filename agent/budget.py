"""Token budget of a model request (SPEC §9 "Limits"), shared by the main run and side questions.

    input budget = context window − output cap − safety margin
    margin       = 5% of the window, bounded to 128..8192 tokens
    window       = AGENT_CONTEXT_WINDOW when set, else litellm's model info, else 200K

Token counts are estimates (characters / 4 plus a per-message overhead): they only need to
be stable and roughly right, since the provider's overflow error is the final judge (one
smaller retry, `Budget.shrunk`). Pure arithmetic: no model calls, no litellm import.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent.model_gateway import ModelGateway
    from agent.settings import Settings

__all__ = [
    "DEFAULT_CONTEXT_WINDOW",
    "KEEP_RECENT_TOKENS",
    "MAX_SUMMARY_CALLS",
    "Budget",
    "estimate_message",
    "estimate_messages",
    "estimate_text",
    "estimate_tools",
    "main_budget",
    "make_budget",
    "model_window",
    "resolve_window",
    "split_recent",
]

DEFAULT_CONTEXT_WINDOW = 200_000
KEEP_RECENT_TOKENS = 8_000
MAX_SUMMARY_CALLS = 12
SUMMARY_TOKEN_CAP = 1024
_MESSAGE_OVERHEAD = 4


@dataclass(frozen=True)
class Budget:
    context_window: int
    output_cap: int
    margin: int
    input_tokens: int

    @property
    def summary_tokens(self) -> int:
        """The longest a rolling summary may be: at most 1024 tokens, and at most an eighth
        of the input budget, so a small window still has room for the conversation."""
        return max(64, min(SUMMARY_TOKEN_CAP, self.output_cap, self.input_tokens // 8))

    def shrunk(self) -> Budget:
        """The smaller budget of the one retry after a context-overflow error."""
        return replace(self, input_tokens=self.input_tokens // 2)


def resolve_window(*, configured: int | None, looked_up: int | None) -> int:
    """The operator's setting wins (a gateway or a local server may serve a model with a
    smaller window than its name suggests), then what litellm knows, then 200K."""
    return configured or looked_up or DEFAULT_CONTEXT_WINDOW


async def model_window(gateway: ModelGateway, settings: Settings) -> int:
    """The window of the configured model (litellm is not asked when the setting is set)."""
    if settings.agent_context_window:
        return settings.agent_context_window
    return resolve_window(configured=None,
                          looked_up=await gateway.context_window(settings.agent_model))


def main_budget(*, context_window: int, max_output_tokens: int) -> Budget:
    """The main run's budget: its output cap is AGENT_MAX_OUTPUT_TOKENS, but never more than
    a quarter of the window, so a small local model (4K, 8K) with the default 4096 still has
    room for the conversation; the request asks for no more than this cap."""
    return make_budget(context_window=context_window,
                       output_cap=max(16, min(max_output_tokens, context_window // 4)))


def make_budget(*, context_window: int | None, output_cap: int) -> Budget:
    window = context_window or DEFAULT_CONTEXT_WINDOW
    output = max(1, output_cap)
    margin = min(8192, max(128, window * 5 // 100))
    return Budget(context_window=window, output_cap=output, margin=margin,
                  input_tokens=max(0, window - output - margin))


def estimate_text(text: str) -> int:
    return (len(text) + 3) // 4


def estimate_message(message: dict[str, Any]) -> int:
    content = message.get("content")
    size = len(content) if isinstance(content, str) else len(json.dumps(content or ""))
    if message.get("tool_calls"):
        size += len(json.dumps(message["tool_calls"]))
    return (size + 3) // 4 + _MESSAGE_OVERHEAD


def estimate_messages(messages: Sequence[dict[str, Any]]) -> int:
    return sum(estimate_message(m) for m in messages)


def estimate_tools(tools: Sequence[dict[str, Any]]) -> int:
    """Tool definitions count against the input too (they are sent with every request)."""
    return estimate_text(json.dumps(list(tools))) if tools else 0


def split_recent(messages: Sequence[dict[str, Any]], keep_tokens: int) -> int:
    """Index where the kept recent part starts: as many tokens as fit in `keep_tokens`, and
    never a tool result separated from the assistant message that called it."""
    best, used = len(messages), 0
    for index in range(len(messages) - 1, -1, -1):
        used += estimate_message(messages[index])
        if used > keep_tokens:
            break
        if messages[index].get("role") != "tool":
            best = index
    return best

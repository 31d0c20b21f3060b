"""Token budget of a side question (SPEC §9 "Limits"): pure arithmetic, no model calls.

    input budget = context window − output cap − safety margin
    margin       = 5% of the window, bounded to 128..8192 tokens; unknown window = 200K
    output cap   = 8192 by default and never above the main configuration's
    replay       = at most 20 recent successful exchanges within min(input/4, 16K) tokens

Token counts are estimates (characters / 4 plus a per-message overhead): they only need to
be stable and roughly right, since the provider's overflow error is the final judge.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

__all__ = [
    "DEFAULT_CONTEXT_WINDOW",
    "KEEP_RECENT_TOKENS",
    "MAX_REPLAYED",
    "MAX_SUMMARY_CALLS",
    "Budget",
    "Exchange",
    "estimate_message",
    "estimate_messages",
    "estimate_text",
    "exchange_messages",
    "make_budget",
    "select_replay",
    "split_recent",
]

DEFAULT_CONTEXT_WINDOW = 200_000
SIDE_OUTPUT_CAP = 8192
MAX_REPLAYED = 20
REPLAY_TOKEN_CAP = 16_000
KEEP_RECENT_TOKENS = 8_000
MAX_SUMMARY_CALLS = 12
_MESSAGE_OVERHEAD = 4


@dataclass(frozen=True)
class Budget:
    context_window: int
    output_cap: int
    margin: int
    input_tokens: int

    @property
    def replay_tokens(self) -> int:
        return min(self.input_tokens // 4, REPLAY_TOKEN_CAP)

    def shrunk(self) -> Budget:
        """The smaller budget of the one retry after a context-overflow error."""
        return replace(self, input_tokens=self.input_tokens // 2)


def make_budget(*, context_window: int | None, main_output_cap: int,
                side_output_cap: int = SIDE_OUTPUT_CAP) -> Budget:
    window = context_window or DEFAULT_CONTEXT_WINDOW
    output = max(1, min(side_output_cap, main_output_cap))
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


@dataclass(frozen=True)
class Exchange:
    """One earlier successful side question and its answer."""

    ordinal: int
    question: str
    answer: str


def exchange_messages(exchanges: Sequence[Exchange]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for exchange in exchanges:
        messages.append({"role": "user", "content": exchange.question})
        messages.append({"role": "assistant", "content": exchange.answer})
    return messages


def select_replay(exchanges: Sequence[Exchange], allowance: int,
                  max_count: int = MAX_REPLAYED) -> tuple[list[Exchange], list[Exchange]]:
    """Split oldest-first `exchanges` into (older, replayed): the newest ones that fit."""
    used, start = 0, len(exchanges)
    while start > 0 and len(exchanges) - start < max_count:
        cost = estimate_messages(exchange_messages([exchanges[start - 1]]))
        if used + cost > allowance:
            break
        used += cost
        start -= 1
    return list(exchanges[:start]), list(exchanges[start:])


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

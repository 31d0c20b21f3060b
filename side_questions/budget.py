"""Token budget and usage of a side question (SPEC §9 "Limits"): the side-only parts.

The budget itself is agent.budget's, shared with the main run; here are the side rules:

    output cap = 8192 by default and never above the main configuration's
    replay     = at most 20 recent successful exchanges within min(input/4, 16K) tokens
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agent import budget as shared
from agent.model_gateway import ModelReply

__all__ = [
    "MAX_REPLAYED",
    "SIDE_OUTPUT_CAP",
    "Exchange",
    "SideBudget",
    "UsageMeter",
    "exchange_messages",
    "make_budget",
    "select_replay",
]

SIDE_OUTPUT_CAP = 8192
MAX_REPLAYED = 20
REPLAY_TOKEN_CAP = 16_000


@dataclass(frozen=True)
class SideBudget(shared.Budget):
    @property
    def replay_tokens(self) -> int:
        return min(self.input_tokens // 4, REPLAY_TOKEN_CAP)


def make_budget(*, context_window: int | None, main_output_cap: int,
                side_output_cap: int = SIDE_OUTPUT_CAP) -> SideBudget:
    made = shared.make_budget(context_window=context_window,
                              output_cap=min(side_output_cap, main_output_cap))
    return SideBudget(context_window=made.context_window, output_cap=made.output_cap,
                      margin=made.margin, input_tokens=made.input_tokens)


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
        cost = shared.estimate_messages(exchange_messages([exchanges[start - 1]]))
        if used + cost > allowance:
            break
        used += cost
        start -= 1
    return list(exchanges[:start]), list(exchanges[start:])


@dataclass
class UsageMeter:
    """Usage summed over every model call of one side question."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    calls: int = 0
    summary_calls: int = 0

    def add(self, reply: ModelReply | None, *, summary: bool = False) -> None:
        self.calls += 1
        self.summary_calls += int(summary)
        if reply is not None:
            self.prompt_tokens += reply.usage.prompt_tokens
            self.completion_tokens += reply.usage.completion_tokens
            self.total_tokens += reply.usage.total_tokens

    def add_summary(self, reply: ModelReply | None) -> None:
        self.add(reply, summary=True)

    def as_dict(self) -> dict[str, int]:
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "total_tokens": self.total_tokens, "calls": self.calls,
                "summary_calls": self.summary_calls}

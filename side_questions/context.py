"""Builds the messages of one side question within its token budget.

Older side exchanges beyond the replay window are folded into the parent's rolling summary;
if the main context is still too long, only its older part is summarised, keeping about 8K
recent tokens and never separating a tool call from its result.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agent.budget import KEEP_RECENT_TOKENS, estimate_messages, estimate_tools, split_recent
from agent.summarise import Summariser, render_for_summary, summary_room
from side_questions.budget import Exchange, SideBudget, exchange_messages, select_replay
from side_questions.prompt import main_summary_message, side_messages
from side_questions.snapshot_store import StoredSnapshot

__all__ = ["ContextPlan", "SideHistory", "build_context"]

@dataclass
class SideHistory:
    """Earlier successful exchanges not yet in the rolling summary (oldest first)."""

    exchanges: list[Exchange]
    summary_text: str = ""
    summary_through: int = 0

    def after_summary(self, text: str, through: int) -> SideHistory:
        return SideHistory([e for e in self.exchanges if e.ordinal > through], text, through)


@dataclass
class ContextPlan:
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    estimate: int
    info: dict[str, Any] = field(default_factory=dict)
    new_summary: dict[str, Any] | None = None  # the rolling summary to store, when it changed


def _exchange_lines(exchanges: Sequence[Exchange]) -> list[str]:
    return [f"Side question #{e.ordinal}: {e.question}\nAnswer: {e.answer}" for e in exchanges]


async def build_context(
    *, snapshot: StoredSnapshot, question: str, history: SideHistory, budget: SideBudget,
    summariser: Summariser,
) -> ContextPlan:
    older, replayed = select_replay(history.exchanges, budget.replay_tokens)
    summary_text, new_summary = history.summary_text, None
    if older:
        summary_text = await summariser.summarise(
            _exchange_lines(older), prior=summary_text, budget=budget)
        new_summary = {"text": summary_text, "through_ordinal": older[-1].ordinal}
    replay = exchange_messages(replayed)
    tools_estimate = estimate_tools(snapshot.tools)

    def assemble(context: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return side_messages(system_prompt=snapshot.system_prompt, context_messages=context,
                             replay=replay, question=question, side_summary=summary_text or None)

    main = list(snapshot.messages)
    available = budget.input_tokens - estimate_messages(assemble([])) - tools_estimate
    main_summarised = 0
    if estimate_messages(main) > available:
        keep = max(0, min(KEEP_RECENT_TOKENS, available - summary_room(budget)))
        split = split_recent(main, keep)
        if split > 0:
            text = await summariser.summarise(render_for_summary(main[:split]), prior="",
                                              budget=budget)
            main_summarised = split
            main = [main_summary_message(text), *main[split:]]
    messages = assemble(main)
    estimate = estimate_messages(messages) + tools_estimate
    info = {
        "context_window": budget.context_window, "output_cap": budget.output_cap,
        "input_budget": budget.input_tokens, "estimate_tokens": estimate,
        "replayed": len(replayed), "summarised_exchanges": len(older),
        "side_summary": bool(summary_text), "main_messages": len(snapshot.messages),
        "main_summarised_messages": main_summarised, "main_summary": main_summarised > 0,
        "summary_omitted": summariser.omitted,
    }
    return ContextPlan(messages=messages, tools=list(snapshot.tools), estimate=estimate,
                       info=info, new_summary=new_summary)

"""Messages of side-question requests, per the shared side-question prompt contract.

    [system: <side_question/> + side instructions + the main system prompt verbatim,
     *snapshot messages (older part possibly replaced by one summary message),
     *earlier side exchanges (user/assistant pairs), user: the question]

Summary requests are agent.summarise's, marked `<side_summary/>`, with no tools and no
snapshot.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent.data_blocks import wrap_data
from agent.summarise import SIDE_SUMMARY_MARKER, summary_message

__all__ = ["SIDE_MARKER", "SUMMARY_MARKER", "main_summary_message", "side_messages"]

SIDE_MARKER = "<side_question/>"
SUMMARY_MARKER = SIDE_SUMMARY_MARKER

_SIDE_INSTRUCTIONS = """This is a side question about the conversation below, asked while \
the main agent works. Answer it from the conversation, the page context and the earlier side \
questions only. Do not call tools: none will run, and nothing you say here is added to the main \
conversation. If the conversation does not contain the answer, say so briefly."""


def side_messages(
    *, system_prompt: str, context_messages: Sequence[dict[str, Any]],
    replay: Sequence[dict[str, Any]], question: str, side_summary: str | None,
) -> list[dict[str, Any]]:
    system = f"{SIDE_MARKER}\n{_SIDE_INSTRUCTIONS}"
    if side_summary:
        system += ("\n\nSummary of earlier side questions and answers:\n"
                   f"{wrap_data('summary', side_summary)}")
    system += f"\n\nThe main agent's system prompt follows verbatim.\n\n{system_prompt}"
    return [{"role": "system", "content": system}, *context_messages, *replay,
            {"role": "user", "content": question}]


def main_summary_message(summary: str) -> dict[str, Any]:
    return summary_message(summary, of="the main conversation")

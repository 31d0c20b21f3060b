"""Messages of side-question requests, per the shared side-question prompt contract.

    [system: <side_question/> + side instructions + the main system prompt verbatim,
     *snapshot messages (older part possibly replaced by one summary message),
     *earlier side exchanges (user/assistant pairs), user: the question]

Summary requests carry `<side_summary/>` instead, with no tools and no snapshot.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

__all__ = [
    "MAIN_SUMMARY_PREFIX",
    "SIDE_MARKER",
    "SUMMARY_MARKER",
    "main_summary_message",
    "render_for_summary",
    "side_messages",
    "summary_messages",
]

SIDE_MARKER = "<side_question/>"
SUMMARY_MARKER = "<side_summary/>"
MAIN_SUMMARY_PREFIX = "Summary of the earlier part of the main conversation:"

_SIDE_INSTRUCTIONS = """This is a side question about the conversation below, asked while \
the main agent works. Answer it from the conversation, the page context and the earlier side \
questions only. Do not call tools: none will run, and nothing you say here is added to the main \
conversation. If the conversation does not contain the answer, say so briefly."""

_SUMMARY_INSTRUCTIONS = """Condense the material into a short factual summary that keeps \
names, ids, environments, numbers, decisions and open questions. Merge it with the summary so \
far. Return only the summary text."""


def side_messages(
    *, system_prompt: str, context_messages: Sequence[dict[str, Any]],
    replay: Sequence[dict[str, Any]], question: str, side_summary: str | None,
) -> list[dict[str, Any]]:
    system = f"{SIDE_MARKER}\n{_SIDE_INSTRUCTIONS}"
    if side_summary:
        system += f"\n\nSummary of earlier side questions and answers:\n{side_summary}"
    system += f"\n\nThe main agent's system prompt follows verbatim.\n\n{system_prompt}"
    return [{"role": "system", "content": system}, *context_messages, *replay,
            {"role": "user", "content": question}]


def main_summary_message(summary: str) -> dict[str, Any]:
    return {"role": "user", "content": f"{MAIN_SUMMARY_PREFIX}\n{summary}"}


def summary_messages(*, prior: str, material: str) -> list[dict[str, Any]]:
    user = (f"Summary so far:\n{prior or '(none)'}\n\nNew material:\n{material}")
    return [{"role": "system", "content": f"{SUMMARY_MARKER}\n{_SUMMARY_INSTRUCTIONS}"},
            {"role": "user", "content": user}]


def render_for_summary(messages: Sequence[dict[str, Any]]) -> list[str]:
    """One plain-text line per message, for summary requests (tool calls spelled out)."""
    lines = []
    for message in messages:
        role = message.get("role")
        content = message.get("content")
        text = content if isinstance(content, str) else json.dumps(content or "")
        if role == "tool":
            lines.append(f"tool {message.get('name') or ''} result: {text}")
            continue
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            text += f" [called {function.get('name')}({function.get('arguments')})]"
        lines.append(f"{role}: {text}")
    return lines

"""Pure rendering of the side-question panel: `/btw` parsing and history as chat messages.

No Gradio import: the panel's chatbot takes the returned message dicts, and these functions
are unit-tested on their own. Questions and answers are Markdown and leave through
`web.text_policy` as the inert HTML the panel's chat shows (no live HTML, images or
outside links); status notes and errors are escaped.
"""

from __future__ import annotations

import re
from typing import Any

from web.text_policy import DEFAULT_POLICY, TextPolicy, md_escape

__all__ = ["EMPTY_HINT", "NO_CONVERSATION", "drop_nul", "merge_item", "parse_btw", "render_side"]

EMPTY_HINT = "Ask a quick question about what the agent is doing; it will not interrupt it."
NO_CONVERSATION = ("Ask the agent something first: side questions are answered from the "
                   "agent's latest context.")

_BTW = re.compile(r"^\s*/btw(?:\s+(?P<question>.*))?\s*$", re.IGNORECASE | re.DOTALL)
_STATUS_NOTES = {"cancelled": "⏹ Stopped.", "interrupted": "⚠ Interrupted (the server restarted).",
                 "failed": "⚠ Failed"}


def drop_nul(text: str) -> str:
    """NUL is not text, and PostgreSQL cannot store it: drop it from questions on the way in."""
    return text.replace("\x00", "")


def parse_btw(message: Any) -> tuple[bool, str]:
    """`(True, question)` for `/btw <question>` (question may be empty: open the panel)."""
    if not isinstance(message, str):
        return False, ""
    match = _BTW.match(message)
    if match is None:
        return False, ""
    return True, (match.group("question") or "").strip()


def _answer(item: dict[str, Any]) -> str:
    answer = str(item.get("answer") or "")
    status = item.get("status")
    if status == "running":
        return (answer + " ▌") if answer else "… thinking"
    note = _STATUS_NOTES.get(str(status))
    if note is None:
        return answer or "(no answer)"
    if status == "failed" and item.get("error"):
        note = f"{note}: {md_escape(item['error'])}"
    return f"{answer}\n\n{note}" if answer else note


def render_side(items: list[dict[str, Any]], policy: TextPolicy = DEFAULT_POLICY
                ) -> list[dict[str, Any]]:
    """Request objects (newest first, as history pages come) as chat messages, oldest first."""
    messages: list[dict[str, Any]] = []
    for item in sorted(items, key=lambda i: int(i.get("ordinal") or 0)):
        messages.append({"role": "user", "content": str(item.get("question") or "")})
        messages.append({"role": "assistant", "content": _answer(item)})
    return policy.chat(messages)


def merge_item(items: list[dict[str, Any]], item: dict[str, Any]) -> list[dict[str, Any]]:
    """The history with `item` replacing the entry of the same id (or added as newest)."""
    merged = [item if existing.get("id") == item.get("id") else existing for existing in items]
    if not any(existing.get("id") == item.get("id") for existing in items):
        merged.insert(0, item)
    return merged

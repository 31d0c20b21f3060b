"""System prompt of the main agent, rebuilt every turn from the sanitised context."""

from __future__ import annotations

import json
import re
from typing import Any

from agent.data_blocks import DATA_RULE

__all__ = ["CONTEXT_PATTERN", "build_system_prompt", "read_context_block"]

CONTEXT_PATTERN = re.compile(r"<context>(.*?)</context>", re.DOTALL)

_INSTRUCTIONS = """You are the Superset agent. You help people inspect and change an Apache \
Superset deployment (dashboards, charts, datasets, and promotion between environments) using \
only the tools you are given.

Rules:
- Use a tool for facts about Superset; never invent ids, names or counts.
- Every change waits for a person's explicit approval; say what you are about to change.
%(data_rule)s
- If a request needs a tool you do not have, say so and which page or role would allow it.
- Be brief. Refer to objects as "dashboard #42 'Sales' in ss-dev"."""


def build_system_prompt(context: dict[str, Any]) -> str:
    """Instructions plus a machine-readable context block (the offline model reads it too):
    the page, the environment and the person's role, named once. Its values come from a
    link anyone can write, so `</` is escaped (`<\\/`, the same JSON string) and the block
    cannot be closed early."""
    block = json.dumps(context, sort_keys=True, ensure_ascii=False).replace("</", "<\\/")
    return (f"{_INSTRUCTIONS % {'data_rule': DATA_RULE}}\n\n"
            f"The current page and session (data):\n<context>{block}</context>")


def read_context_block(system_prompt: str) -> dict[str, Any]:
    blocks = CONTEXT_PATTERN.findall(system_prompt or "")
    if not blocks:
        return {}
    try:  # the last one: the rules above it name the tag too
        value = json.loads(blocks[-1])
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}

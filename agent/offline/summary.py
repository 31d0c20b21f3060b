"""Summary requests (agent/summarise.py) answered by the offline model: an extractive digest.

The prompt is the same one a real model gets: the summary so far and the new material,
each in a data block. The digest keeps the summary so far and one short line per item of
the material (who said it, its first words, the tools called), newest last, and drops
the oldest lines past a size limit, so a long conversation's summary stays bounded.
Text in the material is only quoted, never acted on.
"""

from __future__ import annotations

import re
from typing import Any

from agent.data_blocks import unwrap_data
from agent.offline.transcript import text_of
from agent.summarise import SUMMARY_MARKERS

__all__ = ["is_summary_request", "summarise_material"]

_LIMIT = 2400  # characters of digest kept (well under the smallest summary cap in use)
_LINE = 140
_BLOCK = re.compile(r'<data source="[^"<>]*">\n.*?\n</data>', re.DOTALL)
_CALL = re.compile(r" ?\[called (\w+)\(.*?\)\]")


def is_summary_request(messages: list[dict[str, Any]]) -> bool:
    first = text_of(messages[0]) if messages and messages[0].get("role") == "system" else ""
    return first.startswith(SUMMARY_MARKERS)


def _line(item: str) -> str:
    said = [line for line in item.splitlines() if not line.startswith("tool ")]
    calls = _CALL.findall(item)
    head = " ".join(_CALL.sub("", " ".join(said)).split())
    if len(head) > _LINE:
        head = head[:_LINE - 1] + "…"
    return head + (f" (tools: {', '.join(calls)})" if calls else "")


def summarise_material(messages: list[dict[str, Any]]) -> str:
    blocks = _BLOCK.findall(text_of(messages[-1])) if messages else []
    prior = unwrap_data(blocks[0]) if blocks else ""
    material = unwrap_data(blocks[1]) if len(blocks) > 1 else ""
    lines = [] if prior in ("", "(none)") else prior.splitlines()
    items = re.split(r"\n(?=(?:user|assistant|tool \S*|system): )", material)
    lines += [_line(item) for item in items if item.strip() and not item.startswith("tool ")]
    kept: list[str] = []
    size = 0
    for line in reversed(lines):
        size += len(line) + 1
        if size > _LIMIT:
            break
        kept.append(line)
    return "\n".join(reversed(kept))

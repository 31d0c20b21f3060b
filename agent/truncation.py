"""Structured truncation of tool output before it reaches the model (SPEC §5).

A JSON array becomes "Found X items:" with the first 5 as "- item" lines; a JSON object
keeps its keys with a sample of values; text is cut at a sentence boundary.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["to_model_text", "truncate"]

_SENTENCE_END = re.compile(r"[.!?](\s|$)")
_ITEMS_SHOWN = 5


def to_model_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _cut_text(text: str, limit: int, suffix: str = " [truncated]") -> str:
    if len(text) <= limit:
        return text
    room = max(0, limit - len(suffix))
    head = text[:room]
    ends = [m.end() for m in _SENTENCE_END.finditer(head)]
    if ends and ends[-1] > room // 2:
        head = head[: ends[-1]].rstrip()
    return head + suffix


def _truncate_list(items: list[Any], limit: int) -> str:
    header = f"Found {len(items)} items:"
    footer = f"... and ({len(items) - _ITEMS_SHOWN}) more items." if len(items) > _ITEMS_SHOWN else ""
    shown = items[:_ITEMS_SHOWN]
    budget = max(40, (limit - len(header) - len(footer) - 8) // max(1, len(shown)))
    lines = [f"- {_cut_text(to_model_text(item), budget - 2, '…')}" for item in shown]
    return "\n".join([header, *lines, *([footer] if footer else [])])[:limit]


def _truncate_object(data: dict[str, Any], limit: int) -> str:
    keys = list(data)
    budget = max(24, (limit - 64) // max(1, len(keys)))
    sample: dict[str, Any] = {}
    for key in keys:
        value = data[key]
        if isinstance(value, list):
            sample[key] = (f"[{len(value)} items] " + _cut_text(to_model_text(value[:2]),
                                                                  budget, "…"))
        elif isinstance(value, dict):
            sample[key] = _cut_text(to_model_text(value), budget, "…")
        elif isinstance(value, str):
            sample[key] = _cut_text(value, budget, "…")
        else:
            sample[key] = value
    text = json.dumps(sample, ensure_ascii=False, default=str)
    if len(text) > limit:
        text = json.dumps({"keys": keys[:200]}, ensure_ascii=False)[: limit - 20] + " [truncated]"
    return text


def truncate(value: Any, limit: int = 4000) -> tuple[str, bool]:
    """Return the text the model sees and whether it was truncated."""
    text = to_model_text(value)
    if len(text) <= limit:
        return text, False
    data = value
    if isinstance(value, str):
        try:
            data = json.loads(value)
        except ValueError:
            data = value
    if isinstance(data, list):
        return _truncate_list(data, limit), True
    if isinstance(data, dict):
        return _truncate_object(data, limit), True
    return _cut_text(text, limit), True

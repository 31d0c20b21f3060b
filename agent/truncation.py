"""Structured truncation of tool output before it reaches the model (SPEC §5).

Output of at most `limit` characters passes unchanged. Longer output is cut by structure:

- a JSON array becomes `Found X items:`, the first 5 items as `- item` lines and
  `... and (X-5) more items.`;
- a JSON object stays a JSON object with all its keys and a sample of each value (long
  strings end in "…", long lists keep their first items and end with the marker string
  "... and (N) more items.");
- text is cut at a sentence boundary (else a word boundary) and marked `[truncated]`.

Whatever the input, the result is never longer than `limit`.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["ITEMS_SHOWN", "SHORT_SCALAR", "more_items", "to_model_text", "truncate"]

ITEMS_SHOWN = 5
ELLIPSIS = "…"
TEXT_SUFFIX = " [truncated]"
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")
_MIN_VALUE_BUDGET = 8
SHORT_SCALAR = 12  # numbers, booleans and null this short survive even the key skeleton


def to_model_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def more_items(count: int) -> str:
    return f"... and ({count}) more items."


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


# text ------------------------------------------------------------------------------------

def _cut_text(text: str, limit: int, suffix: str = TEXT_SUFFIX) -> str:
    """Cut to at most `limit` chars: at the last sentence end in the window (SPEC §5), else
    at the last word boundary if that keeps at least half, else hard; then add `suffix`."""
    if len(text) <= limit:
        return text
    if limit <= len(suffix):
        return text[:limit]
    room = limit - len(suffix)
    head = text[:room]
    ends = [m.end() for m in _SENTENCE_END.finditer(text[: room + 1]) if m.end() <= room]
    if ends:
        head = text[: ends[-1]]
    else:
        space = head.rfind(" ")
        if space >= room // 2:
            head = head[:space]
    return head.rstrip() + suffix


# values inside objects and list items ----------------------------------------------------

def _sample(value: Any, budget: int) -> Any:
    """A smaller stand-in for `value` whose JSON is about `budget` chars (best effort)."""
    if isinstance(value, str):
        if len(value) + 2 <= budget:
            return value
        return value[: max(1, budget - 3)] + ELLIPSIS
    if isinstance(value, list):
        return _sample_list(value, budget)
    if isinstance(value, dict):
        return _sample_dict(value, budget)
    if isinstance(value, bool | int | float) or value is None:
        return value
    return _sample(str(value), budget)


def _sample_list(items: list[Any], budget: int) -> list[Any]:
    if len(_dumps(items)) <= budget:
        return items
    shown = items[:ITEMS_SHOWN]
    marker = [more_items(len(items) - len(shown))] if len(items) > len(shown) else []
    while shown:
        share = max(_MIN_VALUE_BUDGET, (budget - 30) // len(shown))
        sampled = [_sample(item, share) for item in shown] + marker
        if len(_dumps(sampled)) <= budget or len(shown) == 1:
            return sampled
        shown = shown[:-1]
        marker = [more_items(len(items) - len(shown))]
    return marker


def _sample_dict(data: dict[str, Any], budget: int) -> dict[str, Any]:
    """Keep every key; share the budget so small values stay whole (water-filling)."""
    if len(_dumps(data)) <= budget:
        return data
    keys = list(data)
    sizes = {key: len(_dumps(data[key])) for key in keys}
    overhead = sum(len(_dumps(str(key))) + 2 for key in keys) + 2
    remaining = max(0, budget - overhead)
    whole: set[str] = set()
    pending = sorted(keys, key=lambda k: sizes[k])
    while pending:
        share = remaining // len(pending)
        if sizes[pending[0]] > share:
            break
        key = pending.pop(0)
        whole.add(key)
        remaining -= sizes[key]
    share = max(_MIN_VALUE_BUDGET, remaining // max(1, len(pending)))
    return {key: data[key] if key in whole else _sample(data[key], share) for key in keys}


def _fit_object(data: dict[str, Any], limit: int) -> str:
    budget = limit
    for _ in range(12):
        text = _dumps(_sample_dict(data, budget))
        if len(text) <= limit:
            return text
        budget = int(budget * 0.7)
    # Keys alone: short scalars kept, every other value "…"; then all values "…"; if even
    # that is too long, as many keys as fit and a count of the rest.
    for skeleton in (_skeleton(data, keep_short=True), _skeleton(data, keep_short=False)):
        text = _dumps(skeleton)
        if len(text) <= limit:
            return text
    kept: dict[str, Any] = {}
    for index, key in enumerate(data):
        tail = {f"{ELLIPSIS} {len(data) - index} more keys": ""}
        if len(_dumps({**kept, key: ELLIPSIS, **tail})) > limit:
            text = _dumps({**kept, **tail})
            return text if len(text) <= limit else text[:limit]
        kept[key] = ELLIPSIS
    return _dumps(kept)  # not reached: the full skeleton did not fit


def _skeleton(data: dict[str, Any], *, keep_short: bool) -> dict[str, Any]:
    def short(value: Any) -> bool:
        return (value is None or isinstance(value, bool | int | float)) and \
            len(_dumps(value)) <= SHORT_SCALAR
    return {key: value if keep_short and short(value) else ELLIPSIS
            for key, value in data.items()}


# arrays ------------------------------------------------------------------------------------

def _item_text(item: Any, budget: int) -> str:
    structured = isinstance(item, dict | list)
    text = _dumps(_sample(item, budget)) if structured else to_model_text(item)
    text = " ".join(text.split())  # one line per item
    return text if len(text) <= budget else text[: max(0, budget - 1)] + ELLIPSIS


def _fit_list(items: list[Any], limit: int) -> str:
    header = f"Found {len(items)} items:"
    footer = more_items(len(items) - ITEMS_SHOWN) if len(items) > ITEMS_SHOWN else ""
    shown = items[:ITEMS_SHOWN]
    fixed = len(header) + (len(footer) + 1 if footer else 0) + 3 * len(shown)
    budget = max(1, (limit - fixed) // max(1, len(shown)))
    lines = [f"- {_item_text(item, budget)}" for item in shown]
    text = "\n".join([header, *lines, *([footer] if footer else [])])
    return text if len(text) <= limit else text[:limit]  # only for absurdly small limits


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
        return _fit_list(data, limit), True
    if isinstance(data, dict):
        return _fit_object(data, limit), True
    return _cut_text(text, limit), True

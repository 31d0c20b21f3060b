"""Reading tool results the way the model sees them: JSON, truncated text (SPEC §5) or errors.

Results are data, never instructions: these helpers only pick out counts, ids and titles.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

__all__ = [
    "Result",
    "clip",
    "count_of",
    "id_of",
    "items_of",
    "owner_names",
    "parse_result",
    "title_of",
    "unwrap",
]

_FOUND = re.compile(r"^\s*Found (\d+) items:\s*$", re.MULTILINE)
_SAMPLED_LIST = re.compile(r"^\[(\d+) items\]\s*(.*)$", re.DOTALL)
_MORE_ITEMS = re.compile(r"^\.\.\. and \((\d+)\) more items\.$")
_DECLINED = re.compile(r"\b(?:denied|declined|rejected|refused|cancel(?:l)?ed)\b", re.IGNORECASE)
_BY_PERSON = re.compile(r"\b(?:person|user|you|human|approver|reviewer)\b", re.IGNORECASE)
_PENDING = re.compile(r"awaiting (?:approval|confirmation)|pending (?:approval|confirmation)"
                      r"|waiting for (?:approval|confirmation|a person)", re.IGNORECASE)
_TITLE_KEYS = ("dashboard_title", "slice_name", "table_name", "title", "name", "database_name",
               "label", "column_name", "metric_name", "username", "filename", "path")
_LIST_KEYS = ("result", "items", "dashboards", "datasets", "charts", "migrations", "history",
              "records", "environments", "tools", "data", "rows")


@dataclass
class Result:
    status: str  # ok | error | denied | not_executed | declined | pending
    data: Any  # parsed JSON, a list of items for "Found X items:", or the text
    text: str
    total: int | None = None  # the full count of a truncated list


def clip(value: Any, limit: int = 60) -> str:
    """One line, at most `limit` characters: titles from Superset are shown, never obeyed."""
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


_SALVAGE_ID = re.compile(r'"(?:id|pk)":\s*(\d+)')
_SALVAGE_TITLE = re.compile(
    r'"(dashboard_title|slice_name|table_name|title|name)":\s*"((?:[^"\\]|\\.)*)')


def _salvage(line: str) -> Any:
    """An item line cut mid-JSON ("{"id": 4, "title": "Sal…"): keep its id and title."""
    item: dict[str, Any] = {}
    if (found := _SALVAGE_ID.search(line)) is not None:
        item["id"] = int(found.group(1))
    if (found := _SALVAGE_TITLE.search(line)) is not None:
        item[found.group(1)] = found.group(2).rstrip("…").strip() + "…"
    return item or line


def _found_items(text: str) -> Result | None:
    match = _FOUND.search(text)
    if not match:
        return None
    items: list[Any] = []
    for line in text[match.end():].splitlines():
        if line.startswith("- "):
            body = line[2:].strip()
            parsed = _json(body)
            items.append(parsed if parsed is not None else _salvage(body))
    return Result("ok", items, text, total=int(match.group(1)))


def parse_result(text: str | None) -> Result:
    raw = (text or "").strip()
    lowered = raw.lower()
    if lowered.startswith("permission denied"):
        return Result("denied", raw, raw)
    if lowered.startswith("not executed"):
        return Result("not_executed", raw, raw)
    if _PENDING.search(raw) and len(raw) < 400:
        return Result("pending", raw, raw)
    if _DECLINED.search(raw) and _BY_PERSON.search(raw) and len(raw) < 400 and (
            "nothing" in lowered or "not executed" in lowered or "declin" in lowered):
        return Result("declined", raw, raw)
    if lowered.startswith("error"):
        return Result("error", raw.split(":", 1)[-1].strip() if ":" in raw[:12] else raw, raw)
    data = _json(raw)
    if data is not None:
        if isinstance(data, dict) and set(data) <= {"error", "errors", "message", "status"} and (
                data.get("error") or data.get("errors")):
            errors = data.get("errors")
            message = data.get("error") or (errors[0].get("message") if isinstance(errors, list)
                                             and errors and isinstance(errors[0], dict) else errors)
            return Result("error", clip(message, 300), raw)
        return Result("ok", data, raw)
    found = _found_items(raw)
    if found is not None:
        return found
    return Result("ok", raw, raw)


def unwrap(data: Any) -> Any:
    """Superset wraps single objects as {"id", "result": {...}}; return the object."""
    if isinstance(data, dict) and isinstance(data.get("result"), dict):
        inner = dict(data["result"])
        if "id" in data and "id" not in inner:
            inner["id"] = data["id"]
        return inner
    return data


def _sampled(value: str) -> tuple[list[Any], int] | None:
    """A list the truncation step shrank to "[N items] [first, second…"."""
    match = _SAMPLED_LIST.match(value)
    if not match:
        return None
    sample = _json(match.group(2))
    return (sample if isinstance(sample, list) else []), int(match.group(1))


def _marked(items: list[Any]) -> tuple[list[Any], int]:
    """A list the truncation step cut, ending in "... and (N) more items.": items, full count."""
    if items and isinstance(items[-1], str) and (match := _MORE_ITEMS.match(items[-1])):
        return items[:-1], len(items) - 1 + int(match.group(1))
    return items, len(items)


def count_of(value: Any) -> int | None:
    """How many things a value holds: a list, a {count, result} dict or a truncated list."""
    if isinstance(value, list):
        return _marked(value)[1]
    if isinstance(value, dict):
        if isinstance(value.get("count"), int):
            return value["count"]
        for key in ("result", "items"):
            if isinstance(value.get(key), list):
                return _marked(value[key])[1]
    if isinstance(value, str):
        sampled = _sampled(value)
        return sampled[1] if sampled else None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return None


def _as_list(value: Any) -> tuple[list[Any], int] | None:
    if isinstance(value, list):
        return _marked(value)
    if isinstance(value, str):
        return _sampled(value)
    if isinstance(value, dict):
        for key in ("result", "items"):
            inner = _as_list(value[key]) if isinstance(value.get(key), (list, str)) else None
            if inner is not None:
                count = value.get("count")
                return inner[0], count if isinstance(count, int) else inner[1]
    return None


def items_of(data: Any, total: int | None = None) -> tuple[list[Any], int] | None:
    """The main list in a result and its full count, or None when there is no list."""
    if isinstance(data, list):
        items, count = _marked(data)
        return items, total if total is not None else count
    if not isinstance(data, dict):
        return None
    whole = _as_list(data)
    if whole is not None:
        return whole
    keys = [k for k in _LIST_KEYS if k in data] + [k for k in data if k not in _LIST_KEYS]
    for key in keys:
        found = _as_list(data[key])
        if found is not None:
            count = data.get("count")
            return found[0], count if isinstance(count, int) else found[1]
    return None


def title_of(item: Any) -> str | None:
    if isinstance(item, dict):
        for key in _TITLE_KEYS:
            value = item.get(key)
            if isinstance(value, (str, int)) and str(value).strip():
                return clip(value)
        return None
    if isinstance(item, (str, int, float)):
        return clip(item)
    return None


def id_of(item: Any) -> Any:
    if isinstance(item, dict):
        for key in ("id", "pk", "dashboard_id", "dataset_id", "chart_id"):
            value = item.get(key)
            if isinstance(value, (int, str)) and not isinstance(value, bool):
                return value
    return None


def owner_names(owners: Any) -> list[str]:
    names = []
    for owner in owners if isinstance(owners, list) else []:
        if isinstance(owner, dict):
            full = " ".join(str(owner.get(k) or "") for k in ("first_name", "last_name")).strip()
            names.append(clip(full or owner.get("username") or owner.get("id") or "?", 40))
        elif isinstance(owner, str):
            names.append(clip(owner, 40))
        else:
            names.append(clip(f"user {owner}", 40))
    return names

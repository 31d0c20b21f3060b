"""What "it", "that one" and "the first one" refer to: the last object mentioned or listed.

Only structured fields count: the ids in earlier calls' arguments and the `id` of items in
a listing's JSON. A title or any other text inside a result is never read here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent.offline.results import id_of, items_of, parse_result, title_of, unwrap
from agent.offline.transcript import ToolExchange

__all__ = ["LISTING_KIND", "Listed", "last_listing", "listed_items", "mentioned"]

LISTING_KIND = {"list_dashboards": "dashboard", "list_datasets": "dataset",
                "list_charts": "chart"}


@dataclass(frozen=True)
class Listed:
    """One object of a listing: its id (a structured field) and its title (data, shown only)."""

    id: int
    title: str | None


def listed_items(call: ToolExchange) -> list[Listed] | None:
    """The objects a listing returned, or None when its result is not a readable list."""
    result = parse_result(call.result)
    if result.status != "ok":
        return None
    found = items_of(unwrap(result.data), result.total)
    if found is None:
        return None
    items = []
    for item in found[0]:
        ident = id_of(item)
        if isinstance(ident, int) and not isinstance(ident, bool) and 1 <= ident < 2**31:
            items.append(Listed(ident, title_of(item)))
    return items


def last_listing(history: list[ToolExchange]) -> ToolExchange | None:
    return next((c for c in reversed(history) if c.name in LISTING_KIND), None)


def _id_arg(args: dict[str, Any], kind: str) -> int | None:
    value = args.get(f"{kind}_id")
    if value is None and args.get("object_type") == kind:
        value = args.get("object_id")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def mentioned(history: list[ToolExchange], kind: str | None) -> tuple[str, int] | None:
    """(kind, id) of the newest object of this kind (any kind when None) that a call named
    or that a listing returned alone."""
    kinds = (kind,) if kind else ("dashboard", "dataset")
    for call in reversed(history):
        for each in kinds:
            found = _id_arg(call.arguments, each)
            if found is not None:
                return each, found
        listed_kind = LISTING_KIND.get(call.name)
        if listed_kind in kinds:
            items = listed_items(call)
            if items is not None and len(items) == 1:
                return listed_kind, items[0].id
    return None

"""Rison `q` handling for list endpoints, with Flask-AppBuilder's semantics.

Matches the real server where clients can tell: pages count from 0, `page_size` defaults to
20 and is silently capped at 100 (values < 1 become 100 too), an unknown filter operator
is silently ignored (the list comes back unfiltered), ordering ties keep id order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import prison

__all__ = ["DEFAULT_PAGE_SIZE", "MAX_PAGE_SIZE", "ListQuery", "RisonError", "apply_query"]

DEFAULT_PAGE_SIZE = 20
MAX_PAGE_SIZE = 100


class RisonError(ValueError):
    """The `q` parameter is not valid Rison (the real server answers 400)."""


class ListQuery:
    """A parsed `q`: filters, ordering, paging and optional column selection."""

    def __init__(self, raw: str | None) -> None:
        args: dict[str, Any] = {}
        if raw:
            try:
                parsed = prison.loads(raw)
            except Exception as exc:  # prison raises bare ValueError/IndexError variants
                raise RisonError(str(exc)) from exc
            if not isinstance(parsed, dict):
                raise RisonError("q must be a Rison object")
            args = parsed
        self.filters: list[dict[str, Any]] = [
            f for f in args.get("filters") or [] if isinstance(f, dict)
        ]
        self.order_column: str | None = args.get("order_column")
        self.order_direction: str = str(args.get("order_direction") or "asc")
        page = args.get("page")
        self.page = int(page) if isinstance(page, int) and page > 0 else 0
        size = args.get("page_size")
        size = int(size) if isinstance(size, int) else DEFAULT_PAGE_SIZE
        self.page_size = MAX_PAGE_SIZE if size < 1 or size > MAX_PAGE_SIZE else size
        columns = args.get("columns")
        self.columns: list[str] | None = list(columns) if isinstance(columns, list) else None

    @staticmethod
    def parse_ids(raw: str | None) -> list[int]:
        """`q=!(1,2)` as used by the export endpoints; anything else is no ids."""
        try:
            parsed = prison.loads(raw) if raw else []
        except Exception:  # invalid Rison: nothing to export, the route answers 404
            return []
        values = parsed if isinstance(parsed, list) else [parsed]
        return [v for v in values if isinstance(v, int) and not isinstance(v, bool)]


def _text(value: Any) -> str:
    return "" if value is None else str(value).lower()


def _related_ids(value: Any) -> set[Any]:
    if isinstance(value, list):
        return {v.get("id") if isinstance(v, dict) else v for v in value}
    if isinstance(value, dict):
        return {value.get("id")}
    return {value}


def _match(item_value: Any, opr: str, value: Any) -> bool | None:
    """True/False for a known operator, None for an unknown one (ignored, like FAB)."""
    if opr == "eq":
        return item_value == value or (_text(item_value) == _text(value) and value is not None)
    if opr == "neq":
        return item_value != value
    if opr == "ct":
        return _text(value) in _text(item_value)
    if opr == "nct":
        return _text(value) not in _text(item_value)
    if opr == "sw":
        return _text(item_value).startswith(_text(value))
    if opr == "ew":
        return _text(item_value).endswith(_text(value))
    if opr in ("gt", "lt"):
        try:
            return item_value > value if opr == "gt" else item_value < value
        except TypeError:
            return False
    if opr == "in":
        return item_value in (value if isinstance(value, list) else [value])
    if opr in ("rel_o_m", "rel_m_m"):
        return value in _related_ids(item_value)
    return None


CustomFilter = Callable[[dict[str, Any], Any], bool]


def apply_query(
    items: list[dict[str, Any]],
    query: ListQuery,
    *,
    default_order: tuple[str, str],
    custom: dict[str, CustomFilter] | None = None,
) -> tuple[int, list[dict[str, Any]]]:
    """Filter, order and page serialized list items; returns (count before paging, page)."""
    selected = items
    for flt in query.filters:
        col, opr, value = flt.get("col"), str(flt.get("opr", "")), flt.get("value")
        if custom and opr in custom:
            selected = [item for item in selected if custom[opr](item, value)]
            continue
        if col is None or opr not in _KNOWN:
            continue
        selected = [item for item in selected if _match(item.get(col), opr, value)]
    column = query.order_column or default_order[0]
    direction = query.order_direction if query.order_column else default_order[1]
    selected = sorted(selected, key=lambda item: item.get("id", 0))
    selected = sorted(
        selected,
        key=lambda item: (item.get(column) is None, _sort_key(item.get(column))),
        reverse=direction == "desc",
    )
    start = query.page * query.page_size
    page = selected[start:start + query.page_size]
    if query.columns:
        keep = set(query.columns) | {"id"}
        page = [{k: v for k, v in item.items() if k in keep} for item in page]
    return len(selected), page


_KNOWN = {"eq", "neq", "ct", "nct", "sw", "ew", "gt", "lt", "in", "rel_o_m", "rel_m_m"}


def _sort_key(value: Any) -> Any:
    if isinstance(value, str):
        return value.lower()
    if isinstance(value, dict | list):
        return str(value)
    return value if value is not None else ""

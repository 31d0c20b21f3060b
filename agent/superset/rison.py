"""Rison `q` parameters for Superset list endpoints, with filter operators checked here.

Superset silently ignores an unknown filter operator and returns unfiltered results, so a
typo would look like a correct answer; we refuse it before sending anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import prison

from agent.errors import ToolInputError

__all__ = ["FILTER_OPERATORS", "MAX_PAGE_SIZE", "Filter", "ids_query", "list_query"]

# Flask-AppBuilder's generic operators plus the Superset-specific ones the app may use.
FILTER_OPERATORS = frozenset({
    "eq", "neq", "gt", "lt", "ge", "le", "sw", "nsw", "ew", "new", "ct", "nct", "in",
    "rel_o_m", "nrel_o_m", "rel_m_m", "eqf", "inf",
    "title_or_slug", "dashboard_is_favorite", "dashboard_is_certified", "dashboard_tags",
    "chart_all_text", "chart_is_favorite", "chart_is_certified", "chart_tags",
    "dataset_is_null_or_empty", "dataset_is_certified", "dataset_tags",
})
MAX_PAGE_SIZE = 100  # Superset caps silently; we say so instead

Scalar = str | int | float | bool


@dataclass(frozen=True)
class Filter:
    col: str
    opr: str
    value: Scalar | Sequence[Scalar]

    def as_rison(self) -> dict[str, Any]:
        if self.opr not in FILTER_OPERATORS:
            raise ToolInputError(
                f"Unknown filter operator {self.opr!r}; Superset would ignore it and return "
                f"unfiltered results. Use one of: {', '.join(sorted(FILTER_OPERATORS))}.")
        if not self.col or not self.col.replace("_", "").isalnum():
            raise ToolInputError(f"Invalid filter column {self.col!r}.")
        value = list(self.value) if isinstance(self.value, list | tuple) else self.value
        return {"col": self.col, "opr": self.opr, "value": value}


def list_query(
    *, filters: Sequence[Filter] = (), page: int = 0, page_size: int = 25,
    columns: Sequence[str] = (), order_column: str | None = None,
    order_direction: str = "asc",
) -> str:
    """Encode a list request as Rison; pages count from 0 like Superset's."""
    if page < 0:
        raise ToolInputError("page must be 0 or more (pages count from 0).")
    if not 1 <= page_size <= MAX_PAGE_SIZE:
        raise ToolInputError(f"page_size must be between 1 and {MAX_PAGE_SIZE}.")
    if order_direction not in ("asc", "desc"):
        raise ToolInputError("order_direction must be 'asc' or 'desc'.")
    query: dict[str, Any] = {"page": page, "page_size": page_size}
    if filters:
        query["filters"] = [flt.as_rison() for flt in filters]
    if columns:
        query["columns"] = list(columns)
    if order_column:
        query["order_column"] = order_column
        query["order_direction"] = order_direction
    return prison.dumps(query)


def ids_query(ids: Sequence[int]) -> str:
    """The `q=!(1,2)` form of the export endpoints."""
    return prison.dumps([int(i) for i in ids])

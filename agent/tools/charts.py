"""Chart tools (SPEC §4): `list_charts`, offered only on pages that name no object."""

from __future__ import annotations

from typing import Any

from agent.tools.registry import ToolContext, ToolSpec
from agent.tools.superset_args import ListArgs
from agent.tools.superset_common import compact, list_page

__all__ = ["CHART_TOOLS"]

_FIELDS = {"id": "id", "slice_name": "name", "viz_type": "viz_type",
           "datasource_name_text": "dataset", "changed_on_delta_humanized": "changed"}


async def _list_charts(args: ListArgs, ctx: ToolContext) -> dict[str, Any]:
    page = await list_page(ctx, args, "chart", "slice_name")
    rows = []
    for row in page.rows:
        item = compact(row, _FIELDS)
        boards = [d.get("dashboard_title") for d in row.get("dashboards") or []
                  if isinstance(d, dict) and d.get("dashboard_title")]
        if boards:
            item["dashboards"] = boards
        rows.append(item)
    return page.result("charts", rows)


CHART_TOOLS = [
    ToolSpec(
        name="list_charts",
        description="List charts in a Superset environment (name, visualization type, "
        "dataset, dashboards), optionally filtered by a name search; paged from 0.",
        args_schema=ListArgs, risk="read", groups=frozenset({"none"}), run=_list_charts,
        uses_env=True,
    ),
]

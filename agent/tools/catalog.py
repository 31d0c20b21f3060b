"""The full tool catalog of the app (SPEC §4): the built-ins, the 20 Superset tools and
`recent_changes` (issue 13: a deliberate addition to SPEC §4)."""

from __future__ import annotations

from agent.tools.builtin import BUILTIN_TOOLS
from agent.tools.changes import CHANGE_TOOLS
from agent.tools.charts import CHART_TOOLS
from agent.tools.dashboards import DASHBOARD_TOOLS
from agent.tools.datasets import DATASET_TOOLS
from agent.tools.migration import MIGRATION_TOOLS
from agent.tools.registry import ToolSpec

__all__ = ["all_tools"]


def all_tools() -> list[ToolSpec]:
    """All 23 tools, in the order they are described to the model."""
    return [*BUILTIN_TOOLS, *DASHBOARD_TOOLS, *DATASET_TOOLS, *MIGRATION_TOOLS, *CHANGE_TOOLS,
            *CHART_TOOLS]

"""What the offline model knows about the 22 tools (SPEC §4): risk, page and plain-English labels.

The brain only ever calls tools it is offered; this table lets it explain *why* a tool it
wanted is missing (the role does not allow it, or another page offers it).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PAGE_HINTS", "ROLE_FOR_RISK", "TOOLS", "ToolFact", "fact"]

ROLE_FOR_RISK = {"read": "viewer", "write": "editor", "dangerous": "admin"}
_ROLE_ORDER = {"viewer": 0, "editor": 1, "admin": 2}


@dataclass(frozen=True)
class ToolFact:
    risk: str  # read | write | dangerous
    group: str  # always | none | dashboard | dataset | migration
    action: str  # "delete dashboards": completes "Your role does not allow ..."

    @property
    def required_role(self) -> str:
        return ROLE_FOR_RISK[self.risk]

    def allowed_for(self, role: str | None) -> bool:
        return _ROLE_ORDER.get(role or "viewer", 0) >= _ROLE_ORDER[self.required_role]


TOOLS: dict[str, ToolFact] = {
    "show_capabilities": ToolFact("read", "always", "describe what I can do"),
    "list_environments": ToolFact("read", "none", "list the environments"),
    "list_charts": ToolFact("read", "none", "list all charts"),
    "list_dashboards": ToolFact("read", "dashboard", "list dashboards"),
    "get_dashboard": ToolFact("read", "dashboard", "show a dashboard"),
    "get_dashboard_charts": ToolFact("read", "dashboard", "list a dashboard's charts"),
    "get_dashboard_datasets": ToolFact("read", "dashboard", "list a dashboard's datasets"),
    "export_dashboard": ToolFact("read", "dashboard", "export dashboards"),
    "update_dashboard": ToolFact("write", "dashboard", "change dashboards"),
    "set_dashboard_published": ToolFact("write", "dashboard", "publish or unpublish dashboards"),
    "delete_dashboard": ToolFact("dangerous", "dashboard", "delete dashboards"),
    "list_datasets": ToolFact("read", "dataset", "list datasets"),
    "get_dataset": ToolFact("read", "dataset", "show a dataset"),
    "get_dataset_usage": ToolFact("read", "dataset", "show where a dataset is used"),
    "preview_dataset": ToolFact("read", "dataset", "preview dataset rows"),
    "refresh_dataset_columns": ToolFact("write", "dataset", "refresh dataset columns"),
    "update_dataset": ToolFact("write", "dataset", "change datasets"),
    "delete_dataset": ToolFact("dangerous", "dataset", "delete datasets"),
    "compare_environments": ToolFact("read", "migration", "compare environments"),
    "plan_migration": ToolFact("read", "migration", "plan migrations"),
    "migration_history": ToolFact("read", "migration", "show the migration history"),
    "migrate_dashboard": ToolFact("write", "migration", "promote dashboards"),
}

# Where a person finds each group of tools (the page the agent is opened from).
PAGE_HINTS = {
    "dashboard": "a dashboard page (objectType=dashboard)",
    "dataset": "a dataset page (objectType=dataset)",
    "migration": "the migration page (objectType=migration)",
    "none": "the agent opened without a page context",
}


def fact(tool: str) -> ToolFact | None:
    return TOOLS.get(tool)

"""What the offline model knows about the 23 tools: risk, page and plain-English labels.

Risk, group and required role are read from the tools' specs; only the labels live here.
The specs are read on first use, not at import: the model worker process (agent/
model_worker.py) gets the facts from the server instead (`TOOLS.install`), so it never imports the
tools and what they import (storage, SQLAlchemy, SQLModel, PyJWT: 250 modules, 28 MB, about
0.4 s of CPU on the first answer's path, measured).

The brain only ever calls tools it is offered; this table lets it explain *why* a tool it
wanted is missing (the role does not allow it, or another page offers it).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

__all__ = ["PAGE_HINTS", "TOOLS", "ToolFact", "fact"]

_ROLE_ORDER = {"viewer": 0, "editor": 1, "admin": 2}


@dataclass(frozen=True)
class ToolFact:
    risk: str  # read | write | dangerous
    group: str  # always | none | dashboard | dataset | migration
    action: str  # "delete dashboards": completes "Your role does not allow ..."
    required_role: str

    def allowed_for(self, role: str | None) -> bool:
        return _ROLE_ORDER.get(role or "viewer", 0) >= _ROLE_ORDER[self.required_role]


# The one thing said here and not in the tool's spec: how to name the action to a person.
_ACTIONS = {
    "show_capabilities": "describe what I can do",
    "list_environments": "list the environments",
    "list_charts": "list all charts",
    "list_dashboards": "list dashboards",
    "get_dashboard": "show a dashboard",
    "get_dashboard_charts": "list a dashboard's charts",
    "get_dashboard_datasets": "list a dashboard's datasets",
    "export_dashboard": "export dashboards",
    "update_dashboard": "change dashboards",
    "set_dashboard_published": "publish or unpublish dashboards",
    "delete_dashboard": "delete dashboards",
    "list_datasets": "list datasets",
    "get_dataset": "show a dataset",
    "get_dataset_usage": "show where a dataset is used",
    "preview_dataset": "preview dataset rows",
    "refresh_dataset_columns": "refresh dataset columns",
    "update_dataset": "change datasets",
    "delete_dataset": "delete datasets",
    "compare_environments": "compare environments",
    "plan_migration": "plan migrations",
    "migration_history": "show the migration history",
    "migrate_dashboard": "promote dashboards",
    "recent_changes": "show what changed recently",
}


def _facts() -> dict[str, ToolFact]:
    """Risk, group and role come from each tool's spec (agent/tools), never restated here."""
    from agent.tools.catalog import all_tools

    facts = {}
    for spec in all_tools():
        group = next((g for g in sorted(spec.groups) if g != "none"), "none")
        facts[spec.name] = ToolFact(spec.risk, group, _ACTIONS[spec.name], spec.required_role)
    return facts


class _Facts(Mapping[str, ToolFact]):
    """The facts by tool name: installed by the model worker, else read from the specs on
    first use."""

    def __init__(self) -> None:
        self._facts: dict[str, ToolFact] | None = None
        self._lock = threading.Lock()

    def install(self, facts: Mapping[str, ToolFact]) -> None:
        """Use these facts instead of reading the tools' specs (the model worker's, sent by
        the server, which has the specs loaded anyway)."""
        with self._lock:
            self._facts = dict(facts)

    def _loaded(self) -> dict[str, ToolFact]:
        if self._facts is None:
            with self._lock:
                if self._facts is None:
                    self._facts = _facts()
        return self._facts

    def __getitem__(self, name: str) -> ToolFact:
        return self._loaded()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._loaded())

    def __len__(self) -> int:
        return len(self._loaded())


TOOLS = _Facts()


# Where a person finds each group of tools (the page the agent is opened from).
PAGE_HINTS = {
    "dashboard": "a dashboard page (objectType=dashboard)",
    "dataset": "a dataset page (objectType=dataset)",
    "migration": "the migration page (objectType=migration)",
    "none": "the agent opened without a page context",
}


def fact(tool: str) -> ToolFact | None:
    return TOOLS.get(tool)

"""Helpers of the real-Superset sign-in tests: settings whose only environment is the
instance under test (passthrough), the tools each role must get, and request counts from
the instance's gunicorn access log (the Superset side)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent.settings import EnvironmentConfig, Settings
from agent.tools.registry import select_tools

__all__ = ["expected_tools", "requests_in", "settings_for"]


def settings_for(url: str, tmp: Path, **overrides: Any) -> Settings:
    env = EnvironmentConfig(name="auth", base_url=url, tier="dev", auth_mode="passthrough")
    return Settings(database_url=f"sqlite:///{tmp}/agent.db", data_dir=tmp / "data",
                    superset_environments=[env], **overrides)


def expected_tools(registry: Any, role: str) -> set[str]:
    """All 23 for admin, reads and writes for editor, reads only for viewer (SPEC §4)."""
    allowed = {"admin": {"read", "write", "dangerous"}, "editor": {"read", "write"},
               "viewer": {"read"}}[role]
    tools = {spec.name for spec in registry.all() if spec.risk in allowed}
    assert tools == {s.name for s in select_tools(registry, role=role, object_type=None)}
    assert role != "admin" or len(tools) == 23
    return tools


def requests_in(info: dict[str, str], line: str) -> int:
    """How many requests like `GET /api/v1/me/ ` the instance has served (its access log)."""
    return sum(1 for row in Path(info["access_log"]).read_text().splitlines()
               if f'"{line} HTTP/' in row)

"""The offline model's knowledge of the tools must match the real tool specs (no drift)."""

from __future__ import annotations

from agent.offline.catalog import TOOLS
from agent.tools.catalog import all_tools


def test_offline_catalog_matches_the_real_tools() -> None:
    specs = {spec.name: spec for spec in all_tools()}
    assert set(TOOLS) == set(specs)
    for name, fact in TOOLS.items():
        spec = specs[name]
        assert fact.risk == spec.risk, name
        assert fact.group in spec.groups, name
        assert fact.required_role == spec.required_role, name

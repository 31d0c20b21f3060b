"""Tools that need no Superset: `show_capabilities` and `list_environments`."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from agent.tools.registry import ToolContext, ToolSpec

__all__ = ["BUILTIN_TOOLS"]


class NoArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")


async def _show_capabilities(_: BaseModel, ctx: ToolContext) -> dict[str, Any]:
    return {
        "role": ctx.identity.role,
        "environment": ctx.env_id,
        "tools": [
            {"name": spec.name, "risk": spec.risk,
             "description": spec.description}  # whole: a first sentence cut "e.g." short
            for spec in ctx.offered
        ],
        "note": "Reads run at once; every change waits for your explicit approval.",
    }


async def _list_environments(_: BaseModel, ctx: ToolContext) -> dict[str, Any]:
    tiers = ctx.settings.environment_tiers
    return {
        "count": len(tiers),
        "current": ctx.env_id,
        "environments": [
            {"name": env.name, "tier": tiers[env.name],
             "kind": "demo" if env.base_url is None else "superset",
             "url": env.base_url}
            for env in ctx.settings.superset_environments
        ],
    }


BUILTIN_TOOLS = [
    ToolSpec(
        name="show_capabilities",
        description="Describe what this assistant can do here: the tools offered for this "
        "page and role, and how changes are approved.",
        args_schema=NoArgs, risk="read", groups=frozenset({"always"}),
        run=_show_capabilities,
    ),
    ToolSpec(
        name="list_environments",
        description="List the Superset environments (name, tier dev/staging/prod, kind).",
        args_schema=NoArgs, risk="read", groups=frozenset({"none"}),
        run=_list_environments,
    ),
]

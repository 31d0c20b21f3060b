"""The invocation guard and the three risk axes of a tool call (SPEC §3, §4).

Selection (`select_tools`) decides what the model is told about; this module re-checks every
call at execution time with the same rules (existence, RBAC, context affinity, and that the
run offered it), so a hallucinated, injected or directly sent call never runs. It also
resolves a call's target environment and rates it: `tool_risk` (read/write/dangerous),
`env_risk` (the target's tier, prod when unknown) and `permission_risk`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from agent.environments import resolve_env, tier_of
from agent.identity import role_at_least
from agent.tools.registry import ToolRegistry, ToolSpec

__all__ = [
    "Denial",
    "Risk",
    "assess",
    "check_invocation",
    "target_env",
]

DENIED_BY_ROLE = "denied_by_role"
NOT_OFFERED = "not_offered"


@dataclass(frozen=True)
class Denial:
    """Why a call may not run; `action` is what the audit log records."""

    reason: str
    required_role: str | None
    action: str


def check_invocation(
    registry: ToolRegistry, name: str, *, role: str, object_type: str | None,
    offered: Collection[str],
) -> tuple[ToolSpec | None, Denial | None]:
    """The tool for `name` if this caller may run it here and now, else why not."""
    spec = registry.get(name)
    if spec is None:
        return None, Denial(f"There is no tool named {name!r}.", None, NOT_OFFERED)
    if not role_at_least(role, spec.required_role):
        return spec, Denial(
            f"Your role ({role}) does not allow {name}; it needs the {spec.required_role} "
            "role.", spec.required_role, DENIED_BY_ROLE)
    if not spec.offered_in(object_type) or name not in offered:
        where = f"a {object_type} page" if object_type else "this page"
        return spec, Denial(f"{name} is not offered on {where}.", None, NOT_OFFERED)
    return spec, None


def _schema_fields(spec: ToolSpec) -> Collection[str]:
    return spec.args_schema.model_fields


def target_env(spec: ToolSpec, args: Mapping[str, Any], run_env: str | None) -> str | None:
    """The environment a call acts on: `target_env` for migrations; else the tool's `env_id`
    argument, then the run's environment (submit `env_id`, then `uicontext.envId`)."""
    if "target_env" in _schema_fields(spec):
        value = args.get("target_env")
        return value if isinstance(value, str) and value.strip() else None
    if not spec.uses_env:
        return None
    arg = args.get("env_id")
    return resolve_env(arg if isinstance(arg, str) else None, run_env)


@dataclass(frozen=True)
class Risk:
    tool_risk: str
    env_id: str | None
    env_risk: str | None
    permission_risk: str
    dangerous: bool

    @property
    def needs_confirmation(self) -> bool:
        return self.tool_risk != "read"


def assess(spec: ToolSpec, args: Mapping[str, Any], *, run_env: str | None, role: str,
           tiers: Mapping[str, str | None]) -> Risk:
    """Rate a permitted call; dangerous tools and any write aimed at prod are dangerous."""
    env = target_env(spec, args, run_env)
    tier = tier_of(env, dict(tiers))
    allowed = role_at_least(role, spec.required_role)
    return Risk(
        tool_risk=spec.risk, env_id=env, env_risk=tier,
        permission_risk="allowed" if allowed else "denied",
        dangerous=spec.risk == "dangerous" or (spec.risk == "write" and tier == "prod"),
    )

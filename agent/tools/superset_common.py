"""What every Superset tool shares: finding the client of an environment and compacting
Superset's verbose records into the few fields a person or a model needs."""

from __future__ import annotations

from typing import Any

from agent.errors import ToolFailure, ToolInputError
from agent.superset.client import SupersetClient
from agent.superset.clients import SupersetClients
from agent.tools.registry import ToolContext

__all__ = [
    "client_for",
    "clients_of",
    "compact",
    "env_of",
    "people",
    "person",
    "require_changes",
]


def clients_of(ctx: ToolContext) -> SupersetClients:
    clients = ctx.services.get("superset")
    if clients is None:
        raise ToolFailure("Superset access is not configured in this app.")
    return clients


def env_of(args: Any, ctx: ToolContext) -> str | None:
    """The tool argument wins; else the environment the loop resolved (submit > UI context)."""
    return getattr(args, "env_id", None) or ctx.env_id


def client_for(ctx: ToolContext, env: str | None) -> SupersetClient:
    # Passthrough environments need the user's Superset token; ToolContext carries none
    # yet, so such a call fails with a clear auth error until that plumbing exists.
    return clients_of(ctx).get(env, user_token=getattr(ctx, "superset_token", None))


def person(user: Any) -> str | None:
    """`{"first_name": "Ada", "last_name": "L", ...}` -> "Ada L"."""
    if not isinstance(user, dict):
        return None
    name = " ".join(str(user.get(k) or "") for k in ("first_name", "last_name")).strip()
    return name or user.get("username") or (f"user {user['id']}" if "id" in user else None)


def people(users: Any) -> list[str]:
    return [name for name in (person(u) for u in users or []) if name]


def compact(record: dict[str, Any], fields: dict[str, str]) -> dict[str, Any]:
    """Keep `fields` (source key -> output key) that have a value; drop the rest."""
    out: dict[str, Any] = {}
    for source, target in fields.items():
        value = record.get(source)
        if value is not None and value != "" and value != []:
            out[target] = value
    return out


def require_changes(payload: dict[str, Any], what: str) -> dict[str, Any]:
    """Refuse an update that changes nothing, before anything is sent."""
    if not payload:
        raise ToolInputError(f"Nothing to change on {what}: give at least one field to update.")
    return payload

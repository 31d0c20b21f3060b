"""What every Superset tool shares: finding the client of an environment and compacting
Superset's verbose records into the few fields a person or a model needs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent.errors import ToolFailure, ToolInputError
from agent.superset.client import SupersetClient
from agent.superset.clients import SupersetClients
from agent.superset.rison import Filter
from agent.tools.registry import ToolContext

__all__ = [
    "ListPage",
    "client_for",
    "clients_of",
    "compact",
    "env_of",
    "list_page",
    "people",
    "person",
    "require_changes",
]


def clients_of(ctx: ToolContext) -> SupersetClients:
    clients = ctx.services.superset
    if clients is None:
        raise ToolFailure("Superset access is not configured in this app.")
    return clients


def env_of(args: Any, ctx: ToolContext) -> str | None:
    """The tool argument wins; else the environment the loop resolved (submit > UI context)."""
    return getattr(args, "env_id", None) or ctx.env_id


def client_for(ctx: ToolContext, env: str | None) -> SupersetClient:
    """The environment's client; passthrough environments act with the caller's token."""
    token = ctx.superset_token.get_secret_value() if ctx.superset_token else None
    return clients_of(ctx).get(env, user_token=token)


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


class ListPage:
    """One page of a Superset list endpoint, searched by its title column."""

    def __init__(self, env: str | None, body: dict[str, Any], args: Any) -> None:
        self.env, self.body, self.args = env, body, args

    @property
    def rows(self) -> list[dict[str, Any]]:
        return list(self.body.get("result") or [])

    def result(self, key: str, items: list[dict[str, Any]]) -> dict[str, Any]:
        """The tool result: environment, total count, paging, and the compact items."""
        return {"env": self.env, "count": self.body.get("count", len(items)),
                "page": self.args.page, "page_size": self.args.page_size, key: items}


async def list_page(ctx: ToolContext, args: Any, resource: str, title_column: str, *,
                    extra: Sequence[Filter] = ()) -> ListPage:
    """List `resource` in the call's environment, filtered by `args.search` if given and
    by the `extra` filters."""
    env = env_of(args, ctx)
    filters = [Filter(title_column, "ct", args.search)] if args.search else []
    filters += list(extra)
    body = await client_for(ctx, env).list(resource, filters=filters, page=args.page,
                                           page_size=args.page_size)
    return ListPage(env, body, args)

"""`recent_changes`: what this app changed on one dashboard or dataset, from its own records.

It reads the audit log (every executed write, issue 13 item 7) and the migration history,
never Superset, so it answers "what changed in this dashboard recently?" with who did what
through the agent, when, and how it ended. A person sees only what the audit panel would
show them: an admin outside the demo sees everyone's changes; anyone else, and everyone in
the public demo (where each visitor can be an admin), sees only their own.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import Field

from agent.errors import ToolFailure
from agent.tools.registry import ToolContext, ToolSpec
from agent.tools.superset_args import EnvArgs, ObjectId
from storage import audit as audit_repo
from storage import migrations_log, off_loop

__all__ = ["CHANGE_TOOLS", "RecentChangesArgs"]

# The writes that change each kind of object (their arguments carry its id).
_WRITES = {
    "dashboard": ("update_dashboard", "set_dashboard_published", "delete_dashboard",
                  "migrate_dashboard"),
    "dataset": ("update_dataset", "refresh_dataset_columns", "delete_dataset"),
}
_IDS = frozenset({"dashboard_id", "dataset_id", "env_id"})


class RecentChangesArgs(EnvArgs):
    object_type: Literal["dashboard", "dataset"] = Field(
        default="dashboard", description="The kind of object.")
    object_id: int = ObjectId
    limit: int = Field(default=20, ge=1, le=100, description="At most this many changes.")


def _scope(ctx: ToolContext) -> tuple[str | None, str]:
    """(user id to keep, or None for everyone; how to say it)."""
    if ctx.identity.role == "admin" and not ctx.settings.is_demo:
        return None, "everyone's changes made through this assistant"
    return ctx.identity.user_id, "your own changes made through this assistant"


def _read(args: RecentChangesArgs, ctx: ToolContext) -> dict[str, Any]:
    db = ctx.services.db
    if db is None:
        raise ToolFailure("The change history is not available: no database is configured.")
    env = args.env_id or ctx.env_id
    user_id, scope = _scope(ctx)
    changes: list[tuple[datetime, dict[str, Any]]] = []
    with db.session() as session:
        for row in audit_repo.list_object_changes(
                session=session, tools=_WRITES[args.object_type],
                id_key=f"{args.object_type}_id", object_id=args.object_id, env_id=env,
                user_id=user_id, limit=args.limit):
            changes.append((row.at, {"at": row.at.isoformat(timespec="seconds"),
                            "source": "audit log",
                            "user": row.user_id, "tool": row.tool, "env": row.env_id,
                            "changes": {k: v for k, v in (row.args or {}).items()
                                        if k not in _IDS},
                            "outcome": row.outcome}))
        if args.object_type == "dashboard":
            for record in migrations_log.migrations_touching(
                    session=session, dashboard_id=args.object_id, env_id=env,
                    user_id=user_id, limit=args.limit):
                changes.append((record.created_at, {
                    "at": record.created_at.isoformat(timespec="seconds"),
                    "source": "migration history", "user": record.user_id,
                    "tool": "migrate_dashboard", "env": record.target_env,
                    "changes": {"source_env": record.source_env,
                                "target_env": record.target_env,
                                "target_dashboard_id": record.target_dashboard_id},
                    "outcome": record.status + (f": {record.error}" if record.error else "")}))
    newest = [change for _, change in sorted(changes, key=lambda pair: _aware(pair[0]),
                                             reverse=True)][:args.limit]
    return {"object_type": args.object_type, "object_id": args.object_id, "env": env,
            "scope": scope, "count": len(newest), "changes": newest}


def _aware(when: datetime) -> datetime:
    """SQLite hands back naive datetimes (stored as UTC), PostgreSQL aware ones."""
    return when if when.tzinfo else when.replace(tzinfo=UTC)


async def _recent_changes(args: RecentChangesArgs, ctx: ToolContext) -> dict[str, Any]:
    return await off_loop(_read, args, ctx)  # database reads leave the event loop


CHANGE_TOOLS = [
    ToolSpec(
        name="recent_changes",
        description="What changed recently on one dashboard (or dataset) through this "
        "assistant: executed changes from the audit log and promotions from the migration "
        "history, newest first (who, when, what, outcome). Changes made in Superset itself "
        "are not recorded here.",
        args_schema=RecentChangesArgs, risk="read",
        groups=frozenset({"dashboard", "migration", "none"}), run=_recent_changes,
        uses_env=True),
]

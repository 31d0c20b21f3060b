"""One-line human summaries of a write call for its confirmation card (SPEC §6).

"Delete dashboard #42 'Sales' in prod — used by 3 charts". Names and counts are looked up
in Superset (best effort, briefly): a person deciding should see what the id stands for
and what depends on it: the charts on a dashboard, and for a dataset the charts and
dashboards using it (`related_objects`; a delete says they will stop working). A failed lookup never
blocks the confirmation; the summary then names the id only. Looked-up names are data:
they are quoted, never interpreted.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from agent.errors import ToolFailure
from agent.tools.datasets import related_objects
from agent.tools.registry import ToolContext
from agent.tools.superset_common import client_for

__all__ = ["describe_call", "summarize_call"]

_LOOKUP_TIMEOUT_S = 5.0
_MAX_NAME = 120


def _quoted(name: Any) -> str:
    text = " ".join(str(name or "").split())
    if not text:
        return ""
    return f" '{text[:_MAX_NAME]}{'…' if len(text) > _MAX_NAME else ''}'"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


async def _lookup(fetch: Callable[[], Awaitable[Any]]) -> Any:
    try:
        return await asyncio.wait_for(fetch(), timeout=_LOOKUP_TIMEOUT_S)
    except (ToolFailure, TimeoutError, KeyError):
        return None


_Seen = dict[tuple[str, str | None, int], dict[str, Any]]


async def _record(ctx: ToolContext, kind: str, env: str | None, pk: int,
                  seen: _Seen | None) -> dict[str, Any]:
    """The object as Superset has it ({} when the lookup failed), read once per call
    (`seen`: the summary and the before → after share one GET)."""
    key = (kind, env, pk)
    if seen is not None and key in seen:
        return seen[key]
    record = await _lookup(lambda: client_for(ctx, env).get(kind, pk))
    found = record if isinstance(record, dict) else {}
    if seen is not None:
        seen[key] = found
    return found


async def _dashboard(ctx: ToolContext, env: str | None, pk: int,
                     seen: _Seen | None = None) -> dict[str, Any]:
    return await _record(ctx, "dashboard", env, pk, seen)


async def _dataset(ctx: ToolContext, env: str | None, pk: int,
                   seen: _Seen | None = None) -> dict[str, Any]:
    return await _record(ctx, "dataset", env, pk, seen)


def _changes(args: dict[str, Any], labels: dict[str, str]) -> str:
    parts = []
    for key, label in labels.items():
        value = args.get(key)
        if value is None:
            continue
        shown = value if not isinstance(value, str) else f"'{' '.join(value.split())[:60]}'"
        parts.append(f"{label} → {shown}")
    return ", ".join(parts) or "no fields"


_DASHBOARD_FIELDS = {"title": ("title", "dashboard_title"), "slug": ("slug", "slug"),
                     "description": ("description", "description"),
                     "owners": ("owners", "owners")}
_DATASET_FIELDS = {"description": ("description", "description"),
                   "cache_timeout": ("cache timeout", "cache_timeout"),
                   "owners": ("owners", "owners")}


def _now(record: dict[str, Any], source: str) -> Any:
    """A field's value now; owners as their user ids (what the call sets)."""
    value = record.get(source)
    if source == "owners" and isinstance(value, list):
        return sorted(o["id"] for o in value if isinstance(o, dict) and "id" in o)
    return value


def _before_after(args: dict[str, Any], record: dict[str, Any],
                  fields: dict[str, tuple[str, str]]) -> list[dict[str, Any]]:
    """Each field the call sets, with its value now (when the lookup found it) and after."""
    rows = []
    for key, (label, source) in fields.items():
        if args.get(key) is None:
            continue
        rows.append({"field": label, "before": _now(record, source) if record else None,
                     "after": args[key]})
    return rows


async def describe_call(tool: str, args: dict[str, Any], env: str | None,
                        ctx: ToolContext) -> tuple[str, list[dict[str, Any]]]:
    """The one-line summary and, for updates, each field's value now and after (for the
    approval card's before → after; "now" is None when the lookup failed)."""
    if tool == "undo_change":
        from agent.undo import describe_undo  # the undo module imports the tools, like this

        return await describe_undo(args, ctx)
    seen: _Seen = {}
    summary = await summarize_call(tool, args, env, ctx, seen=seen)
    if tool == "update_dashboard":
        record = await _dashboard(ctx, env, int(args["dashboard_id"]), seen)
        return summary, _before_after(args, record, _DASHBOARD_FIELDS)
    if tool == "update_dataset":
        record = await _dataset(ctx, env, int(args["dataset_id"]), seen)
        return summary, _before_after(args, record, _DATASET_FIELDS)
    if tool == "set_dashboard_published":
        record = await _dashboard(ctx, env, int(args["dashboard_id"]), seen)
        before = record.get("published") if record else None
        return summary, [{"field": "published", "before": before,
                          "after": bool(args.get("published"))}]
    if tool == "refresh_dataset_columns":
        record = await _dataset(ctx, env, int(args["dataset_id"]), seen)
        columns = record.get("columns") if record else None
        return summary, [{"field": "columns", "before": len(columns)
                          if isinstance(columns, list) else None,
                          "after": "re-read from its table"}]
    return summary, []


async def summarize_call(tool: str, args: dict[str, Any], env: str | None,
                         ctx: ToolContext, *, seen: _Seen | None = None) -> str:
    """What the call will do, in one line a person can decide on."""
    where = f" in {env}" if env else ""
    if tool in ("delete_dashboard", "update_dashboard", "set_dashboard_published"):
        pk = int(args["dashboard_id"])
        record = await _dashboard(ctx, env, pk, seen)
        name = f"dashboard #{pk}{_quoted(record.get('dashboard_title'))}"
        if tool == "delete_dashboard":
            charts = record.get("charts")
            used = f" — used by {_plural(len(charts), 'chart')}" if charts is not None else ""
            return f"Delete {name}{where}{used}"
        charts = record.get("charts")
        on_it = f" ({_plural(len(charts), 'chart')} on it)" if isinstance(charts, list) else ""
        if tool == "set_dashboard_published":
            verb = "Publish" if args.get("published") else "Unpublish"
            return f"{verb} {name}{where}{on_it}"
        return f"Update {name}{where}{on_it}: " + _changes(
            args, {"title": "title", "slug": "slug", "description": "description",
                   "owners": "owners"})
    if tool in ("delete_dataset", "update_dataset", "refresh_dataset_columns"):
        pk = int(args["dataset_id"])
        record = await _dataset(ctx, env, pk, seen)
        name = f"dataset #{pk}{_quoted(record.get('table_name'))}"
        usage = await _lookup(lambda: related_objects(client_for(ctx, env), pk))
        if tool == "delete_dataset":
            if usage is None:
                return f"Delete {name}{where} — its usage could not be checked"
            charts, boards = usage["charts"]["count"], usage["dashboards"]["count"]
            if not charts and not boards:
                return f"Delete {name}{where} — no chart or dashboard uses it"
            return (f"Delete {name}{where} — used by {_plural(charts, 'chart')} on "
                    f"{_plural(boards, 'dashboard')}, which will stop working")
        used = "" if usage is None else (
            f" (used by {_plural(usage['charts']['count'], 'chart')} on "
            f"{_plural(usage['dashboards']['count'], 'dashboard')})")
        if tool == "refresh_dataset_columns":
            return f"Refresh the columns of {name}{where}{used} from its table"
        return f"Update {name}{where}{used}: " + _changes(
            args, {"description": "description", "cache_timeout": "cache timeout",
                   "owners": "owners"})
    if tool == "migrate_dashboard":
        pk = int(args["dashboard_id"])
        source = args.get("source_env")
        record = await _dashboard(ctx, source, pk)
        return (f"Migrate dashboard #{pk}{_quoted(record.get('dashboard_title'))} with its "
                f"charts and datasets from {source} to {args.get('target_env')} "
                "(objects with the same uuid are overwritten)")
    shown = ", ".join(f"{k}={v!r}" for k, v in args.items())
    return f"Run {tool}({shown}){where}"

"""Answers about changes: after one ran (or was planned), and the record of recent ones."""

from __future__ import annotations

from typing import Any

from agent.offline.render import SHOWN, env_phrase, md_text, object_ref, plural, refs, summarize
from agent.offline.results import Result, clip, unwrap
from agent.offline.transcript import ToolExchange

__all__ = ["migration_answer", "recent_changes_answer", "write_answer"]


def write_answer(call: ToolExchange, result: Result, ctx: dict[str, Any]) -> str:
    args = call.arguments
    where = env_phrase(call, ctx)
    changes = ", ".join(f"{k.replace('_', ' ')} → {clip(v, 60)!r}" if isinstance(v, str) else
                        f"{k.replace('_', ' ')} → {v}" for k, v in args.items()
                        if k not in ("dashboard_id", "dataset_id", "env_id"))
    data = result.data if isinstance(result.data, dict) else {}
    notable = {k: data[k] for k in ("orphaned_charts", "affected_dashboards", "charts_kept",
                                    "created", "overwritten", "warnings", "note") if k in data}
    if call.name == "migrate_dashboard" and data:
        notable = {k: v for k, v in data.items() if k not in ("status", "message", "ok")}
    detail = f" {summarize(notable)}." if notable else ""
    if call.name == "set_dashboard_published":
        state = "published" if args.get("published") else "a draft (unpublished)"
        return f"Done: {object_ref('dashboard', call)}{where} is now {state}.{detail}"
    if call.name.startswith("delete_"):
        kind = call.name.removeprefix("delete_")
        where = where.replace(" in ", " from ")
        return f"Done: {object_ref(kind, call)} was deleted{where}.{detail}"
    if call.name == "refresh_dataset_columns":
        return f"Done: refreshed the columns of {object_ref('dataset', call)}{where}.{detail}"
    if call.name == "migrate_dashboard":
        if {"created", "overwritten"} <= set(data):
            twin = data.get("dashboard") if isinstance(data.get("dashboard"), dict) else {}
            there = f" (dashboard #{twin['target_id']} there)" if twin.get("target_id") else ""
            detail = (f" Created {refs(data['created'])}, overwrote {refs(data['overwritten'])},"
                      f" reused {refs(data.get('reused', []))}.")
        else:
            there = ""
        return (f"Done: dashboard #{args.get('dashboard_id')} promoted from "
                f"{args.get('source_env')} to {args.get('target_env')}{there}.{detail}")
    kind = "dataset" if "dataset" in call.name else "dashboard"
    return f"Done: {object_ref(kind, call)}{where} updated ({changes or 'no changes'}).{detail}"


def migration_answer(call: ToolExchange, result: Result, ctx: dict[str, Any]) -> str:
    args, data = call.arguments, unwrap(result.data)
    source, target = args.get("source_env"), args.get("target_env")
    dash = data.get("dashboard") if isinstance(data, dict) else None
    title = f" '{clip(dash['title'], 60)}'" if isinstance(dash, dict) and dash.get("title") else ""
    subject = f"dashboard #{args.get('dashboard_id')}{title}"
    if not isinstance(data, dict):
        return f"{call.name} for {subject}: {summarize(data)}."
    warnings = data.get("warnings") if isinstance(data.get("warnings"), list) else []
    notes = (" Warnings: " + " ".join(clip(w, 200) for w in warnings[:3])) if warnings else ""
    if call.name == "plan_migration" and {"create", "overwrite"} <= set(data):
        return (f"Dry run for promoting {subject} from {source} to {target} (nothing was "
                f"changed): it would create {refs(data['create'])}, overwrite "
                f"{refs(data['overwrite'])} and reuse {refs(data.get('reuse', []))}.{notes}")
    if call.name == "compare_environments" and isinstance(data.get("objects"), list):
        rows = [o for o in data["objects"] if isinstance(o, dict)]
        parts = []
        for status, label in (("missing", f"missing in {target}"), ("different", "different"),
                              ("same", "the same")):
            group = [o for o in rows if o.get("status") == status]
            if group:
                fields = sorted({str(d.get("field")) for o in group[:5]
                                 for d in o.get("differences") or [] if isinstance(d, dict)})
                changed = f" in fields {', '.join(fields[:6])}" if fields else ""
                parts.append(f"{label}: {refs(group)}{changed}")
        absent = isinstance(dash, dict) and "target_id" in dash and dash["target_id"] is None
        lead = f" The dashboard does not exist in {target} yet." if absent else ""
        return (f"Compared {subject} between {source} and {target}: "
                f"{'; '.join(parts) or 'nothing to compare'}.{lead}")
    verb = "Dry run for" if call.name == "plan_migration" else "Compared"
    return f"{verb} {subject} ({source} → {target}): {summarize(data)}.{notes}"


def _change_line(change: dict[str, Any]) -> str:
    details = change.get("changes") if isinstance(change.get("changes"), dict) else {}
    what = ", ".join(f"{k.replace('_', ' ')} {clip(v, 40)!r}" if isinstance(v, str) else
                     f"{k.replace('_', ' ')} {clip(v, 40)}" for k, v in details.items())
    where = f" in {clip(change['env'], 30)}" if change.get("env") else ""
    return md_text(f"{clip(change.get('at'), 25)}: {clip(change.get('tool'), 40)}{where}"
                   + (f" ({what})" if what else "") + f" by {clip(change.get('user'), 40)}"
                   + f" — {clip(change.get('outcome') or 'no outcome recorded', 80)}", 300)


def recent_changes_answer(call: ToolExchange, result: Result, ctx: dict[str, Any]) -> str:
    data = unwrap(result.data)
    kind = call.arguments.get("object_type") or "dashboard"
    subject = f"{kind} #{call.arguments.get('object_id')}"
    if not isinstance(data, dict) or not isinstance(data.get("changes"), list):
        return f"Recent changes of {subject}: {summarize(data)}."
    changes = [c for c in data["changes"] if isinstance(c, dict)]
    where = f" in {clip(data['env'], 30)}" if data.get("env") else ""
    scope = f" ({clip(data['scope'], 80)})" if data.get("scope") else ""
    if not changes:
        return (f"No changes to {subject}{where} are recorded{scope}. Only changes made "
                "through this assistant are recorded; Superset's own history is not read.")
    shown = changes[:SHOWN]
    lines = "\n".join(f"- {_change_line(c)}" for c in shown)
    more = len(changes) - len(shown)
    return (f"{len(changes)} recorded {plural('change', len(changes))} of {subject}{where}"
            f"{scope}, newest first:\n\n{lines}" + (f"\n\n… and {more} older." if more > 0 else ""))

"""What the offline model says around its calls: refusals, questions, what a change will do,
and why a multi-step plan stopped. Titles from results appear only clipped and escaped."""

from __future__ import annotations

from typing import Any

from agent.offline.catalog import PAGE_HINTS, TOOLS
from agent.offline.intents import Intent
from agent.offline.plan import Step
from agent.offline.progress import Progress
from agent.offline.refer import Listed
from agent.offline.render import md_text
from agent.offline.results import clip

__all__ = ["ask_missing", "not_offered", "preamble", "stopped", "unknown"]

# A tool missing on this page, and what this page offers instead.
_ALTERNATIVES = {
    "list_datasets": ("get_dashboard_datasets", "the datasets this dashboard uses (ask \"what "
                      "datasets does it use?\")"),
    "list_charts": ("get_dashboard_charts", "the charts on this dashboard (ask \"which charts "
                    "are on it?\")"),
    "list_dashboards": ("get_dataset_usage", "the charts and dashboards that use this dataset "
                        "(ask \"who uses this dataset?\")"),
}
# A capability no tool has (issue 13, item 6): say so, and the nearest thing there is.
_NEAREST = {
    "create_dashboard": "The nearest I can do: promote an existing dashboard to another "
                        "environment, or rename one",
    "create_chart": "The nearest I can do: list the charts, or those on a dashboard",
    "create_dataset": "The nearest I can do: list the datasets, or preview one's rows",
    "delete_chart": "The nearest I can do: list the charts and the dashboards they are on",
    "update_chart": "The nearest I can do: list the charts, or rename the dashboard they are on",
    "run_query": "The nearest I can do: preview a dataset's first rows",
    "schedule_report": "The nearest I can do: export a dashboard as a bundle",
}
_VERBS = {"run_query": "run a SQL query", "schedule_report": "schedule reports or alerts"}


def _object(intent: Intent) -> str:
    if intent.kind in ("dashboard", "dataset") and intent.ids:
        return f" ({intent.kind} #{intent.ids[0]})"
    return ""


def not_offered(intent: Intent, ctx: dict[str, Any], offered: dict[str, Any]) -> str:
    """Why the tool a request needs is missing: no such tool, the role, or the page."""
    tool = intent.tool or ""
    fact = TOOLS.get(tool)
    if fact is None:
        verb, _, noun = tool.partition("_")
        what = _VERBS.get(tool, f"{verb} a {noun}")
        nearest = _NEAREST.get(tool, "I can work with dashboards, datasets and promotions "
                                     "between environments")
        return (f"I can't {what}: no tool here does that, so I did nothing. "
                f"{nearest} — ask \"what can you do?\" for the whole list.")
    role, page = ctx.get("role"), ctx.get("objectType") or "none"
    if role in ("viewer", "editor", "admin") and not fact.allowed_for(role):
        return (f"Your role ({role}) does not allow me to {fact.action}{_object(intent)}: that "
                f"needs the {fact.required_role} role. Nothing was changed.")
    if fact.group not in ("always", page) and page != "none":
        text = (f"I can't {fact.action} from {PAGE_HINTS.get(page, 'this page')}: that is "
                f"offered on {PAGE_HINTS[fact.group]}.")
        alternative = _ALTERNATIVES.get(tool)
        if alternative and alternative[0] in offered and ctx.get("objectId"):
            text += f" Here I can show {alternative[1]}."
        return text
    return (f"I can't {fact.action} here: the {tool} tool is not offered to you on this page. "
            "Nothing was changed.")


def unknown(text: str, offered: dict[str, Any]) -> str:
    actions = [TOOLS[name].action for name in offered if name in TOOLS and
               name != "show_capabilities"]
    listing = "; ".join(actions[:12]) if actions else "describe what I can do"
    return (f"I'm not sure what you mean by \"{clip(text, 80)}\". Here I can: {listing}. "
            "For example, ask \"what can you do?\".")


def ask_missing(intent: Intent) -> str:
    """The question for the one required slot nobody gave, naming what it needs."""
    kind = intent.kind or "dashboard"
    if intent.missing == "object":
        return (f"Which {kind}? Tell me its id or name, for example \"{kind} 3\" or \"the "
                f"sales {kind}\", or ask me to list the {kind}s first.")
    if intent.missing == "envs":
        ident = f" {intent.ids[0]}" if intent.ids else ""
        return (f"Between which environments? For example \"dashboard{ident or ' 3'} from "
                "ss-dev to staging\".")
    if intent.missing == "title":
        return "What should the new title be? For example: rename it to \"Revenue 2026\"."
    needed = (intent.missing or "value").replace("_", " ")
    return f"What should the new {needed} be? Put it in quotes, for example \"…\"."


def preamble(name: str, args: dict[str, Any]) -> str:
    """What a change will do, said before the call (it then waits for a person's approval)."""
    dash, data = f"dashboard #{args.get('dashboard_id')}", f"dataset #{args.get('dataset_id')}"
    where = f" in {args['env_id']}" if args.get("env_id") else ""
    changes = ", ".join(f"{k.replace('_', ' ')} to {v!r}" for k, v in args.items()
                        if k not in ("dashboard_id", "dataset_id", "env_id"))
    summary = {
        "update_dashboard": f"update {dash}{where}: set {changes}",
        "set_dashboard_published": f"{'publish' if args.get('published') else 'unpublish'} "
                                   f"{dash}{where}",
        "delete_dashboard": f"delete {dash}{where}",
        "refresh_dataset_columns": f"refresh the columns of {data}{where}",
        "update_dataset": f"update {data}{where}: set {changes}",
        "delete_dataset": f"delete {data}{where}",
        "migrate_dashboard": f"promote {dash} from {args.get('source_env')} to "
                             f"{args.get('target_env')}",
    }.get(name, f"run {name}")
    return f"I'll {summary}. Nothing changes until you approve it."


def _rest(steps: list[Step]) -> str:
    names = [TOOLS[s.intent.tool].action if s.intent.tool in TOOLS else str(s.intent.tool)
             for s in steps if not s.lookup]
    return ", then ".join(dict.fromkeys(names))


def _choices(items: list[Listed]) -> str:
    shown = items[:8]
    listed = "; ".join(f"#{i.id}" + (f" '{md_text(i.title, 50)}'" if i.title else "")
                       for i in shown)
    return listed + (f"; and {len(items) - len(shown)} more" if len(items) > len(shown) else "")


def stopped(progress: Progress) -> str:
    """Why a plan ends before its last step, and what was not done."""
    step = progress.step
    intent = step.intent if step else Intent()
    kind, rest = intent.kind or "object", _rest(progress.remaining)
    not_done = f" I did not {rest}." if rest else ""
    if progress.stop == "missing":
        return ask_missing(intent)
    if progress.stop == "ask":
        name = clip(intent.args.get("search") or "", 40)
        return (f"{len(progress.candidates)} {kind}s match '{md_text(name, 40)}': "
                f"{_choices(progress.candidates)}. Which one do you mean? Say for example "
                f"\"the first one\" or \"#{progress.candidates[0].id}\".")
    if progress.stop == "no_match":
        name = clip(intent.args.get("search") or "", 40)
        return (f"No {kind} matches '{md_text(name, 40)}', so I stopped there.{not_done} Check "
                f"the name, or ask me to list the {kind}s.")
    if progress.stop == "same":
        return f"Nothing differs, so there is nothing to promote: I stopped there.{not_done}"
    if progress.stop == "unknown":
        return ("I could not tell from the comparison whether they differ, so I stopped "
                f"there.{not_done}")
    if progress.stop == "failed":
        return f"Because that did not go through, I stopped there.{not_done}"
    return ""

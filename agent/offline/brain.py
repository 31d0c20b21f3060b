"""Rule-based decisions of the offline model: which offered tool to call, or what to say.

Pure functions over OpenAI-format messages and tool schemas, so they are tested directly.
Three modes: a side question (answer from the transcript, never a tool), a step that ends
in tool results (write the answer from them, never another tool, so text inside a result
can never trigger a call), and a new request (pick one offered tool, or explain why not).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from agent.offline.answers import answer_results
from agent.offline.catalog import PAGE_HINTS, TOOLS
from agent.offline.intents import Intent, Request, parse_request
from agent.offline.results import clip, parse_result
from agent.offline.side import answer_side
from agent.offline.summary import is_summary_request, summarise_material
from agent.offline.transcript import (
    ToolExchange,
    context_of,
    exchanges,
    is_side_mode,
    last_user_text,
    pending_exchange,
    tool_schemas,
)

__all__ = ["PARSE_LIMIT", "Decision", "decide"]

PARSE_LIMIT = 4000  # characters of a request that are read; the rest is ignored

_EMPTY_PROMPT = ("Please type a question or a request, for example \"what can you do?\" or "
                 "\"list the dashboards\".")
# A tool missing on this page, and what this page offers instead.
_ALTERNATIVES = {
    "list_datasets": ("get_dashboard_datasets", "the datasets this dashboard uses (ask \"what "
                      "datasets does it use?\")"),
    "list_charts": ("get_dashboard_charts", "the charts on this dashboard (ask \"which charts "
                    "are on it?\")"),
    "list_dashboards": ("get_dataset_usage", "the charts and dashboards that use this dataset "
                        "(ask \"who uses this dataset?\")"),
}


@dataclass
class Decision:
    text: str = ""
    tool_calls: list[tuple[str, str]] = field(default_factory=list)  # (name, JSON arguments)


def _known_envs(ctx: dict[str, Any], history: list[ToolExchange]) -> list[str]:
    """Environment names the conversation knows: the page's, and any listed earlier."""
    names = [ctx["envId"]] if isinstance(ctx.get("envId"), str) else []
    for call in history:
        if call.name != "list_environments":
            continue
        data = parse_result(call.result).data
        for env in data.get("environments", []) if isinstance(data, dict) else []:
            if isinstance(env, dict) and isinstance(env.get("name"), str):
                names.append(env["name"])
    return names


def _object(intent: Intent) -> str:
    for kind in ("dashboard", "dataset"):
        if f"{kind}_id" in intent.args:
            return f" ({kind} #{intent.args[f'{kind}_id']})"
    return ""


# A capability no tool has (issue 13, item 6): say so, and the nearest thing there is.
_NEAREST = {
    "create_dashboard": "The nearest I can do: promote an existing dashboard to another "
                        "environment, or rename one",
    "create_chart": "The nearest I can do: list the charts, or those on a dashboard",
    "create_dataset": "The nearest I can do: list the datasets, or preview one's rows",
    "delete_chart": "The nearest I can do: list the charts and the dashboards they are on",
}


def _not_offered(intent: Intent, ctx: dict[str, Any], offered: dict[str, Any]) -> str:
    """Why the tool a request needs is missing: the role, or the page (and what is here)."""
    tool = intent.tool or ""
    fact = TOOLS.get(tool)
    if fact is None:
        verb, _, noun = tool.partition("_")
        nearest = _NEAREST.get(tool, "I can work with dashboards, datasets and promotions "
                                     "between environments")
        return (f"I can't {verb} a {noun}: no tool here does that, so I did nothing. "
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


def _unknown(text: str, offered: dict[str, Any]) -> str:
    actions = [TOOLS[name].action for name in offered if name in TOOLS and
               name != "show_capabilities"]
    listing = "; ".join(actions[:12]) if actions else "describe what I can do"
    return (f"I'm not sure what you mean by \"{clip(text, 80)}\". Here I can: {listing}. "
            "For example, ask \"what can you do?\".")


def _write_preamble(name: str, args: dict[str, Any]) -> str:
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


def _call(intent: Intent, schema: dict[str, Any]) -> Decision:
    """A tool call with only the arguments its schema declares, or a question if one is missing."""
    name = intent.tool or ""
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    args = {key: value for key, value in intent.args.items() if key in properties}
    missing = [key for key in schema.get("required") or [] if key not in args]
    if missing:
        needed, action = missing[0].replace("_", " "), name.replace("_", " ")
        return Decision(text=f"I need the {needed} to {action}. Please tell me, for example "
                        "\"dashboard 3\" or \"to staging\".")
    fact = TOOLS.get(name)
    text = _write_preamble(name, args) if fact and fact.risk != "read" else ""
    return Decision(text=text, tool_calls=[(name, json.dumps(args, sort_keys=True))])


def _respond(messages: list[dict[str, Any]], offered: dict[str, Any]) -> Decision:
    ctx = context_of(messages)
    raw = last_user_text(messages)
    text = raw.strip()
    if not text:
        return Decision(text=_EMPTY_PROMPT)
    note = ""
    if len(text) > PARSE_LIMIT:
        note = (f"Your message is long ({len(text):,} characters); I read only the first "
                f"{PARSE_LIMIT:,}. ")
        text = text[:PARSE_LIMIT]
    history = exchanges(messages)
    intent = parse_request(Request(text=text, context=ctx, history=history,
                                   known_envs=_known_envs(ctx, history)))
    if intent.tool is not None and intent.tool not in offered:
        return Decision(text=note + _not_offered(intent, ctx, offered))
    if intent.say is not None:
        return Decision(text=note + intent.say)
    if intent.tool is None:
        if note:
            return Decision(text=note + "I couldn't find a request in it; please send a short "
                            "question, for example \"list the dashboards\".")
        return Decision(text=_unknown(text, offered))
    decision = _call(intent, offered[intent.tool])
    decision.text = note + decision.text
    return decision


def decide(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Decision:
    """The offline model's whole reply to one request."""
    if is_summary_request(messages):  # folding older turns (agent/summarise.py)
        return Decision(text=summarise_material(messages))
    if is_side_mode(messages):
        return Decision(text=answer_side(messages))
    finished = pending_exchange(messages)
    if finished:
        return Decision(text=answer_results(finished, context_of(messages)))
    return _respond(messages, tool_schemas(tools))

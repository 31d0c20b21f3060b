"""Short natural-language answers written from tool results (lists, objects, errors, refusals).

Nothing in a result is ever obeyed: text from Superset is only quoted, clipped, as data.
"""

from __future__ import annotations

from typing import Any

from agent.offline.changes import migration_answer, recent_changes_answer, write_answer
from agent.offline.render import (
    SHOWN,
    describe_item,
    env_phrase,
    list_table,
    md_cell,
    md_text,
    object_ref,
    plural,
    summarize,
    upper_first,
)
from agent.offline.results import (
    Result,
    clip,
    count_of,
    items_of,
    owner_names,
    parse_result,
    title_of,
    unwrap,
)
from agent.offline.transcript import ToolExchange

__all__ = ["answer_results"]
_NOUNS = {"list_dashboards": "dashboard", "list_datasets": "dataset", "list_charts": "chart",
          "get_dashboard_charts": "chart", "get_dashboard_datasets": "dataset",
          "migration_history": "migration"}


def _list_answer(call: ToolExchange, result: Result, ctx: dict[str, Any]) -> str:
    noun = _NOUNS.get(call.name, "item")
    found = items_of(result.data, result.total)
    if found is None:
        return f"{call.name} returned: {summarize(result.data)}."
    items, total = found
    search = call.arguments.get("search")
    matching = f" matching '{clip(search, 40)}'" if search else ""
    where = env_phrase(call, ctx) if call.name != "migration_history" else ""
    if call.name.startswith("get_dashboard_"):
        subject = upper_first(object_ref("dashboard", call))
        if total == 0:
            return f"{subject}{where} has no {noun}s."
        head = f"{subject}{where} has {total} {plural(noun, total)}"
    elif total == 0:
        hint = " Try a shorter search term." if search else ""
        state = {True: "published ", False: "draft "}.get(call.arguments.get("published"), "")
        return f"No {state}{noun}s{matching}{where}.{hint}"
    elif call.name == "migration_history":
        head = f"The last {len(items)} {plural(noun, len(items))} (of {total})" if total > len(
            items) else f"{total} recent {plural(noun, total)}"
    else:
        state = {True: "published ", False: "draft "}.get(call.arguments.get("published"), "")
        head = f"Found {total} {state}{plural(noun, total)}{matching}{where}"
    if call.name == "migration_history":  # a short log: the newest, as sentences
        shown = items[:SHOWN]
        more = total - len(shown)
        lines = "\n".join(f"- {md_text(describe_item(item, noun))}" for item in shown)
        return f"{head}:\n\n{lines}" + (f"\n\n… and {more} older." if more > 0 else "")
    paging = unwrap(result.data) if isinstance(unwrap(result.data), dict) else {}
    page = next((p for p in (paging.get("page"), call.arguments.get("page"))
                 if isinstance(p, int) and p >= 0), 0)
    size = next((n for n in (paging.get("page_size"), call.arguments.get("page_size"))
                 if isinstance(n, int) and n > 0), max(len(items), 1))
    start = page * size
    rows = items[:_MAX_ROWS]
    end = start + len(rows)
    pages = call.name in ("list_dashboards", "list_datasets", "list_charts")
    footer = f"Showing {start + 1}–{end} of {total}." if rows else ""
    if end < total:
        footer += (" Say “next page” for more." if pages else
                   f" {total - end} more not shown.")
    return f"{head}:\n\n{list_table(rows, noun)}\n\n{footer}".rstrip()


_MAX_ROWS = 50  # a page of a listing (the tools page by 25): all of it, as a table


def _dashboard_answer(call: ToolExchange, result: Result, ctx: dict[str, Any]) -> str:
    obj = unwrap(result.data)
    if not isinstance(obj, dict):
        return f"Dashboard details: {summarize(obj)}."
    facts = []
    if isinstance(obj.get("published"), bool):
        facts.append("published" if obj["published"] else "draft (not published)")
    if obj.get("slug"):
        facts.append(f"slug '{clip(obj['slug'], 40)}'")
    owners = owner_names(obj.get("owners"))
    if owners:
        facts.append("owners: " + ", ".join(owners[:5]))
    charts = count_of(obj.get("charts")) if "charts" in obj else obj.get("chart_count")
    if isinstance(charts, int):
        facts.append(f"{charts} {plural('chart', charts)}")
    changed = (obj.get("changed") or obj.get("changed_on_delta_humanized")
               or obj.get("changed_on"))
    if changed:
        facts.append(f"last changed {clip(changed, 40)}")
    if obj.get("url"):
        facts.append(f"URL {clip(obj['url'], 80)}")
    body = "; ".join(facts) if facts else summarize(obj)
    return f"{upper_first(object_ref('dashboard', call, obj))}{env_phrase(call, ctx)}: {body}."


def _dataset_answer(call: ToolExchange, result: Result, ctx: dict[str, Any]) -> str:
    obj = unwrap(result.data)
    if not isinstance(obj, dict):
        return f"Dataset details: {summarize(obj)}."
    facts = []
    database = obj.get("database")
    db_name = database.get("database_name") if isinstance(database, dict) else database
    where = ", ".join(x for x in (f"schema {obj['schema']}" if obj.get("schema") else "",
                                  f"database {clip(db_name, 40)}" if db_name else "") if x)
    if where:
        facts.append(where)
    if obj.get("sql"):
        facts.append("virtual (SQL) dataset")
    for key, noun in (("columns", "column"), ("metrics", "metric")):
        count = count_of(obj.get(key))
        if count is not None:
            found = items_of({key: obj[key]})
            names = [title_of(c) for c in (found[0] if found else [])[:8] if title_of(c)]
            facts.append(f"{count} {plural(noun, count)}" + (
                f" ({', '.join(names)}{', …' if count > len(names) else ''})" if names else ""))
    if obj.get("cache_timeout") is not None:
        facts.append(f"cache timeout {obj['cache_timeout']} s")
    owners = owner_names(obj.get("owners"))
    if owners:
        facts.append("owners: " + ", ".join(owners[:5]))
    if obj.get("description"):
        facts.append(f"description: {clip(obj['description'], 100)}")
    body = "; ".join(facts) if facts else summarize(obj)
    return f"{upper_first(object_ref('dataset', call, obj))}{env_phrase(call, ctx)}: {body}."


def _usage_answer(call: ToolExchange, result: Result, ctx: dict[str, Any]) -> str:
    data = unwrap(result.data)
    subject = upper_first(object_ref("dataset", call)) + env_phrase(call, ctx)
    if not isinstance(data, dict):
        return f"{subject} usage: {summarize(data)}."
    parts = []
    for key, noun in (("charts", "chart"), ("dashboards", "dashboard")):
        found = items_of({key: data[key]}) if key in data else None
        if found is None:
            continue
        items, total = found
        names = ", ".join(describe_item(i) for i in items[:SHOWN])
        parts.append(f"{total} {plural(noun, total)}" + (f" ({names})" if names else ""))
    if not parts:
        return f"{subject} usage: {summarize(data)}."
    if all(part.startswith("0 ") for part in parts):
        return f"{subject} is not used by any chart or dashboard."
    return f"{subject} is used by " + " and ".join(parts) + "."


def _preview_answer(call: ToolExchange, result: Result, ctx: dict[str, Any]) -> str:
    data = unwrap(result.data)
    found = items_of(data, result.total)
    subject = object_ref("dataset", call) + env_phrase(call, ctx)
    if found is None:
        return f"Preview of {subject}: {summarize(data)}."
    rows, total = found
    if not rows and total == 0:
        return f"{upper_first(subject)} returned no rows."
    columns = data.get("colnames") or data.get("columns") if isinstance(data, dict) else None
    names = [str(title_of(c) or c or "?") for c in columns] if isinstance(columns, list) else []
    shown = rows[:_PREVIEW_ROWS]
    if not names:  # the column names from the rows themselves
        names = list(next((r for r in shown if isinstance(r, dict)), {}))
    names = names[:_PREVIEW_COLUMNS]
    grid: list[list[Any]] = []
    for row in shown:
        if isinstance(row, dict):
            grid.append([row.get(name) for name in names])
        elif isinstance(row, list):
            grid.append(row[:len(names)] if names else row[:_PREVIEW_COLUMNS])
        else:
            grid.append([row])
    width = max([len(names), 1] + [len(cells) for cells in grid])

    def line(cells: list[Any]) -> str:
        padded = list(cells) + [""] * (width - len(cells))
        return "| " + " | ".join(md_cell(v, 30) for v in padded) + " |"

    table = "\n".join([line(names), "|" + "---|" * width, *(line(cells) for cells in grid)])
    more = f" — first {len(shown)} shown" if total > len(shown) else ""
    return f"{total} {plural('row', total)} of {subject}{more}:\n\n{table}"


_PREVIEW_ROWS, _PREVIEW_COLUMNS = 10, 8


def _export_answer(call: ToolExchange, result: Result, ctx: dict[str, Any]) -> str:
    data = unwrap(result.data)
    subject = f"Exported {object_ref('dashboard', call)}{env_phrase(call, ctx)}"
    if not isinstance(data, dict):
        return f"{subject}: {summarize(data)}."
    parts = []
    files = data.get("files")
    if isinstance(files, list):
        parts.append(f"a bundle of {len(files)} files")
    counts = data.get("counts")
    if isinstance(counts, dict):
        parts.append(", ".join(f"{v} {k if v != 1 else k.rstrip('s')}" for k, v in counts.items()
                               if isinstance(v, int)))
    objects = [o for o in data.get("objects") or [] if isinstance(o, dict) and o.get("uuid")]
    shown = [o for o in objects if o.get("kind") == "dashboard"] or objects
    if shown:
        parts.append("uuids: " + ", ".join(
            f"{o.get('kind', 'object')} '{clip(o.get('name') or '?', 40)}' {o['uuid']}"
            for o in shown[:3]) + (f" (+{len(objects) - len(shown[:3])} more)"
                                  if len(objects) > len(shown[:3]) else ""))
    if isinstance(data.get("bytes"), int):
        parts.append(f"{data['bytes']:,} bytes")
    if not parts:
        parts.append(summarize(data, limit=6))
    return f"{subject}: {'; '.join(p for p in parts if p)}."


def _tool_name(name: Any) -> str:
    """Our own tool names as code; anything else (a result is data) escaped."""
    text = str(name or "")
    return f"`{text}`" if text.replace("_", "").isalnum() and text.isascii() else md_cell(text)


def _builtin_answer(call: ToolExchange, result: Result, ctx: dict[str, Any]) -> str:
    data = result.data if isinstance(result.data, dict) else {}
    if call.name == "list_environments":
        envs = data.get("environments")
        if not isinstance(envs, list):
            return f"Environments: {summarize(result.data)}."
        names = [f"{e.get('name')} ({e.get('tier')})" if isinstance(e, dict) else clip(e)
                 for e in envs]
        current = data.get("current") or ctx.get("envId")
        return (f"There {'is' if len(envs) == 1 else 'are'} {len(envs)} "
                f"{plural('environment', len(envs))}: {', '.join(names)}."
                + (f" You are working in {current}." if current else ""))
    tools = data.get("tools")
    if not isinstance(tools, list):
        return f"What I can do: {summarize(result.data)}."
    rows = [f"| {_tool_name(t.get('name'))} | {md_cell(t.get('description', ''), 300)} | "
            + ("yes" if t.get("risk") in ("write", "dangerous") else "no") + " |"
            for t in tools if isinstance(t, dict)]
    table = "\n".join(["| Tool | What it does | Asks for approval |", "|---|---|---|", *rows])
    role, env = data.get("role"), data.get("environment")
    where = ", ".join(x for x in (f"role {role}" if role else "", f"environment {env}" if env
                                  else "") if x)
    note = f"\n\n{clip(data['note'], 200)}" if data.get("note") else ""
    return f"Here{f' ({where})' if where else ''} I can:\n\n{table}{note}"


_WRITERS = {
    "show_capabilities": _builtin_answer, "list_environments": _builtin_answer,
    "get_dashboard": _dashboard_answer, "get_dataset": _dataset_answer,
    "get_dataset_usage": _usage_answer, "preview_dataset": _preview_answer,
    "export_dashboard": _export_answer, "compare_environments": migration_answer,
    "plan_migration": migration_answer, "recent_changes": recent_changes_answer,
    **{name: _list_answer for name in _NOUNS},
    **{name: write_answer for name in ("update_dashboard", "set_dashboard_published",
                                        "delete_dashboard", "refresh_dataset_columns",
                                        "update_dataset", "delete_dataset", "migrate_dashboard")},
}
_SUGGESTIONS = (
    (("not found", "404", "does not exist", "no such"), "Check the id — for example ask me to "
     "list the dashboards or datasets first."),
    (("unknown environment", "environment"), "Check the environment name — ask \"which "
     "environments are there?\"."),
    (("status unknown",), "Check Superset before trying again: the change may or may not have "
     "happened."),
    (("timed out", "timeout", "502", "503", "504", "unavailable", "connection"),
     "Superset may be slow or briefly unavailable; you can retry the call."),
    (("401", "403", "forbidden", "unauthori", "not allowed"), "Superset refused access for "
     "this account."),
    (("invalid arguments", "validation"), "Please rephrase with the exact id or value."),
    (("approval",), "Nothing was executed."),
)


def _problem_answer(call: ToolExchange, result: Result) -> str | None:
    if result.status == "denied":
        return (f"The call to {call.name} was refused: it is not available here for your role "
                "or page. Nothing was executed.")
    if result.status == "not_executed":
        return f"{call.name} did not run ({clip(result.text, 160)}). Nothing was changed."
    if result.status == "declined":
        return f"Understood — {call.name} was declined, so nothing was changed."
    if result.status == "pending":
        return f"{call.name} is waiting for your approval; nothing has been changed yet."
    if result.status != "error":
        return None
    message = clip(result.data, 300)
    lowered = message.lower()
    hint = next((tip for keys, tip in _SUGGESTIONS if any(k in lowered for k in keys)), "")
    return f"{call.name} failed: {message.rstrip('.')}.{f' {hint}' if hint else ''}"


def answer_results(calls: list[ToolExchange], ctx: dict[str, Any]) -> str:
    """One short paragraph per tool result of the latest step."""
    paragraphs = []
    for call in calls:
        result = parse_result(call.result)
        text = _problem_answer(call, result)
        if text is None:
            writer = _WRITERS.get(call.name)
            try:
                text = writer(call, result, ctx) if writer else (
                    f"{call.name} returned: {summarize(result.data)}.")
            except (AttributeError, KeyError, TypeError, ValueError):  # unexpected shapes
                text = f"{call.name} returned: {summarize(result.data)}."
        paragraphs.append(text)
    return "\n\n".join(paragraphs) if paragraphs else "I have no results to report."

"""Rendering pieces shared by answer writers: object references, list items, generic summaries.

Everything from Superset is clipped and quoted as data, never followed.
"""

from __future__ import annotations

from typing import Any

from agent.offline.results import clip, count_of, id_of, items_of, parse_result, title_of, unwrap
from agent.offline.transcript import ToolExchange

__all__ = [
    "SHOWN",
    "describe_item",
    "env_phrase",
    "list_table",
    "md_cell",
    "object_ref",
    "plural",
    "refs",
    "summarize",
    "upper_first",
]

SHOWN = 10


def upper_first(text: str) -> str:
    """Capitalise a sentence start without lowercasing the rest (titles keep their case)."""
    return text[:1].upper() + text[1:]


def plural(noun: str, count: int) -> str:
    return noun if count == 1 else f"{noun}s"


def env_phrase(call: ToolExchange, ctx: dict[str, Any]) -> str:
    """The environment a call ran in: its argument, else what the result says, else the page."""
    data = parse_result(call.result).data if call.result else None
    reported = data.get("env") if isinstance(data, dict) else None
    env = call.arguments.get("env_id") or (reported if isinstance(reported, str) else None) or (
        ctx.get("envId"))
    return f" in {clip(env, 64)}" if env else ""


def object_ref(kind: str, call: ToolExchange, obj: Any = None) -> str:
    """"dashboard #3 'Sales'" from the call's arguments and, when known, the object's title."""
    ident = call.arguments.get(f"{kind}_id") or id_of(obj)
    title = title_of(obj) if isinstance(obj, dict) else None
    return f"{kind} #{ident}" + (f" '{title}'" if title else "") if ident else f"the {kind}"


def describe_item(item: Any, noun: str = "") -> str:
    if not isinstance(item, dict):
        return clip(item, 80)
    if noun == "migration" or {"source_env", "target_env"} <= set(item):
        title = f" '{clip(item['dashboard_title'], 40)}'" if item.get("dashboard_title") else ""
        parts = [f"dashboard #{item.get('dashboard_id', '?')}{title}",
                 f"{item.get('source_env', '?')} → {item.get('target_env', '?')}"]
        status = item.get("status") or item.get("outcome")
        when = item.get("created_at") or item.get("finished_at") or item.get("at") or item.get(
            "timestamp")
        who = item.get("user") or item.get("user_id") or item.get("actor")
        parts += [clip(x, 40) for x in (status, when) if x]
        return " ".join(parts[:2]) + (f" ({', '.join(parts[2:])})" if parts[2:] else "") + (
            f" by {clip(who, 30)}" if who else "")
    ident, title = id_of(item), title_of(item)
    text = " ".join(x for x in (f"#{ident}" if ident is not None else "",
                                f"'{title}'" if title else "") if x) or clip(item, 80)
    extra = []
    if isinstance(item.get("published"), bool):
        extra.append("published" if item["published"] else "draft")
    for key in ("viz_type", "schema", "tier", "kind", "status"):
        if isinstance(item.get(key), str) and item[key]:
            extra.append(clip(item[key], 30))
    return text + (f" ({', '.join(extra[:2])})" if extra else "")


_MD_SPECIAL = str.maketrans({c: f"\\{c}" for c in "\\`*_[]<>|#!()~"})
_COLUMNS = {  # noun: (header, how to read the cell) after the id column
    "dashboard": (("Title", lambda i: title_of(i)),
                  ("Status", lambda i: ("published" if i.get("published") else "draft")
                   if isinstance(i.get("published"), bool) else "")),
    "dataset": (("Name", lambda i: title_of(i)), ("Schema", lambda i: i.get("schema") or ""),
                ("Database", lambda i: (i.get("database") or {}).get("database_name", "")
                 if isinstance(i.get("database"), dict) else i.get("database") or "")),
    "chart": (("Name", lambda i: title_of(i)), ("Type", lambda i: i.get("viz_type") or "")),
}


def md_cell(value: Any, limit: int = 50) -> str:
    """One Markdown table cell: clipped, on one line, every Markdown character escaped (a
    title from Superset is data: it must not become a link, a column or an image)."""
    text = " ".join(str(clip(value, limit) if value not in (None, "") else "").split())
    return text.translate(_MD_SPECIAL) or " "


_MD_INLINE = str.maketrans({c: f"\\{c}" for c in "\\`*_[]<>!"})


def md_text(value: Any, limit: int = 160) -> str:
    """A line of data inside prose (a bullet): clipped, links, images, emphasis and HTML
    escaped; `#` and parentheses stay as they are (harmless mid-line)."""
    return " ".join(str(clip(value, limit)).split()).translate(_MD_INLINE)


def list_table(items: list[Any], noun: str) -> str:
    """A Markdown table of listed objects (ids first), or bullets for unknown shapes."""
    columns = _COLUMNS.get(noun)
    dicts = [item for item in items if isinstance(item, dict)]
    if columns is None or len(dicts) != len(items):
        return "\n".join(f"- {md_text(describe_item(item, noun), 120)}" for item in items)
    head = "| # | " + " | ".join(name for name, _ in columns) + " |"
    rule = "|---:|" + "---|" * len(columns)
    rows = [f"| {md_cell(id_of(item))} | " + " | ".join(md_cell(read(item))
                                                       for _, read in columns) + " |"
            for item in dicts]
    return "\n".join([head, rule, *rows])


def _short(value: Any) -> str:
    count = count_of(value) if not isinstance(value, (int, float)) else None
    return str(count) if count is not None else clip(value, 30)


_QUIET = frozenset({"env", "page", "page_size", "source_env", "target_env", "dashboard_id",
                    "dataset_id"})


def summarize(data: Any, limit: int = 10) -> str:
    """A generic, bounded summary of an unknown shape: counts of lists, short scalar values."""
    data = unwrap(data)
    if isinstance(data, dict):
        data = {k: v for k, v in data.items() if k not in _QUIET}
    if isinstance(data, list) or (isinstance(data, dict) and isinstance(data.get("result"), list)):
        items, total = items_of(data) or ([], 0)
        return f"{total} items" + (": " + "; ".join(describe_item(i) for i in items[:5])
                                   if items else "")
    if not isinstance(data, dict):
        return clip(data, 300)
    parts = []
    for key, value in list(data.items())[:limit]:
        label = key.replace("_", " ")
        count = count_of(value) if not isinstance(value, (int, float)) else None
        if isinstance(value, bool):
            parts.append(f"{label}: {'yes' if value else 'no'}")
        elif count is not None:
            found = items_of(value)
            names = [describe_item(i) for i in (found[0] if found else [])[:5]]
            parts.append(f"{label}: {count}" + (f" ({', '.join(names)})" if names else ""))
        elif isinstance(value, dict):
            inner = ", ".join(f"{k.replace('_', ' ')} {_short(v)}" for k, v in
                              list(value.items())[:5])
            parts.append(f"{label}: {inner}")
        elif value is not None and value != "":
            parts.append(f"{label}: {clip(value, 60)}")
    return "; ".join(parts) if parts else "no details"


def refs(value: Any) -> str:
    """"3 (chart 'A', dataset 'B', …)" for a list of bundle references."""
    found = items_of(value) if isinstance(value, list) else None
    if not found or not found[1]:
        return "0"
    names = ", ".join(f"{i.get('kind', '')} '{clip(i.get('name') or '?', 40)}'".strip()
                      if isinstance(i, dict) else clip(i, 40) for i in found[0][:5])
    more = f", +{found[1] - 5} more" if found[1] > 5 else ""
    return f"{found[1]} ({names}{more})"

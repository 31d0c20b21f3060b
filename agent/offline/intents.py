"""What a request asks for: the tool a good model would pick and the arguments it would fill.

`parse_request` knows nothing of which tools are offered; the brain checks that afterwards
and explains what is missing. Ids and environments come from the message first, then the
page context, then the most recent call in the conversation ("it" after "dashboard 5").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from agent.offline import extract as ex
from agent.offline.transcript import ToolExchange

__all__ = ["Intent", "Request", "parse_request"]

_LIST_TOOLS = ("list_dashboards", "list_datasets", "list_charts")


@dataclass
class Request:
    """Everything parsing needs: the text, the page context and the earlier tool calls."""

    text: str
    context: dict[str, Any] = field(default_factory=dict)
    history: list[ToolExchange] = field(default_factory=list)
    known_envs: list[str] = field(default_factory=list)


@dataclass
class Intent:
    tool: str | None = None
    args: dict[str, Any] = field(default_factory=dict)
    say: str | None = None  # a reply instead of a call (a question back, a greeting)
    kind: str | None = None  # dashboard | dataset | chart: the object the request is about


def _has(pattern: str, text: str) -> bool:
    return re.search(pattern, text, re.IGNORECASE) is not None


_CAPABILITIES = (r"what (?:else )?can (?:you|i|we) do|capabilit|what (?:tools|commands)|which tools"
                 r"|what are you able|how (?:can|do) you help|what do you do|who are you"
                 r"|^\s*(?:help|\?|/help)\s*[.!?]*\s*$|how does this work|what can i ask")
_GREETING = r"^\s*(?:hi|hello|hey|good (?:morning|afternoon|evening))\b[\s!.]*$"
_THANKS = r"^\s*(?:thanks|thank you|thx|cheers|great|ok|okay)\b[\w\s!.,]{0,20}$"
_HISTORY = (r"\bmigrated\b|\bpromot\w* (?:lately|recently)|(?:did|have) (?:we|you|i|they) "
            r"(?:promote|migrate)|migration(?:s)? (?:history|log)"
            r"|history|(?:recent|past|previous|last|latest) (?:\d+ )?(?:migrations|promotions)")
_PLAN = (r"what (?:would|will|could) (?:happen|change|be (?:created|overwritten))"
         r"|dry[- ]?run|\bplan\b"
         r"|simulat|impact of|preview (?:the |a )?(?:migration|promotion)|(?:would|if i) .*"
         r"(?:promot|migrat|deploy|copy|push|move)")
_COMPARE = r"\bcompar|\bdiff\b|\bdiffer|\bvs\.?\b|versus|in sync|out of sync|\bdrift"
_MIGRATE = (r"\bpromot|\bmigrat|\bdeploy|\b(?:copy|move|push|ship|release)\b.*\b(?:to|into)\b")
_OBJECT_NOUN = r"dashboard|dataset|chart|table|migrat|promot|compar"
_DELETE = r"\b(?:delete|remove|drop|destroy|trash|erase|get rid of)\b"
# "create (a new) dashboard", "make/add/build a new chart"; never "make dashboard 3 public"
_CREATE = (r"\b(?:create(?:\s+me)?(?:\s+(?:a|an|another))?|(?:make|build|add|set up|start)"
           r"(?:\s+me)?\s+(?:a|an|another|new))(?:\s+(?:new|fresh|blank|empty))?\s+"
           r"(dashboard|chart|dataset)\b")
_UNPUBLISH = (r"\bunpublish|\bmake (?:it|this)(?: dashboard)? (?:a )?(?:draft|private|hidden)"
              r"|(?:set|mark|turn) (?:it |this )?(?:back )?(?:to|as|into) (?:a )?draft|\bhide\b")
_PUBLISH = (r"\bpublish\b|\bmake (?:it|this)(?: dashboard)? (?:public|published|live|visible)"
            r"|(?:set|mark) (?:it |this )?(?:as |to )?published")
_QUESTION = r"^\s*(?:is|was|are|were|has|have|when|who|why|does|did)\b"
_REFRESH = r"\b(?:refresh|re-?sync|sync|reload|rescan|re-?read|update the columns)"
_RENAME = (r"\b(?:rename|retitle|re-title)\b|(?:change|set|update) (?:the |its )?(?:title|name)"
           r"|\bcall it\b|new (?:title|name)")
_EXPORT = r"\b(?:export|download|bundle|zip|back ?up)\b"
_USAGE = (r"who uses|\bused (?:by|in|on|where|anywhere)|\busage\b|where is (?:it|this)[\w ]* used"
          r"|(?:charts|dashboards)(?: \w+)? (?:use|using|rely|depend|reference)|depend(?:s|ing)? on"
          r"|what uses|\bimpact\b|related objects|downstream|\bin use\b")
_PREVIEW = (r"\b(?:rows?|preview|sample|peek|records|first \d+|top \d+|some data|the data"
            r"|data look|contents?)\b")
_CHARTS = r"\b(?:charts?|slices?|visuali[sz]ations?|graphs?|widgets?)\b"
_ALL = r"\ball\b|\bevery\b|\bacross\b|\bwhole\b|\bentire\b"
_DATASETS = r"\b(?:datasets?|tables?|data ?sources?|sources)\b"
_DASH_REF = (r"\b(?:use|uses|using|used|on it|on this|behind|feeds?|powers?|its|this dashboard"
             r"|does it|in it|for it|underlying|dashboard\s*#?\s*\d+)\b")
_DESCRIBE = (r"tell me (?:more )?about|describe|\bdetails?\b|\binfo\b|information"
             r"|what is (?:this|it)"
             r"|overview|summar|show (?:me )?(?:it|this)\b|\bcolumns?\b|\bschema\b|\bfields?\b"
             r"|\bmetrics?\b|\bowners?\b|who owns|\btitle\b|published|\bslug\b|when was"
             r"|last (?:changed|modified|updated)|look like|about (?:it|this)|what's (?:this|it)")
_NEXT_PAGE = r"\bnext page\b|\bshow more\b|\bmore results\b|\bpage (\d{1,4})\b|^\s*more\s*[.!?]*$"


def _kind(req: Request) -> str | None:
    """The object the request is about: the first object noun in it, else the page's type."""
    text = ex.strip_quotes(req.text).lower()
    positions = {kind: m.start() for kind, pat in (("dashboard", r"\bdashboards?\b"),
                                                  ("dataset", r"\b(?:datasets?|tables?)\b"))
                 if (m := re.search(pat, text))}
    if positions:
        return min(positions, key=positions.__getitem__)
    page = req.context.get("objectType")
    if page == "migration":
        return "dashboard"
    if page in ("dashboard", "dataset"):
        return page
    for call in reversed(req.history):  # "it" after a call about dashboard 5
        for kind in ("dashboard", "dataset"):
            if f"{kind}_id" in call.arguments:
                return kind
    return None


def _object_id(req: Request, kind: str) -> int | None:
    other = "dataset" if kind == "dashboard" else "dashboard"
    generic = ex.object_id(req.text, other, generic=False) is None
    found = ex.object_id(req.text, kind, generic=generic)
    if found is not None:
        return found
    page, page_id = req.context.get("objectType"), req.context.get("objectId")
    if isinstance(page_id, int) and (page == kind or (page == "migration" and kind == "dashboard")):
        return page_id
    key = f"{kind}_id"
    for call in reversed(req.history):
        value = call.arguments.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _env_args(req: Request) -> dict[str, Any]:
    envs = ex.env_mentions(req.text, req.known_envs)
    return {"env_id": envs[0]} if envs else {}


def _preceding_word(text: str, env: str) -> str:
    match = re.search(rf"(\w+)\s+(?:the\s+)?{re.escape(env)}(?![\w-])", text, re.IGNORECASE)
    return match.group(1).lower() if match else ""


def _env_pair(req: Request) -> tuple[str | None, str | None]:
    """(source, target) of a migration or comparison: "from A to B", "between A and B", "to B"."""
    text = ex.strip_quotes(req.text)
    envs = ex.env_mentions(text, req.known_envs)
    source = next((e for e in envs if _preceding_word(text, e) == "from"), None)
    target = next((e for e in envs if _preceding_word(text, e) in ("to", "into", "onto")), None)
    rest = [e for e in envs if e not in (source, target)]
    if source is None and target is None and len(rest) >= 2:
        return rest[0], rest[1]
    if target is None and rest:
        target = rest.pop(0)
    if source is None and rest:
        source = rest.pop(0)
    if source is None and target is not None:
        for default in (req.context.get("envId"), ex.DEFAULT_ENVS[0]):
            if isinstance(default, str) and default != target:
                source = default
                break
    return source, target


def _needs_id(kind: str, tool: str, req: Request, **args: Any) -> Intent:
    found = _object_id(req, kind)
    if found is None:
        return Intent(say=f"Which {kind}? Tell me its id, for example \"{kind} 3\", or ask me to "
                      f"list the {kind}s first.", kind=kind, tool=tool)
    return Intent(tool=tool, args={f"{kind}_id": found, **args, **_env_args(req)}, kind=kind)


def _migration(tool: str, req: Request) -> Intent:
    dashboard = _object_id(req, "dashboard")
    source, target = _env_pair(req)
    if dashboard is None:
        return Intent(tool=tool, kind="dashboard", say="Which dashboard? Give me its id, for "
                      "example \"promote dashboard 3 from ss-dev to staging\".")
    if target is None or source is None:
        return Intent(tool=tool, kind="dashboard", say=f"Between which environments? For example "
                      f"\"dashboard {dashboard} from ss-dev to staging\".")
    return Intent(tool=tool, kind="dashboard",
                  args={"dashboard_id": dashboard, "source_env": source, "target_env": target})


def _history(req: Request) -> Intent:
    args: dict[str, Any] = {}
    limit = re.search(r"\b(?:last|latest|recent|past)\s+(\d{1,3})\b", req.text, re.IGNORECASE)
    if limit:
        args["limit"] = max(1, min(100, int(limit.group(1))))
    dashboard = ex.object_id(req.text, "dashboard", generic=True)
    if dashboard is not None:
        args["dashboard_id"] = dashboard
    return Intent(tool="migration_history", args=args, kind="dashboard")


def _after_to(text: str) -> str | None:
    """The new value in "rename it to X" / "call it X" / "set the description to X"."""
    found = ex.quoted(text)
    if found:
        return found[0]
    match = re.search(r"\b(?:to|as|call it|into)\s+(.+?)\s*[.!?]*\s*$", text, re.IGNORECASE)
    return match.group(1).strip() if match else None


def _update(req: Request, kind: str | None) -> Intent | None:
    text = req.text
    lowered = text.lower()
    args: dict[str, Any] = {}
    if kind != "dashboard" and (seconds := ex.cache_seconds(text)) is not None:
        return _needs_id("dataset", "update_dataset", req, cache_timeout=seconds)
    if _has(_RENAME, lowered):
        kind = kind or "dashboard"
        if kind == "dataset":
            return Intent(tool="update_dataset", kind="dataset", say="Datasets can't be renamed "
                          "here; I can change a dataset's description, cache timeout and owners.")
        args["title"] = (_after_to(text) or "")[:500]
    elif _has(r"\bdescription\b", lowered) and _has(r"\b(?:set|change|update|make)\b", lowered):
        args["description"] = (_after_to(text) or "")[:2000]
    elif _has(r"\bslug\b", lowered) and _has(r"\b(?:set|change|update|make)\b", lowered):
        value = _after_to(text)
        args["slug"] = re.sub(r"[^A-Za-z0-9_-]+", "-", value).strip("-") if value else None
    elif _has(r"\bowners?\b", lowered) and _has(r"\b(?:set|change|make|assign|transfer|update)\b",
                                                lowered):
        args["owners"] = ex.owner_ids(text)
    else:
        return None
    tool = "update_dataset" if kind == "dataset" else "update_dashboard"
    kind = kind or "dashboard"
    missing = [key for key, value in args.items() if not value and value != 0]
    if missing:
        return Intent(tool=tool, kind=kind, say=f"What should the new {missing[0]} be? Put it in "
                      "quotes, for example: rename it to \"Revenue 2026\".")
    values = [v for v in args.values() if isinstance(v, str)]
    if values:  # the new value is not an environment or an id: "rename it to prod-report"
        req = Request(text=text.replace(values[0], " "), context=req.context,
                      history=req.history, known_envs=req.known_envs)
    return _needs_id(kind, tool, req, **args)


CHAT_PAGE_SIZE = 10  # rows per listing answer: a table that fits the chat ("next page" on)


def _list(req: Request, tool: str) -> Intent:
    args: dict[str, Any] = {**_env_args(req), "page_size": CHAT_PAGE_SIZE}
    term = ex.search_term(req.text)
    if term:
        args["search"] = term
    size = re.search(r"\b(?:first|top)\s+(\d{1,3})\b", req.text, re.IGNORECASE)
    if size:
        args["page_size"] = max(1, min(100, int(size.group(1))))
    if tool == "list_dashboards":  # the tool filters by published state: use it
        if _has(r"\b(?:unpublished|drafts?|not published|hidden)\b", req.text):
            args["published"] = False
        elif _has(r"\b(?:published|public|live)\b", req.text):
            args["published"] = True
    return Intent(tool=tool, args=args, kind=tool.removeprefix("list_").rstrip("s"))


def _next_page(req: Request) -> Intent | None:
    match = re.search(_NEXT_PAGE, req.text, re.IGNORECASE)
    last = next((c for c in reversed(req.history) if c.name in _LIST_TOOLS), None)
    if not match or last is None:
        return None
    page = int(match.group(1)) - 1 if match.group(1) else int(last.arguments.get("page") or 0) + 1
    return Intent(tool=last.name, args={**last.arguments, "page": max(0, page)})


def _by_name(req: Request, kind: str, tool: str) -> Intent:
    """A describe request that names no id: look it up by name, else ask for the id."""
    if _object_id(req, kind) is None:
        name = ex.quoted(req.text) or re.findall(
            rf"\bthe\s+([\w&'-]+(?:\s+[\w&'-]+){{0,3}})\s+{kind}\b", req.text, re.IGNORECASE)
        if name and name[0].lower() not in ("this", "that", "current"):
            return Intent(tool=f"list_{kind}s", args={"search": name[0], **_env_args(req)},
                          kind=kind)
    return _needs_id(kind, tool, req)


def _objects(req: Request, t: str) -> Intent | None:
    """Requests about dashboards, datasets and charts (reads and writes)."""
    kind = _kind(req)
    created = re.search(_CREATE, t, re.IGNORECASE)
    if created:  # no tool creates objects: a refusal, never a search in its place
        noun = created.group(1).lower()
        return Intent(tool=f"create_{noun}", kind=noun)
    if _has(_DELETE, t):
        if _has(r"\bcharts?\b", t) and not _has(r"dashboard|dataset", t):
            return Intent(tool="delete_chart", kind="chart")
        kind = kind or "dashboard"
        return _needs_id(kind, f"delete_{kind}", req)
    if _has(r"\b(?:unpublished|published|drafts?|public)\s+dashboards\b", t):
        return _list(req, "list_dashboards")  # "show me unpublished dashboards": a listing
    if not _has(_QUESTION, t):
        if _has(_UNPUBLISH, t):
            return _needs_id("dashboard", "set_dashboard_published", req, published=False)
        if _has(_PUBLISH, t):
            return _needs_id("dashboard", "set_dashboard_published", req, published=True)
        if _has(_REFRESH, t) and (kind == "dataset" or _has(r"column|metadata|schema", t)):
            return _needs_id("dataset", "refresh_dataset_columns", req)
        update = _update(req, kind)
        if update is not None:
            return update
    if _has(_EXPORT, t):
        return _needs_id("dashboard", "export_dashboard", req)
    on_dataset = req.context.get("objectType") == "dataset" and not _has(r"dashboard\s*#?\d", t)
    if _has(_USAGE, t) and (kind == "dataset" or on_dataset):
        return _needs_id("dataset", "get_dataset_usage", req)
    if kind == "dataset" and _has(_PREVIEW, t) and not _has(r"\b(?:list|all)\b", t):
        limit = ex.row_limit(req.text)
        return _needs_id("dataset", "preview_dataset", req, **({"limit": limit} if limit else {}))
    dashboard_ref = ex.object_id(req.text, "dashboard", generic=False) is not None or (
        req.context.get("objectType") == "dashboard" and kind == "dashboard") or (
        req.context.get("objectType") == "dashboard" and ex.object_id(req.text, "dataset") is None
    ) or (kind == "dashboard" and _has(r"\b(?:it|its|this|that|them)\b", t)
          and _object_id(req, "dashboard") is not None)
    if _has(_CHARTS, t) or (dashboard_ref and _has(r"what(?:'s| is) on (?:it|this)", t)):
        if dashboard_ref and not _has(_ALL, t):
            return _needs_id("dashboard", "get_dashboard_charts", req)
        if not _has(r"\b(?:dashboards|datasets)\b", t):
            return _list(req, "list_charts")
    if _has(_DATASETS, t) and dashboard_ref and _has(_DASH_REF, t) and not _has(_ALL, t):
        return _needs_id("dashboard", "get_dashboard_datasets", req)
    if kind and _has(_DESCRIBE, t) and not _has(r"\b(?:dashboards|datasets)\b", t):
        return _by_name(req, kind, f"get_{kind}")
    for noun, tool in ((r"\bdashboards?\b", "list_dashboards"), (_DATASETS, "list_datasets")):
        if _has(noun, t) and ex.object_id(req.text, tool[5:-1], generic=False) is None:
            return _list(req, tool)
    if kind and _object_id(req, kind) is not None and ex.object_id(req.text, kind) is not None:
        return _needs_id(kind, f"get_{kind}", req)
    return None


def parse_request(req: Request) -> Intent:
    """The most likely intent of one request; `Intent()` (no tool, no text) when unknown."""
    t = req.text.lower()
    if _has(_CAPABILITIES, t):
        return Intent(tool="show_capabilities")
    if _has(_GREETING, t):
        return Intent(say="Hello! Ask me about dashboards, datasets, charts or promotions — "
                      "for example \"list the dashboards\" or \"what can you do?\".")
    if _has(_THANKS, t):
        return Intent(say="You're welcome! Ask me anything else about your dashboards, datasets "
                      "or promotions.")
    if (paged := _next_page(req)) is not None:
        return paged
    if _has(_HISTORY, t) and not _has(r"\bwould\b|\bif i\b", t):
        return _history(req)
    if _has(_PLAN, t) and _has(r"promot|migrat|deploy|copy|push|move|plan|dry", t):
        return _migration("plan_migration", req)
    if _has(_COMPARE, t) and (_has(r"dashboard|env|between|\bvs\b|versus", t)
                              or req.context.get("objectType") == "migration"):
        return _migration("compare_environments", req)
    if _has(_MIGRATE, t):
        return _migration("migrate_dashboard", req)
    if _has(r"\b(?:environments?|envs?)\b", t) and not _has(_OBJECT_NOUN, t):
        return Intent(tool="list_environments")
    return _objects(req, t) or Intent()

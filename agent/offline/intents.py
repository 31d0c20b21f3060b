"""What one request (or one part of a compound request) asks for: the intent table scored
against the words, then the winner's slots filled.

`parse_request` knows nothing of which tools are offered; the brain checks that afterwards
and explains what is missing. Ids come from the message first, then a name to look up,
then the last object mentioned or listed ("it"), then the page context.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any

from agent.offline import extract as ex
from agent.offline import slots
from agent.offline.refer import LISTING_KIND, last_listing, mentioned
from agent.offline.table import CHAT, CREATE, INTENTS, IntentSpec
from agent.offline.transcript import ToolExchange

__all__ = ["CHAT_PAGE_SIZE", "Intent", "Request", "parse_request", "score"]

CHAT_PAGE_SIZE = 10  # rows per listing answer: a table that fits the chat ("next page" on)
_ALL = r"\b(?:all|every|any|exist|available|there)\b"
_RISK_ORDER = {"read": 0, "write": 1, "dangerous": 2}
_SAY = {
    "greet": "Hello! Ask me about dashboards, datasets, charts or promotions — for example "
             "\"list the dashboards\" or \"what can you do?\".",
    "thanks": "You're welcome — glad to help. Ask me anytime.",
}


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
    ids: list[int] = field(default_factory=list)  # several objects: one call each
    lookup: str | None = None  # a name to resolve by a search before the call
    missing: str | None = None  # the required slot nobody gave (the question asks for it)
    note: str | None = None  # a filter asked for that the tool does not have: said, not ignored


@functools.cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


def _has(pattern: str, text: str) -> bool:
    """Whether `pattern` occurs in `text`, ignoring case. Compiled once per pattern: every
    model call scores the whole intent table (about 190 searches), and `re.search`'s own
    cache lookup and flag checks per search were a sixth of the parse (a request's
    `decide`, best of 40 batches: 0.263 -> 0.221 ms)."""
    return _compiled(pattern).search(text) is not None


def _page_kind(ctx: dict[str, Any]) -> str | None:
    page = ctx.get("objectType")
    return "dashboard" if page == "migration" else page if page in ("dashboard", "dataset") \
        else None


def _risk(spec: IntentSpec) -> int:
    from agent.offline.catalog import TOOLS

    fact = TOOLS.get(spec.tool or "")
    return _RISK_ORDER.get(fact.risk, 3) if fact else 3


def score(spec: IntentSpec, text: str, req: Request) -> int:
    """How well one row fits the words: 0 when it does not fit at all."""
    plain = ex.strip_quotes(text)
    if any(_has(p, plain) for p in spec.avoid) or (
            spec.tool is not None and _has(CREATE, plain)):
        return 0
    triggers = sum(1 for p in spec.triggers if _has(p, plain))
    weak = any(_has(p, plain) for p in spec.weak)
    if not triggers and not weak:
        return 0
    value = 4 * min(triggers, 2) + 2 * weak + min(2, sum(1 for p in spec.cues if _has(p, plain)))
    if spec.name == "next_page" and last_listing(req.history) is not None:
        value += 4  # "more" right after a listing
    named = slots.kind_nouns(plain)
    page = _page_kind(req.context)
    if spec.kind is not None:
        if spec.kind in named:
            value += 2
        elif not named:
            around = page or (mentioned(req.history, None) or (None,))[0]
            value += 1 if around == spec.kind else -2 if around else 0
        if page == spec.kind and "object" in spec.required and not _has(_ALL, plain):
            value += 2  # on an object's page a request is about that object unless it says all
        if spec.kind in ("dashboard", "dataset") and slots.object_ids(plain, spec.kind):
            value += 2 if "object" in spec.required else 0
    return value


def _best(text: str, req: Request) -> IntentSpec | None:
    scored = [(score(spec, text, req), spec) for spec in INTENTS]
    scored = [(value, spec) for value, spec in scored if value > 0]
    if not scored:
        return None
    # The best score wins; on a tie the safer action (a read before a write), then the name.
    return min(scored, key=lambda item: (-item[0], _risk(item[1]), item[1].name))[1]


def _chat(text: str) -> str | None:
    for act, pattern in CHAT.items():
        if _has(pattern, text):
            return _SAY[act]
    return None


def _object(req: Request, text: str, kind: str) -> tuple[list[int], str | None]:
    """(ids, name to look up) of the object a clause acts on."""
    found = slots.object_ids(text, kind)
    if found:
        return found, None
    name = slots.object_name(text, kind)
    if name:
        return [], name
    other = [k for k in ("dashboard", "dataset") if k != kind and slots.object_ids(text, k)]
    generic = ex.object_id(text, kind, generic=not other)
    if generic is not None:
        return [generic], None
    page_kind, page_id = _page_kind(req.context), req.context.get("objectId")
    on_page = page_kind == kind and isinstance(page_id, int) and not isinstance(page_id, bool)
    if on_page and _has(r"\bthis (?:one|dashboard|dataset|table)\b|\bhere\b", text):
        return [page_id], None
    known = mentioned(req.history, kind)
    if known is not None:
        return [known[1]], None
    return ([page_id] if on_page else []), None


def _env_args(req: Request, text: str) -> dict[str, Any]:
    envs = ex.env_mentions(text, req.known_envs)
    return {"env_id": envs[0]} if envs else {}


def _preceding_word(text: str, env: str) -> str:
    match = re.search(rf"(\w+)\s+(?:the\s+)?{re.escape(env)}(?![\w-])", text, re.IGNORECASE)
    return match.group(1).lower() if match else ""


def env_pair(req: Request, text: str) -> tuple[str | None, str | None]:
    """(source, target): "from A to B", "between A and B", "A vs B", or "to B" from the page's."""
    plain = ex.strip_quotes(text)
    envs = ex.env_mentions(plain, req.known_envs)
    source = next((e for e in envs if _preceding_word(plain, e) == "from"), None)
    target = next((e for e in envs if _preceding_word(plain, e) in ("to", "into", "onto")), None)
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


def _changes(spec: IntentSpec, text: str) -> dict[str, Any]:
    """The new values of an update: title, slug, owners, description or cache timeout."""
    if spec.name == "update_dataset":
        seconds = slots.duration_seconds(text)
        if seconds is not None and _has(r"\bcach", text):
            return {"cache_timeout": seconds}
    if _has(r"\bdescription\b", text):
        return {"description": (slots.new_value(text) or "")[:2000]}
    if spec.name == "update_dashboard" and _has(r"\bslug\b", text):
        value = slots.new_value(text)
        return {"slug": re.sub(r"[^A-Za-z0-9_-]+", "-", value).strip("-") if value else ""}
    if _has(r"\bowners?\b|\bownership\b", text):
        return {"owners": ex.owner_ids(text) or []}
    if spec.name == "update_dashboard":
        return {"title": slots.new_value(text) or ""}
    return {}


def _listing(spec: IntentSpec, req: Request, text: str) -> dict[str, Any]:
    args: dict[str, Any] = {**_env_args(req, text), "page_size": CHAT_PAGE_SIZE}
    term = ex.search_term(text)
    if term and not _has(r"^(?:published|drafts?|live|public|unpublished|ones)$", term):
        args["search"] = term
    size = re.search(r"\b(?:first|top)\s+(\d{1,3})\b", text, re.IGNORECASE)
    if size:
        args["page_size"] = max(1, min(100, int(size.group(1))))
    if spec.name == "list_dashboards" and _has(r"\b(?:published|drafts?|unpublished|live|public"
                                               r"|hidden|private)\b", text):
        args["published"] = slots.published_flag(text)
    return {k: v for k, v in args.items() if v is not None}


# Filters people ask for that no listing tool supports (the tools filter by title, published
# state and page): the answer says so instead of silently listing everything.
_UNSUPPORTED = (
    (r"\b(?:owned by|owner is|whose owner|created by|made by|built by|belonging to)\b",
     "owner"),
    (r"\b(?:changed|modified|updated|created|edited|added)\s+(?:since|after|before|in the last"
     r"|last (?:week|month|year)|this (?:week|month|year)|yesterday|today|recently)\b", "date"),
    (r"\b(?:sort(?:ed)?|order(?:ed)?) by\b|\b(?:newest|oldest|alphabetical)", "sort order"),
    (r"\btag(?:ged|s)?\b", "tag"), (r"\bcertified\b", "certification"),
    (r"\b(?:of type|viz(?:ualization)? type|chart type)\b", "chart type"),
)


def _unsupported(tool: str, text: str) -> str | None:
    found = [what for pattern, what in _UNSUPPORTED if _has(pattern, text)]
    if not found:
        return None
    return (f"Note: {tool} cannot filter by {' or '.join(found)}, so this list is not "
            "filtered by it (it filters by title, published state and page).")


def _next_page(req: Request, text: str) -> Intent:
    last = last_listing(req.history)
    if last is None:
        return Intent(say="There is no earlier list to continue: ask me to list dashboards, "
                      "datasets or charts first.")
    page = re.search(r"\bpage (\d{1,4})\b", text, re.IGNORECASE)
    number = int(page.group(1)) - 1 if page else int(last.arguments.get("page") or 0) + 1
    return Intent(tool=last.name, args={**last.arguments, "page": max(0, number)},
                  kind=LISTING_KIND[last.name])


def _fill(spec: IntentSpec, req: Request, text: str, prior: Intent | None) -> Intent:
    kind, tool = spec.kind, spec.tool
    intent = Intent(tool=tool, kind=kind)
    if spec.name.startswith("refuse:"):
        intent.tool = spec.name.removeprefix("refuse:")
        created = re.search(CREATE, ex.strip_quotes(text), re.IGNORECASE)
        if intent.tool.startswith("create_") and created:  # the noun right after the verb
            noun = next(g for g in created.groups() if g).lower()
            intent.kind = {"visualisation": "chart", "visualization": "chart",
                           "graph": "chart"}.get(noun, noun)
            intent.tool = f"create_{intent.kind}"
        return intent
    if spec.name == "next_page":
        return _next_page(req, text)
    if tool in ("list_dashboards", "list_datasets", "list_charts"):
        intent.args = _listing(spec, req, text)
        intent.note = _unsupported(tool, ex.strip_quotes(text))
        return intent
    if tool == "migration_history":
        limit = re.search(r"\b(?:last|latest|recent|past)\s+(\d{1,3})\b", text, re.IGNORECASE)
        dashboard = slots.object_ids(text, "dashboard")
        intent.args = {**({"limit": max(1, min(100, int(limit.group(1))))} if limit else {}),
                       **({"dashboard_id": dashboard[0]} if dashboard else {})}
        return intent
    if tool in ("show_capabilities", "list_environments"):
        return intent
    if "object" in spec.required and kind in ("dashboard", "dataset"):
        changes = _changes(spec, text) if "changes" in spec.required else {}
        values = [v for v in changes.values() if isinstance(v, str) and v]
        scan = text.replace(values[0], " ") if values else text  # "rename it to prod-report"
        intent.ids, intent.lookup = _object(req, scan, kind)
        if prior is not None and not intent.ids and intent.lookup is None and prior.kind == kind \
                and (prior.ids or prior.lookup) and not _has(r"\bthis (?:one|dashboard)\b", scan):
            intent.ids, intent.lookup = list(prior.ids), prior.lookup  # "... and publish it"
        if not intent.ids and intent.lookup is None:
            intent.missing = "object"
        intent.args.update(changes)
        if "changes" in spec.required and not any(v or v == 0 for v in changes.values()):
            intent.missing = intent.missing or next(iter(changes), "changes")
        env = _env_args(req, scan) or (prior.args.get("env_id") and {
            "env_id": prior.args["env_id"]} if prior else None) or {}
        if "envs" not in spec.required:
            intent.args.update(env)
    if "published" in spec.required:
        flag = slots.published_flag(text)
        intent.args["published"] = True if flag is None else flag
    if tool == "preview_dataset" and (limit := ex.row_limit(text)):
        intent.args["limit"] = limit
    if tool == "recent_changes":
        intent.args["object_type"] = kind
    if "envs" in spec.required:
        source, target = env_pair(req, text)
        if (source is None or target is None) and prior is not None:
            source = source or prior.args.get("source_env")
            target = target or prior.args.get("target_env")
        if source is None or target is None:
            intent.missing = intent.missing or "envs"
        else:
            intent.args.update(source_env=source, target_env=target)
    return intent


def parse_request(req: Request, text: str | None = None, prior: Intent | None = None) -> Intent:
    """The most likely intent of one request or clause; `Intent()` when nothing fits.
    `prior` is the intent of the clause before it in a compound request ("... and publish
    it": the same dashboard, the same environments)."""
    text = req.text if text is None else text
    said = _chat(text)
    if said is not None:
        return Intent(say=said)
    spec = _best(text, req)
    if spec is None:
        return Intent()
    return _fill(spec, req, text, prior)


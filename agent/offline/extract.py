"""Pulling ids, environment names, quoted text, search terms and numbers out of a request.

Deterministic regular expressions only; every function is pure and cheap even on long text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from agent.environments import infer_tier

__all__ = [
    "DEFAULT_ENVS",
    "cache_seconds",
    "env_mentions",
    "object_id",
    "owner_ids",
    "quoted",
    "row_limit",
    "search_term",
    "strip_quotes",
]

DEFAULT_ENVS = ("ss-dev", "staging", "prod")
_ENV_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_QUOTED = re.compile(r"\"([^\"]{1,500})\"|“([^”]{1,500})”|‘([^’]{1,500})’"
                     r"|(?<![\w])'([^']{1,500})'(?![\w])")
_TIER_WORD = re.compile(r"dev|stag|prod|prd|live|uat|test|qa|sandbox|local", re.IGNORECASE)
_STOP = frozenset(re.findall(r"\w+", """
    a an the this that it its my our your their all any some me us them there here which what
    dashboard dashboards dataset datasets chart charts table tables order detail details general
    short total use fact place addition case title name list one two three few english sync
    database databases db server source target page ui start scratch top bottom end"""))
_ENV_AFTER = re.compile(
    r"\b(?:in|on|from|to|into|onto|between|and|vs\.?|versus|against|with|env|environment)\s+"
    r"(?:the\s+)?([a-z0-9][a-z0-9_.-]{0,63})(?=\s+(?:env(?:ironment)?|instance|server)\b"
    r"|\s*(?:[,.;:!?)]|$|\s+(?:too|please|instead|now|and|vs|versus|as\s+well)\b))",
    re.IGNORECASE)
_ENV_NAMED = re.compile(r"\b(?:env|environment)\s+(?:called\s+|named\s+)?"
                        r"([a-z0-9][a-z0-9_.-]{0,63})"
                        r"|\b([a-z0-9][a-z0-9_.-]{0,63})\s+(?:env|environment)\b", re.IGNORECASE)
_ALIASES = {"production": "prod", "prd": "prod", "live": "prod", "stage": "staging",
            "dev": "dev", "development": "dev", "uat": "staging"}


def quoted(text: str) -> list[str]:
    return [next(g for g in m.groups() if g is not None).strip() for m in _QUOTED.finditer(text)]


def strip_quotes(text: str) -> str:
    """The text with quoted parts blanked, so a quoted title is never read as an env or id."""
    return _QUOTED.sub(" ", text)


def _word_at(text: str, word: str) -> list[int]:
    pattern = re.compile(rf"(?<![\w-]){re.escape(word)}(?![\w-])", re.IGNORECASE)
    return [m.start() for m in pattern.finditer(text)]


def _alias_target(alias: str, known: list[str]) -> str | None:
    wanted = _ALIASES.get(alias)
    if wanted is None:
        return None
    for name in known:
        if name.lower() == wanted:
            return name
    candidates = [n for n in known if infer_tier(n) == infer_tier(wanted) and _TIER_WORD.search(n)]
    return candidates[0] if len(candidates) == 1 else None


def env_mentions(text: str, known: Iterable[str] = ()) -> list[str]:
    """Environment names in the order they appear (without repeats).

    Known names (configured, from the context or an earlier list_environments result) match
    anywhere; aliases like "production" map onto a known name; any other name counts when
    it is used like one ("in X", "X environment", "to X").
    """
    names = list(dict.fromkeys([*known, *DEFAULT_ENVS]))
    plain = strip_quotes(text)
    hits: dict[str, int] = {}
    for name in names:
        for start in _word_at(plain, name):
            hits.setdefault(name, start)
    for alias in _ALIASES:
        target = _alias_target(alias, names)
        if target is None:
            continue
        for start in _word_at(plain, alias):
            hits.setdefault(target, start)
    lowered = {n.lower() for n in names}
    for pattern in (_ENV_AFTER, _ENV_NAMED):
        for match in pattern.finditer(plain):
            group = next((i for i in (1, 2) if i <= (match.lastindex or 0) and match.group(i)), 0)
            if not group:
                continue
            token = match.group(group).rstrip(".-")
            if (token.lower() in _STOP or token.lower() in _ALIASES or token.isdigit()
                    or not _ENV_NAME.match(token) or token.lower() in lowered):
                continue
            if pattern is _ENV_AFTER and match.group(0).split()[0].lower() in (
                    "to", "and", "with") and not _TIER_WORD.search(token):
                continue  # "rename it to totals" is not an environment
            hits.setdefault(token, match.start(group))
    return [name for name, _ in sorted(hits.items(), key=lambda item: item[1])]


_ID_PATTERNS = {
    "dashboard": re.compile(r"\bdashboards?\s*(?:#|no\.?\s*|number\s*|id\s*[:=]?\s*)?(\d{1,10})\b"
                            r"|#(\d{1,10})\s+dashboard", re.IGNORECASE),
    "dataset": re.compile(r"\b(?:dataset|table)s?\s*(?:#|no\.?\s*|number\s*|id\s*[:=]?\s*)?"
                          r"(\d{1,10})\b|#(\d{1,10})\s+dataset", re.IGNORECASE),
}
_GENERIC_ID = re.compile(r"(?:#|\bid\s*[:=]?\s*|\bnumber\s+)(\d{1,10})\b", re.IGNORECASE)


def object_id(text: str, kind: str, *, generic: bool = True) -> int | None:
    """The id of a dashboard/dataset named in the text ("dashboard 3", "#3", "id 3")."""
    plain = strip_quotes(text)
    pattern = _ID_PATTERNS.get(kind)
    match = pattern.search(plain) if pattern else None
    if match is None and generic:
        match = _GENERIC_ID.search(plain)
    if match is None:
        return None
    value = int(next(g for g in match.groups() if g is not None))
    return value if 1 <= value < 2**31 else None


_SEARCH_AFTER = re.compile(
    r"\b(?:about|named|called|titled|matching|containing|mentioning|related to|regarding|"
    r"with(?:\s+(?:the\s+)?(?:word|name|title|text))?)\s+(?:the\s+)?([\w][\w .&/-]{0,80}?)"
    r"(?=\s+(?:in|on|from)\s|\s+(?:dashboards?|datasets?|charts?)\b|[?.!,;]|$)",
    re.IGNORECASE)
_SEARCH_BEFORE = re.compile(
    r"\b(?:find|search(?:\s+for)?|show(?:\s+me)?|list|get|any|which|look\s+for)\s+(?:all\s+|the\s+|"
    r"my\s+|any\s+)?([\w-]{2,40})\s+(?:dashboards|datasets|charts|dashboard|dataset)\b",
    re.IGNORECASE)
_NOT_SEARCH = _STOP | frozenset(re.findall(r"\w+", """
    published draft unpublished available existing current recent new every other more many"""))


def search_term(text: str) -> str | None:
    """A title filter: a quoted string, "about X", "named X", or "find X dashboards"."""
    found = quoted(text)
    if found:
        return found[0][:200]
    for pattern in (_SEARCH_AFTER, _SEARCH_BEFORE):
        match = pattern.search(text)
        if match:
            term = match.group(1).strip(" .-")
            if term and term.lower() not in _NOT_SEARCH:
                return term[:200]
    return None


_CACHE = re.compile(
    r"cache(?:[\s_-]*timeout)?(?:\s+(?:it|this(?:\s+dataset)?|results?))?"
    r"\s*(?:to|=|of|at|:|for|as)?\s*(\d{1,9})\s*"
    r"(seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h|days?|d)?\b", re.IGNORECASE)
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def cache_seconds(text: str) -> int | None:
    """"cache timeout to 600", "cache for 10 minutes", "no cache" (0) -> seconds."""
    if re.search(r"\b(?:no|disable|turn off|switch off)\s+(?:the\s+)?cach", text, re.IGNORECASE):
        return 0
    match = _CACHE.search(text)
    if not match:
        return None
    unit = (match.group(2) or "s").lower()
    return int(match.group(1)) * _UNIT.get(unit[0], 1)


def row_limit(text: str) -> int | None:
    match = re.search(r"\b(?:first|top|last)\s+(\d{1,4})\b|\b(\d{1,4})\s+(?:rows?|records?|lines?)",
                      text, re.IGNORECASE)
    if not match:
        return None
    return max(1, min(100, int(match.group(1) or match.group(2))))


def owner_ids(text: str) -> list[int] | None:
    match = re.search(r"\bowners?\b[^0-9]{0,40}((?:\d{1,10}\s*(?:,|and|&)?\s*){1,50})", text,
                      re.IGNORECASE)
    if not match:
        return None
    return [int(n) for n in re.findall(r"\d{1,10}", match.group(1))]

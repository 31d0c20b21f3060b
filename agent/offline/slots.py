"""Slot fillers of the offline model: ids and id ranges, names, booleans, durations, ordinals.

Each filler reads only the person's own words (quoted text blanked where it must not count),
is pure, and runs in linear time on the bounded request text.
"""

from __future__ import annotations

import re

from agent.offline.extract import quoted, strip_quotes

__all__ = [
    "KIND_NOUNS",
    "duration_seconds",
    "kind_nouns",
    "new_value",
    "object_ids",
    "object_name",
    "ordinal",
    "published_flag",
]

# The words people use for each kind of object, singular and plural.
KIND_NOUNS = {
    "dashboard": r"dashboards?|boards?",
    "dataset": r"datasets?|tables?|data ?sources?|data ?sets?",
    "chart": r"charts?|slices?|visuali[sz]ations?|graphs?|widgets?|plots?",
}
_NUMBER_WORDS = {w: i for i, w in enumerate(
    re.findall(r"\w+", "zero one two three four five six seven eight nine ten eleven twelve "
               "thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty"))}
_NUMBER_WORDS.update({"thirty": 30, "forty": 40, "forty-five": 45, "fifty": 50, "sixty": 60,
                      "ninety": 90, "a": 1, "an": 1, "a couple of": 2, "a few": 3})
_NUM = r"(\d+(?:\.\d+)?|" + "|".join(sorted(map(re.escape, _NUMBER_WORDS), key=len,
                                             reverse=True)) + r")"
_UNITS = {"s": 1, "sec": 1, "second": 1, "m": 60, "min": 60, "minute": 60, "h": 3600,
          "hr": 3600, "hour": 3600, "d": 86400, "day": 86400, "week": 604800}
_UNIT = r"(seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h|days?|d|weeks?)\b"
_DURATION = re.compile(rf"\b{_NUM}\s*-?\s*{_UNIT}", re.IGNORECASE)
_HALF = re.compile(r"\b(?:half an? (hour|day|minute)|(?:a )?quarter of an? (hour))\b"
                   r"|\b(an?|one|\d+) and a half (hours?|days?|minutes?)\b", re.IGNORECASE)
_NO_CACHE = re.compile(r"\b(?:no|disable|turn off|switch off|stop)\s+(?:the\s+)?cach"
                       r"|\bdon'?t cache\b", re.IGNORECASE)
_BARE_CACHE = re.compile(r"\bcach\w*(?:[\s_-]*timeout)?\s*(?:to|=|of|at|:|as)?\s*(\d{1,9})\b"
                         r"(?!\s*(?:%|percent))", re.IGNORECASE)


def _number(word: str) -> float:
    word = word.lower()
    return float(_NUMBER_WORDS[word]) if word in _NUMBER_WORDS else float(word)


def _unit_seconds(unit: str) -> int:
    unit = unit.lower().rstrip("s") or "s"
    return _UNITS.get(unit, _UNITS.get(unit[:1], 1))


def duration_seconds(text: str) -> int | None:
    """"10 minutes" -> 600, "half an hour" -> 1800, "cache_timeout=600" -> 600, "no cache" -> 0."""
    plain = strip_quotes(text)
    if _NO_CACHE.search(plain):
        return 0
    half = _HALF.search(plain)
    if half:
        if half.group(3):  # "an hour and a half"
            return int((_number(half.group(3)) + 0.5) * _unit_seconds(half.group(4)))
        unit = half.group(1) or half.group(2)
        return _unit_seconds(unit) // (2 if half.group(1) else 4)
    found = _DURATION.search(plain)
    if found:
        return int(_number(found.group(1)) * _unit_seconds(found.group(2)))
    bare = _BARE_CACHE.search(plain)
    return int(bare.group(1)) if bare else None


_RANGE = r"(\d{1,10})\s*(?:-|–|to|through|thru|until|\.\.)\s*(?:#\s*)?(\d{1,10})"
_LIST = r"(\d{1,10}(?:\s*(?:,|and|&|or)\s*#?\s*\d{1,10})*)"
MAX_RANGE = 10  # ids one request may name at once ("dashboards 11 to 13")


def object_ids(text: str, kind: str) -> list[int]:
    """Ids the text gives for a kind: "dashboard 3", "#3 dashboard", "dashboards 11 to 13",
    "dashboards 3, 5 and 8"; a range longer than MAX_RANGE is cut to its first ids."""
    plain = strip_quotes(text)
    noun = KIND_NOUNS[kind]
    lead = rf"\b(?:{noun})\s*(?:#|no\.?\s*|number\s*|id\s*[:=]?\s*|ids\s*)?\s*#?\s*"
    ranged = re.search(lead + _RANGE + r"\b", plain, re.IGNORECASE)
    if ranged:
        first, last = int(ranged.group(1)), int(ranged.group(2))
        if 1 <= first <= last:
            return list(range(first, min(last, first + MAX_RANGE - 1) + 1))
    listed = re.search(lead + _LIST + r"\b", plain, re.IGNORECASE)
    if listed is None:
        listed = re.search(rf"#(\d{{1,10}})\s+(?:{noun})\b", plain, re.IGNORECASE)
    if listed is None:
        return []
    found = [int(n) for n in re.findall(r"\d{1,10}", listed.group(1))]
    return [n for n in dict.fromkeys(found) if 1 <= n < 2**31][:MAX_RANGE]


def kind_nouns(text: str) -> list[str]:
    """The kinds of object the text names, in the order they first appear."""
    plain = strip_quotes(text)
    hits = {kind: m.start() for kind, noun in KIND_NOUNS.items()
            if (m := re.search(rf"\b(?:{noun})\b", plain, re.IGNORECASE))}
    return sorted(hits, key=hits.__getitem__)


_LINKS = frozenset(re.findall(r"\w+", "of on in for with to from by at about as it is are was"))
_NOT_NAMES = frozenset(re.findall(r"\w+", """this that the a an my our your their its same
    current new other whole entire first second last next previous which what each every any
    all one main following above below own"""))


def object_name(text: str, kind: str) -> str | None:
    """The name of an object the text refers to without an id: "the sales dashboard",
    "the dashboard called 'Sales'", "the orders dataset", "dataset named orders"."""
    plain = text
    noun = KIND_NOUNS[kind]
    called = re.search(rf"\b(?:{noun})\s+(?:called|named|titled)\s+(?:\"([^\"]+)\"|'([^']+)'"
                       r"|“([^”]+)”|([\w&-]+(?:\s+[\w&-]+){0,3}?))(?=\s+(?:to|and|in|into|on|"
                       r"from|as|then)\b|[?.!,;]|$)", plain, re.IGNORECASE)
    if called:
        return next(g for g in called.groups() if g).strip()[:200]
    before = re.search(rf"\b(?:the|our|my)\s+((?:[\w&'-]+\s+){{0,2}}?[\w&'-]+)\s+(?:{noun})\b",
                       strip_quotes(plain), re.IGNORECASE)
    if before:
        name = before.group(1).strip()
        words = name.lower().split()
        if words and not any(w in _NOT_NAMES or w in _LINKS or w.isdigit() for w in words):
            return name[:200]
    return None


_AFTER_TO = re.compile(r"\b(?:to|as|into|call (?:it|this(?: one)?)|name (?:it|this(?: one)?)"
                       r"|should (?:be|read)|instead of)\s+(.+?)\s*(?:instead|please|thanks)?"
                       r"\s*[.!?]*\s*$", re.IGNORECASE)


def new_value(text: str) -> str | None:
    """The new value of "rename it to X", "call it X", "the title should be X"."""
    found = quoted(text)
    if found:
        return found[0][:500]
    match = _AFTER_TO.search(text)
    if not match:
        return None
    value = match.group(1).strip().strip("'\"“”‘’ ")
    return value[:500] or None


_TRUE = re.compile(r"\b(?:publish(?:ed)?|public|live|visible|go live|release it|share it)\b",
                   re.IGNORECASE)
_FALSE = re.compile(r"\b(?:unpublish(?:ed)?|un-publish|drafts?|private|hidden|hide|not "
                    r"published|take (?:it |this )?down|pull (?:it|this)|invisible)\b",
                    re.IGNORECASE)


def published_flag(text: str) -> bool | None:
    """True for "publish" / "public" / "live", False for "draft" / "unpublish" / "hide"."""
    plain = strip_quotes(text)
    if _FALSE.search(plain):
        return False
    if _TRUE.search(plain):
        return True
    return None


_ORDINALS = {"first": 0, "1st": 0, "second": 1, "2nd": 1, "third": 2, "3rd": 2, "fourth": 3,
             "4th": 3, "fifth": 4, "5th": 4, "last": -1, "top": 0}


def ordinal(text: str) -> int | None:
    """"the first one" -> 0, "the second" -> 1, "the last one" -> -1."""
    match = re.search(r"\b(?:the\s+)?(" + "|".join(_ORDINALS) + r")(?:\s+(?:one|option|match"
                      r"|result|dashboard|dataset))?\b", text, re.IGNORECASE)
    return _ORDINALS[match.group(1).lower()] if match else None

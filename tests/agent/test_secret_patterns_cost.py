"""What `scrub_patterns` costs: every tool result passes through it on the event loop.

Its field pattern tried a match at every letter of every word, each try running to the
word's end and back: 0.7 µs a character, 2.8 ms for a 4 000-character tool result (the
default output limit), measured on the bench machine. Now the patterns run only when the
text holds a word they need, and a key starts where a word does. What is redacted must stay
exactly what the patterns redacted before: checked against those patterns applied as they
were, on generated text that mixes the words, separators, quotes and the letters a
case-insensitive pattern matches beyond ASCII.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

import pytest

from agent import secrets
from agent.secrets import REDACTED, scrub_patterns

# The patterns as they were applied before (every one, on every text).
_BEFORE_FIELD = re.compile(
    r"""(?ix)
    (?P<key>["']?[a-z0-9_-]*(?:password|passwd|pwd|secret|api[_-]?key|token
                              |authorization)["']?)
    (?P<sep>\s*[:=]\s*)
    (?!\[redacted\])
    (?P<value>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|[^\s,;&}\]\)]+)""")


def _before(text: str) -> str:
    text = secrets._URL_PASSWORD.sub(rf"\1{REDACTED}\3", text)
    text = secrets._BEARER.sub(rf"\1\2{REDACTED}", text)
    text = secrets._JWT.sub(REDACTED, text)

    def field(match: re.Match[str]) -> str:
        value = match.group("value")
        quote = value[0] if value[:1] in "\"'" else ""
        return f"{match.group('key')}{match.group('sep')}{quote}{REDACTED}{quote}"

    return _BEFORE_FIELD.sub(field, text)


class _MustNotRun:
    def sub(self, *args: Any, **kwargs: Any) -> str:
        raise AssertionError("a pattern ran on text that cannot hold what it matches")


def _listing() -> str:
    """A tool result as the agent stores it: a page of dashboards, cut at the output limit."""
    rows = [{"id": i, "dashboard_title": f"Sales overview {i}", "slug": f"sales-{i}",
             "url": f"/superset/dashboard/{i}/", "published": i % 2 == 0,
             "changed_on_delta_humanized": "3 days ago",
             "owners": [{"first_name": "Ada", "last_name": "Lovelace"}]} for i in range(40)]
    return json.dumps({"env": "ss-dev", "count": 40, "dashboards": rows})[:4000]


def test_a_result_without_credential_words_runs_no_pattern(monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    for name in ("_FIELD", "_BEARER", "_JWT", "_URL_PASSWORD"):
        monkeypatch.setattr(secrets, name, _MustNotRun())
    text = _listing()

    assert scrub_patterns(text) == text


def test_each_pattern_still_runs_where_its_words_are() -> None:
    text = _listing()

    assert scrub_patterns(text + ' "api_key": "k-123456"').endswith(f'"api_key": "{REDACTED}"')
    assert scrub_patterns("sent Bearer abcdefgh1234") == f"sent Bearer {REDACTED}"
    assert REDACTED in scrub_patterns("see postgresql://app:hunter22@db/app")
    assert scrub_patterns("eyJhbGciOi.eyJzdWIiOi.c2lnbmF0dXJl") == REDACTED


@pytest.mark.parametrize("text", [
    "pa\u017f\u017fword: hunter22",  # the long s matches s in a case-insensitive pattern
    "api_\u212aey=abc123456",  # the Kelvin sign matches k
    "caf\u00e9 token=abcdef12",  # a word the ASCII shortcut would find, in other text
])
def test_text_beyond_ascii_runs_every_pattern(text: str) -> None:
    assert scrub_patterns(text).endswith(REDACTED)
    assert scrub_patterns(text) == _before(text)


_PIECES = [*"abXY09_-\"' :=,;&}])\\\n/@.", "password", "PASSWD", "pwd", "Secret", "api_key",
           "api-key", "apikey", "Token", "authorization", "bearer ", "Basic%20", "eyJ",
           "eyJhbGciOi.eyJzdWIiOi.c2lnbmF0", "://", "https://u:p", "[redacted]", "my_",
           "\u017f", "\u212a", "\u0130", "\u00e9"]


def test_what_is_redacted_is_what_the_patterns_redacted_before() -> None:
    generated = random.Random(20261207)
    for _ in range(20_000):
        text = "".join(generated.choice(_PIECES) for _ in range(generated.randint(1, 16)))
        assert scrub_patterns(text) == _before(text), text

"""One secret scrubber for every boundary where outside text comes in (SPEC §10).

Superset errors, model-provider errors and tool output pass through `Scrubber.scrub` before
they reach events, storage, prompts or logs. It removes every configured secret (service
passwords, API keys, the token-signing secret, provider keys from the environment) and the
caller's own token when given, plus anything shaped like one: `Authorization: Bearer …`,
a JWT, or a `"password": …` / `password=…` field. What is left is safe to show and store.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent.settings import Settings

__all__ = ["REDACTED", "Scrubber", "scrub_patterns"]

REDACTED = "[redacted]"
_MIN_SECRET = 6  # shorter "secrets" would redact ordinary words
_SECRET_ENV = re.compile(r"(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD)$", re.IGNORECASE)

_BEARER = re.compile(r"(?i)\b(bearer|basic)(\s+|%20)[A-Za-z0-9._~+/=-]{8,}")
_JWT = re.compile(r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}")
# "password": "…", 'passwd': '…', password=…, "api_key": … in JSON, Python reprs, forms, URLs.
# A key starts where a word does (the lookbehind): without it the search tried again at
# every letter of every word, each try running to the word's end and back, 0.7 µs a
# character (2.8 ms for a 4 000-character tool result, on the event loop). The leftmost
# match starts at a word's start anyway, so what is redacted is the same.
_FIELD = re.compile(
    r"""(?ix)
    (?<![a-z0-9_-])
    (?P<key>["']?[a-z0-9_-]*(?:password|passwd|pwd|secret|api[_-]?key|token
                              |authorization)["']?)
    (?P<sep>\s*[:=]\s*)
    (?!\[redacted\])  # already redacted (a JWT in `token=…`): leave it whole
    (?P<value>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|[^\s,;&}\]\)]+)""")
_URL_PASSWORD = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^:/\s@]+:)([^@\s/]+)(@)")
# Words each pattern cannot match without (lower case): most text has none of them, and a
# substring test of the lowered text costs microseconds where the patterns cost a
# millisecond. Only for ASCII text: a case-insensitive pattern also matches letters that
# `lower()` does not turn into these (the long s, the Kelvin sign), so other text runs every
# pattern as before.
_FIELD_WORDS = ("password", "passwd", "pwd", "secret", "apikey", "api_key", "api-key",
                "token", "authorization")
_BEARER_WORDS = ("bearer", "basic")


def scrub_patterns(text: str) -> str:
    """Remove what looks like a credential, whatever the configuration."""
    lowered = text.lower() if text.isascii() else None

    def may_hold(*words: str) -> bool:
        return lowered is None or any(word in lowered for word in words)

    if "://" in text:
        text = _URL_PASSWORD.sub(rf"\1{REDACTED}\3", text)
    if may_hold(*_BEARER_WORDS):
        text = _BEARER.sub(rf"\1\2{REDACTED}", text)
    if "eyJ" in text:
        text = _JWT.sub(REDACTED, text)

    def field(match: re.Match[str]) -> str:
        value = match.group("value")
        quote = value[0] if value[:1] in "\"'" else ""
        return f"{match.group('key')}{match.group('sep')}{quote}{REDACTED}{quote}"

    return _FIELD.sub(field, text) if may_hold(*_FIELD_WORDS) else text


class Scrubber:
    """Knows the configured secrets; `scrub(text, extra=[the caller's token])`."""

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        self._secrets: list[str] = []
        self.add(*secrets)

    @property
    def secrets(self) -> tuple[str, ...]:
        """The configured secrets (the model worker process gets a copy)."""
        return tuple(self._secrets)

    def add(self, *secrets: str | None) -> None:
        found = {s for s in (*self._secrets, *secrets) if s and len(s) >= _MIN_SECRET}
        self._secrets = sorted(found, key=len, reverse=True)  # longest first: no partial hits

    def scrub(self, text: str, *, extra: Iterable[str | None] = ()) -> str:
        if not text:
            return text
        extras = [s for s in extra if s and len(s) >= _MIN_SECRET]
        for secret in sorted(extras, key=len, reverse=True) + self._secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return scrub_patterns(text)

    @classmethod
    def from_settings(cls, settings: Settings) -> Scrubber:
        """Every secret the app is configured with, and provider keys in the environment
        (litellm reads `OPENAI_API_KEY` and friends from there)."""
        secrets: list[str | None] = [settings.agent_api_key, settings.jwt_secret()]
        secrets += [env.password for env in settings.superset_environments]
        secrets += [value for name, value in os.environ.items() if _SECRET_ENV.search(name)]
        return cls(secrets)

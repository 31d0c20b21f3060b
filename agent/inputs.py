"""Text and identifiers at the boundary: what every caller-supplied string goes through.

A lone UTF-16 surrogate (`"\\ud800"`, which JSON can carry) cannot be encoded as UTF-8,
so it fails a database write, a token check or an HTTP header far from where it came in;
NUL cannot be stored in PostgreSQL text. Free text keeps its meaning with a replacement
character; identifiers and tokens that hold either are simply not valid.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["ID_PATTERN", "clean_text", "is_id", "is_token", "refusal"]

ID_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_SURROGATE = re.compile(r"[\ud800-\udfff]")  # in a Python str, any of these is unpaired


def clean_text(value: str) -> str:
    """Unpaired surrogates become U+FFFD and NUL characters go."""
    return _SURROGATE.sub("\ufffd", value).replace("\x00", "")


def is_id(value: Any) -> bool:
    """A conversation, confirmation or request id as this app makes them."""
    return isinstance(value, str) and bool(ID_PATTERN.match(value))


def is_token(value: str) -> bool:
    """Bearer tokens (JWTs, Superset's) are printable ASCII."""
    return value.isascii() and value.isprintable()


def refusal(text: str, limit: int) -> str | None:
    """The reply to a message the model should never see (blank, or over `limit`
    characters), or None. Such a message is answered, not stored: the admission of a turn
    and the run both ask this."""
    if not text.strip():
        return ("Please type a question or a request, for example "
                "\"what can you do?\" or \"list the dashboards\".")
    if len(text) > limit:
        return (f"Your message has {len(text):,} characters; the limit is {limit:,}. "
                "Please shorten it or split it into several messages.")
    return None

"""Text hygiene shared by the repositories."""

from __future__ import annotations

__all__ = ["strip_nul"]


def strip_nul(value: str | None) -> str | None:
    """Drop NUL characters: PostgreSQL text cannot hold them (SQLite can), and a pasted or
    generated NUL must not fail a write on one backend only."""
    return value.replace("\x00", "") if value else value

"""Environment tiers and resolution (SPEC §3): configured tier, else inferred, else prod."""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["infer_tier", "resolve_env", "tier_of"]

_PROD = re.compile(r"prod|prd|live", re.IGNORECASE)
_STAGING = re.compile(r"stag|uat|preprod", re.IGNORECASE)
_DEV = re.compile(r"dev|test|local|sandbox", re.IGNORECASE)


def infer_tier(name: str) -> str:
    """Guess a tier from a name; anything unrecognised is prod, because that fails safe."""
    if _STAGING.search(name):  # before prod: "preprod" is staging
        return "staging"
    if _PROD.search(name):
        return "prod"
    if _DEV.search(name):
        return "dev"
    return "prod"


def tier_of(name: str | None, configured: dict[str, str | None]) -> str | None:
    if not name:
        return None
    return configured.get(name) or infer_tier(name)


def resolve_env(*candidates: str | None, known: Iterable[str] | None = None) -> str | None:
    """First non-empty candidate in precedence order: tool arg > submit env > UI context."""
    del known  # existence is checked by the tool, which can say which names exist
    for candidate in candidates:
        if candidate and candidate.strip():
            return candidate.strip()
    return None

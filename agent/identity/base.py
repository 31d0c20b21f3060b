"""Who a caller is, the app's three roles, and the mapping from provider role names to them.

Every identity provider (demo tokens, Superset, an external JWT issuer) produces the same
`Identity`; nothing downstream knows which one verified it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal, Protocol

from agent.errors import RoleNotMapped

__all__ = [
    "ROLE_ORDER",
    "Identity",
    "IdentityProvider",
    "Role",
    "map_roles",
    "role_at_least",
]

Role = Literal["viewer", "editor", "admin"]
ROLE_ORDER: dict[str, int] = {"viewer": 0, "editor": 1, "admin": 2}


def role_at_least(role: str, minimum: str) -> bool:
    return ROLE_ORDER.get(role, -1) >= ROLE_ORDER[minimum]


@dataclass(frozen=True)
class Identity:
    """A verified caller. `user_id` is the verified subject: every owner key uses it."""

    user_id: str
    name: str
    role: Role

    @property
    def roles(self) -> list[str]:
        return [self.role]


def map_roles(names: Iterable[str], role_map: Mapping[str, str], *, who: str) -> Role:
    """The highest app role any of `names` maps to; none mapped refuses (fail closed)."""
    mapped = [role_map[name] for name in names if name in role_map
              and role_map[name] in ROLE_ORDER]
    if not mapped:
        known = ", ".join(sorted(role_map)) or "none configured"
        raise RoleNotMapped(f"{who} has no role this app accepts (accepted: {known}). "
                            "Ask an administrator for one of them.")
    return max(mapped, key=ROLE_ORDER.__getitem__)  # type: ignore[return-value]


class IdentityProvider(Protocol):
    """Verifies the `user_jwt` every endpoint receives; `user_id`, when given, must be its
    subject. Raises `IdentityError` (or `IdentityUnavailable` when it cannot check now)."""

    mode: str

    async def verify(self, *, user_id: str | None, token: str | None) -> Identity: ...

    def passthrough_token(self, token: str | None) -> str | None:
        """The token to present to Superset for this caller (passthrough environments)."""
        ...

    async def aclose(self) -> None: ...

"""Demo identities (SPEC §10): HS256 tokens this app mints for its demo users.

Tokens are verified here and never stored or logged; only the subject and roles travel on.
An empty token is the demo viewer, in demo mode only.
"""

from __future__ import annotations

import re
import secrets
import time

import jwt

from agent.errors import IdentityError
from agent.identity.base import ROLE_ORDER, Identity, Role

__all__ = ["DEMO_USERS", "ISSUER", "DemoIdentity", "TokenIssuer", "new_visitor", "visitor_of"]

ISSUER = "superset-agent"

# Demo users: role -> (user_id, display name, the Superset role they stand for)
DEMO_USERS: dict[str, tuple[str, str, str]] = {
    "viewer": ("demo-viewer", "Demo Viewer", "Gamma"),
    "editor": ("demo-editor", "Demo Editor", "Alpha"),
    "admin": ("demo-admin", "Demo Admin", "Admin"),
}


_VISITOR = re.compile(r"^[0-9a-f]{16,32}$")


def new_visitor() -> str:
    """A fresh, unguessable visitor id (96 bits): knowing it is what owning it means."""
    return secrets.token_hex(12)


def visitor_of(user_id: str | None) -> str | None:
    """The visitor id inside a per-visit demo user id, if it is one."""
    for base, _, _ in DEMO_USERS.values():
        if user_id and user_id.startswith(base + "-"):
            candidate = user_id[len(base) + 1:]
            return candidate if _VISITOR.match(candidate) else None
    return None


class TokenIssuer:
    """Mints and verifies HS256 tokens with one secret."""

    def __init__(self, secret: str, *, ttl_s: int = 12 * 3600, demo: bool = True) -> None:
        self._secret = secret
        self._ttl_s = ttl_s
        self.demo = demo

    def mint(self, *, user_id: str, name: str, role: Role) -> str:
        now = int(time.time())
        claims = {"sub": user_id, "name": name, "roles": [role], "iss": ISSUER,
                  "iat": now, "exp": now + self._ttl_s}
        return jwt.encode(claims, self._secret, algorithm="HS256")

    def mint_demo(self, user: str, visitor: str | None = None) -> tuple[Identity, str]:
        """A demo identity. With `visitor` (one per browser visit or API sign-in, see
        `new_visitor`) it is that visitor's own, e.g. `demo-editor-3f9a…`, so two people who
        both pick "editor" never share conversations; without, the fixed demo user."""
        if not self.demo:
            raise IdentityError("Demo tokens exist only in demo mode.")
        if user not in DEMO_USERS:
            raise IdentityError(f"Unknown demo user {user!r}; use viewer, editor or admin.")
        user_id, name, _ = DEMO_USERS[user]
        if visitor is not None:
            if not _VISITOR.match(visitor):
                raise IdentityError("A demo visitor id is 16-32 lowercase hex characters.")
            user_id = f"{user_id}-{visitor}"
        identity = Identity(user_id=user_id, name=name, role=user)  # type: ignore[arg-type]
        return identity, self.mint(user_id=user_id, name=name, role=identity.role)

    def verify(self, *, user_id: str | None, token: str | None) -> Identity:
        """Check the token and that `user_id` is its subject; an empty token is the demo viewer."""
        if not token:
            if not self.demo:
                raise IdentityError("A user token is required.")
            viewer_id, name, _ = DEMO_USERS["viewer"]
            if user_id and user_id != viewer_id:
                raise IdentityError("Without a token you act as the demo viewer only.")
            return Identity(user_id=viewer_id, name=name, role="viewer")
        try:
            claims = jwt.decode(token, self._secret, algorithms=["HS256"], issuer=ISSUER,
                                options={"require": ["sub", "exp", "iss"]})
        except jwt.ExpiredSignatureError as exc:
            raise IdentityError("The user token has expired.") from exc
        except jwt.PyJWTError as exc:
            raise IdentityError("The user token is not valid.") from exc
        subject = str(claims["sub"])
        if user_id and user_id != subject:
            raise IdentityError("user_id does not match the token's subject.")
        claimed = claims.get("roles")
        roles = ([r for r in claimed if isinstance(r, str) and r in ROLE_ORDER]
                 if isinstance(claimed, list) else [])
        role = max(roles, key=ROLE_ORDER.__getitem__) if roles else "viewer"
        return Identity(user_id=subject, name=str(claims.get("name", subject)), role=role)


class DemoIdentity:
    """The identity provider of demo mode: the issuer's own tokens, nothing passed through."""

    mode = "demo"

    def __init__(self, issuer: TokenIssuer) -> None:
        self.issuer = issuer

    async def verify(self, *, user_id: str | None, token: str | None) -> Identity:
        return self.issuer.verify(user_id=user_id, token=token)

    def passthrough_token(self, token: str | None) -> str | None:
        return None  # demo tokens mean nothing to a Superset

    async def aclose(self) -> None:
        return None

"""AUTH_MODE=jwt: tokens from an external identity provider, verified with PyJWT.

Keys come from a JWKS URL (RS256/ES256 by default; `PyJWKClient` caches them and refetches
for an unknown key id) or from a shared HS256 secret; never both kinds at once, so a token
signed with HS256 and the *public* key (algorithm confusion) or `alg: none` is refused
before any key is chosen. `exp`, `iss` and `aud` are required and checked. Roles come from a
configurable claim (a dotted path, e.g. `realm_access.roles`) through the role map.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

import jwt

from agent.errors import IdentityError, IdentityUnavailable, TokenExpired
from agent.identity.base import Identity, map_roles

__all__ = ["ExternalJwtIdentity"]

_ASYMMETRIC = {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384",
               "ES512", "EdDSA"}
_SYMMETRIC = {"HS256", "HS384", "HS512"}


def _claim(claims: Mapping[str, Any], path: str) -> Any:
    value: Any = claims
    for part in path.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def _names(value: Any) -> list[str]:
    """A roles claim as a list: a JSON list of strings, or one space/comma separated string."""
    if isinstance(value, str):
        return [part for part in value.replace(",", " ").split() if part]
    if isinstance(value, list):
        return [item for item in value if isinstance(item, str)]
    return []


class ExternalJwtIdentity:
    mode = "jwt"

    def __init__(
        self, *, issuer: str | None, audience: str | None, role_map: Mapping[str, str],
        jwks_url: str | None = None, secret: str | None = None,
        algorithms: Sequence[str] | None = None, user_claim: str = "sub",
        roles_claim: str = "roles", leeway_s: int = 30, timeout_s: float = 10.0,
    ) -> None:
        if not issuer or not audience:
            raise ValueError("AUTH_MODE=jwt needs AUTH_JWT_ISSUER and AUTH_JWT_AUDIENCE: "
                             "without them a token issued for another app would pass.")
        if bool(jwks_url) == bool(secret):
            raise ValueError("AUTH_MODE=jwt needs exactly one of AUTH_JWT_JWKS_URL (public "
                             "keys) or AUTH_JWT_SECRET (a shared HS256 secret).")
        allowed = _ASYMMETRIC if jwks_url else _SYMMETRIC
        chosen = list(algorithms or (["RS256", "ES256"] if jwks_url else ["HS256"]))
        wrong = [alg for alg in chosen if alg not in allowed]
        if wrong or not chosen:
            kind = "a JWKS URL takes public-key" if jwks_url else "a secret takes HMAC"
            raise ValueError(f"AUTH_JWT_ALGORITHMS {wrong or chosen} do not fit: {kind} "
                             f"algorithms only ({', '.join(sorted(allowed))}).")
        self._algorithms = chosen
        self._issuer, self._audience = issuer, audience
        self._role_map = dict(role_map)
        self._user_claim, self._roles_claim = user_claim, roles_claim
        self._leeway = leeway_s
        self._secret = secret
        self._jwks = (jwt.PyJWKClient(jwks_url, cache_keys=True, lifespan=300,
                                      timeout=timeout_s) if jwks_url else None)

    async def verify(self, *, user_id: str | None, token: str | None) -> Identity:
        if not token:
            raise IdentityError("A token from your identity provider is required.")
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as exc:
            raise IdentityError("The user token is not valid.") from exc
        if header.get("alg") not in self._algorithms:
            raise IdentityError("The user token is not valid (its algorithm is not accepted).")
        key = await self._key(token)
        try:
            claims = jwt.decode(
                token, key, algorithms=self._algorithms, issuer=self._issuer,
                audience=self._audience, leeway=self._leeway,
                options={"require": ["exp", "iss", "aud", self._user_claim.split(".")[0]]})
        except jwt.ExpiredSignatureError as exc:
            raise TokenExpired("The user token has expired; sign in again.") from exc
        except jwt.PyJWTError as exc:
            raise IdentityError("The user token is not valid.") from exc
        subject = _claim(claims, self._user_claim)
        if not isinstance(subject, str) or not subject:
            raise IdentityError(f"The user token has no {self._user_claim!r} claim.")
        if user_id and user_id != subject:
            raise IdentityError("user_id does not match the token's subject.")
        role = map_roles(_names(_claim(claims, self._roles_claim)), self._role_map,
                         who=f"User {subject!r}")
        name = claims.get("name")
        return Identity(user_id=subject, name=name if isinstance(name, str) and name else subject,
                        role=role)

    async def _key(self, token: str) -> Any:
        if self._jwks is None:
            return self._secret
        try:
            # PyJWKClient is synchronous (urllib); keep the event loop free while it fetches.
            signing = await asyncio.to_thread(self._jwks.get_signing_key_from_jwt, token)
        except jwt.PyJWKClientConnectionError as exc:
            raise IdentityUnavailable("The identity provider's keys (JWKS) could not be "
                                      "fetched; try again in a moment.") from exc
        except jwt.PyJWTError as exc:
            raise IdentityError("The user token is not valid (unknown signing key).") from exc
        return signing.key

    def passthrough_token(self, token: str | None) -> str | None:
        # Only useful when Superset itself trusts this provider's tokens (custom security
        # manager); otherwise Superset refuses them and the tool says so.
        return token or None

    async def aclose(self) -> None:
        return None

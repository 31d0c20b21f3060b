"""AUTH_MODE=superset: `user_jwt` is a Superset access token, and Superset says whose it is.

Verification asks the identity environment `GET /api/v1/me/` and `/api/v1/me/roles/` with
the token and maps the Superset role names to an app role. The answer is cached briefly,
keyed by a SHA-256 of the token (never the token itself); an entry also ends when the token
expires. Concurrent checks of one token share one lookup, so a burst of turns costs one
pair of requests. Sign-in exchanges credentials at `/api/v1/security/login`; renewal uses
Superset's refresh token at `/api/v1/security/refresh`.

Tokens and passwords only pass through: they are never stored, logged or quoted in an
error, and no error here repeats what Superset answered to a login.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx
import jwt

from agent.errors import (
    BadCredentials,
    IdentityError,
    IdentityUnavailable,
    RoleNotMapped,
    TokenExpired,
)
from agent.identity.base import Identity, map_roles
from agent.superset.auth import LOGIN_PATH, REFRESH_PATH, is_expired_token

__all__ = ["WRONG_CREDENTIALS", "SignedIn", "SupersetIdentity", "token_expiry"]

WRONG_CREDENTIALS = "Wrong username or password."
ME_PATH = "/api/v1/me/"
ROLES_PATH = "/api/v1/me/roles/"
_NEGATIVE_TTL_S = 10.0  # a refused token is not re-checked with Superset for this long
_MAX_CACHED = 10_000


def token_expiry(token: str) -> float | None:
    """The `exp` claim of a JWT, read without verifying it: used only to end things sooner
    (a cache entry, the page's renewal timer), never to trust the token."""
    try:
        claims = jwt.decode(token, options={"verify_signature": False})
    except jwt.PyJWTError:
        return None
    exp = claims.get("exp")
    return float(exp) if isinstance(exp, int | float) else None


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True)
class SignedIn:
    """A successful sign-in or renewal: what the page keeps (tokens in the browser only)."""

    identity: Identity
    access_token: str = field(repr=False)
    refresh_token: str | None = field(repr=False)
    expires_at: float | None


class SupersetIdentity:
    """Verifies Superset access tokens against one Superset environment."""

    mode = "superset"

    def __init__(
        self, *, env: str, base_url: str, role_map: Mapping[str, str], provider: str = "db",
        cache_ttl_s: float = 60.0, timeout_s: float = 10.0,
        transport: httpx.AsyncBaseTransport | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.env = env
        self._role_map = dict(role_map)
        self._provider = provider
        self._cache_ttl_s = cache_ttl_s
        self._clock = clock
        self._http = httpx.AsyncClient(base_url=base_url.rstrip("/"), transport=transport,
                                       headers={"Accept": "application/json"},
                                       timeout=timeout_s, follow_redirects=False)
        # sha256(token) -> (the identity, or the refusal, and until when it holds)
        self._cache: dict[str, tuple[Identity | IdentityError, float]] = {}
        self._inflight: dict[str, asyncio.Future[Identity]] = {}
        self.lookups = 0  # how often Superset was asked who a token is (diagnostics, tests)

    # verification ------------------------------------------------------------------------

    async def verify(self, *, user_id: str | None, token: str | None) -> Identity:
        if not token:
            raise IdentityError("Sign in first: a Superset token is required.")
        identity = await self._identity(_digest(token), token)
        if user_id and user_id != identity.user_id:
            raise IdentityError("user_id does not match the token's subject.")
        return identity

    def passthrough_token(self, token: str | None) -> str | None:
        return token or None

    def forget(self, token: str) -> None:
        """Drop a token's cache entry (sign-out), so it is checked with Superset again."""
        self._cache.pop(_digest(token), None)

    async def _identity(self, key: str, token: str) -> Identity:
        hit = self._cache.get(key)
        if hit is not None and hit[1] > self._clock():
            value = hit[0]
            if isinstance(value, IdentityError):
                raise type(value)(str(value))
            return value
        pending = self._inflight.get(key)
        if pending is None:
            pending = asyncio.ensure_future(self._lookup(key, token))
            self._inflight[key] = pending
            pending.add_done_callback(lambda _: self._inflight.pop(key, None))
        # Shielded: one caller going away must not cancel the lookup the others wait for.
        return await asyncio.shield(pending)

    async def _lookup(self, key: str, token: str) -> Identity:
        self.lookups += 1
        try:
            me = await self._get_json(ME_PATH, token)
            roles = await self._get_json(ROLES_PATH, token)
            identity = self._identity_of(me, roles)
        except (TokenExpired, IdentityUnavailable):
            raise  # expiry is checked by the token's own clock; outages are not remembered
        except IdentityError as exc:
            self._remember(key, exc, token, ttl_s=min(_NEGATIVE_TTL_S, self._cache_ttl_s))
            raise
        self._remember(key, identity, token, ttl_s=self._cache_ttl_s)
        return identity

    def _identity_of(self, me: Any, roles: Any) -> Identity:
        user = me.get("result") if isinstance(me, dict) else None
        username = user.get("username") if isinstance(user, dict) else None
        if not isinstance(username, str) or not username:
            raise IdentityError(f"Superset ({self.env}) did not say who this token belongs to.")
        result = roles.get("result") if isinstance(roles, dict) else None
        names = result.get("roles") if isinstance(result, dict) else None
        role = map_roles(list(names) if isinstance(names, dict | list) else [],
                         self._role_map, who=f"Superset user {username!r}")
        full = " ".join(str(user.get(k) or "") for k in ("first_name", "last_name")).strip()
        return Identity(user_id=username, name=full or username, role=role)

    def _remember(self, key: str, value: Identity | IdentityError, token: str, *,
                  ttl_s: float) -> None:
        now = self._clock()
        until = now + ttl_s
        expires = token_expiry(token)
        if expires is not None:
            until = min(until, expires)
        if until <= now:
            return
        if len(self._cache) >= _MAX_CACHED:
            self._cache = {k: v for k, v in self._cache.items() if v[1] > now}
            if len(self._cache) >= _MAX_CACHED:
                self._cache.pop(next(iter(self._cache)))
        self._cache[key] = (value, until)

    async def _get_json(self, path: str, token: str) -> Any:
        response = await self._send("GET", path, bearer=token)
        if response.status_code == 200:
            return self._json(response)
        if is_expired_token(response):
            raise TokenExpired("Your Superset sign-in has expired; sign in again.")
        if response.status_code == 403:
            raise RoleNotMapped(f"Superset ({self.env}) does not let this account read its own "
                                "user and roles, so this app cannot tell which role it has.")
        if response.status_code in (400, 401, 422):
            raise IdentityError(f"Superset ({self.env}) does not accept this token; sign in "
                                "again.")
        raise self._unavailable(f"answered HTTP {response.status_code}")

    # sign-in and renewal ---------------------------------------------------------------

    async def sign_in(self, *, username: str, password: str) -> SignedIn:
        """Exchange credentials for Superset's tokens; any refusal is one `BadCredentials`."""
        response = await self._send("POST", LOGIN_PATH, json={
            "username": username, "password": password, "provider": self._provider,
            "refresh": True})
        if response.status_code in (400, 401, 403, 422):
            raise BadCredentials(WRONG_CREDENTIALS)
        access, refresh = self._tokens(response, "sign-in")
        return await self._signed_in(access, refresh)

    async def renew(self, *, refresh_token: str) -> SignedIn:
        """A new access token from Superset's refresh token; the refresh token stays."""
        if not refresh_token:
            raise TokenExpired("Your session has ended; please sign in again.")
        response = await self._send("POST", REFRESH_PATH, bearer=refresh_token)
        if response.status_code in (400, 401, 403, 422):
            raise TokenExpired("Your Superset session has ended; please sign in again.")
        access, _ = self._tokens(response, "renewal")
        return await self._signed_in(access, refresh_token)

    def _tokens(self, response: httpx.Response, what: str) -> tuple[str, str | None]:
        """(access token, refresh token or None) from a 200 login or refresh answer."""
        if response.status_code != 200:
            raise self._unavailable(f"answered HTTP {response.status_code} to the {what}")
        body = self._json(response)
        access = body.get("access_token") if isinstance(body, dict) else None
        if not isinstance(access, str) or not access:
            raise self._unavailable("sent no access token")
        refresh = body.get("refresh_token")
        return access, refresh if isinstance(refresh, str) and refresh else None

    async def _signed_in(self, access: str, refresh: str | None) -> SignedIn:
        identity = await self.verify(user_id=None, token=access)
        return SignedIn(identity=identity, access_token=access, refresh_token=refresh,
                        expires_at=token_expiry(access))

    # transport -------------------------------------------------------------------------

    async def _send(self, method: str, path: str, *, bearer: str | None = None,
                    json: dict[str, Any] | None = None) -> httpx.Response:
        headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
        try:
            return await self._http.request(method, path, headers=headers, json=json)
        except httpx.TransportError:
            # `from None`: the request (with a password or token) stays out of the chain.
            raise self._unavailable("could not be reached") from None

    def _json(self, response: httpx.Response) -> Any:
        try:
            return response.json()
        except ValueError:
            raise self._unavailable("sent an answer that is not JSON") from None

    def _unavailable(self, what: str) -> IdentityUnavailable:
        return IdentityUnavailable(f"Superset ({self.env}) {what} while checking who you "
                                   "are; try again in a moment.")

    async def aclose(self) -> None:
        await self._http.aclose()

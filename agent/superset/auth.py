"""How a Superset client proves who it is: a service login per environment, or a bearer
token passed through from the user.

Both hand out an access token; only the service login can renew it (refresh, then a fresh
login), and it does so only when Superset said the token expired, never blindly.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

import httpx

from agent.errors import ToolAuthError
from agent.superset.errors import error_for_response, error_for_transport

__all__ = ["Auth", "BearerAuth", "ServiceAuth", "is_expired_token"]

LOGIN_PATH = "/api/v1/security/login"
REFRESH_PATH = "/api/v1/security/refresh"


def is_expired_token(response: httpx.Response) -> bool:
    """Superset (flask-jwt-extended) says `401 {"msg": "Token has expired"}`."""
    if response.status_code != 401:
        return False
    try:
        body = response.json()
    except ValueError:
        return False
    message = str(body.get("msg") or body.get("message") or "") if isinstance(body, dict) else ""
    return "expired" in message.lower()


class Auth(Protocol):
    async def access_token(self, http: httpx.AsyncClient, env: str) -> str: ...

    async def renew(self, http: httpx.AsyncClient, env: str, stale: str) -> bool:
        """Get a new token after Superset said `stale` expired; False if this auth cannot."""
        ...


class BearerAuth:
    """A token someone else obtained (the user's, passed through); it cannot be renewed."""

    def __init__(self, token: str) -> None:
        if not token:
            raise ToolAuthError("No Superset token was supplied for this environment.")
        self._token = token

    async def access_token(self, http: httpx.AsyncClient, env: str) -> str:
        return self._token

    async def renew(self, http: httpx.AsyncClient, env: str, stale: str) -> bool:
        return False


class ServiceAuth:
    """Username/password login (`provider: db`) with refresh; one login at a time per env."""

    def __init__(self, username: str, password: str, *, provider: str = "db",
                 timeout_s: float = 20.0) -> None:
        self._username = username
        self._password = password
        self._provider = provider
        self._timeout = timeout_s
        self._access: str | None = None
        self._refresh: str | None = None
        self._lock = asyncio.Lock()
        self.logins = 0  # how many times we logged in; tests and diagnostics read it

    async def access_token(self, http: httpx.AsyncClient, env: str) -> str:
        async with self._lock:
            if self._access is None:
                await self._login(http, env)
            assert self._access is not None
            return self._access

    async def renew(self, http: httpx.AsyncClient, env: str, stale: str) -> bool:
        async with self._lock:
            if self._access != stale:  # another request renewed it meanwhile
                return True
            if self._refresh and await self._try_refresh(http, env):
                return True
            await self._login(http, env)
            return True

    async def _post(self, http: httpx.AsyncClient, env: str, path: str, *,
                    json: dict | None = None, bearer: str | None = None) -> httpx.Response:
        headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
        try:
            return await http.post(path, json=json, headers=headers, timeout=self._timeout)
        except httpx.TransportError as exc:
            raise error_for_transport(exc, env=env, what="login", is_write=False) from exc

    async def _login(self, http: httpx.AsyncClient, env: str) -> None:
        self._access = self._refresh = None
        response = await self._post(http, env, LOGIN_PATH, json={
            "username": self._username, "password": self._password,
            "provider": self._provider, "refresh": True})
        if response.status_code in (400, 401, 403):
            raise ToolAuthError(f"Superset ({env}) refused the service login for user "
                                f"{self._username!r}; check the configured credentials.")
        if response.status_code != 200:
            raise error_for_response(response, env=env, what="login")
        body = response.json()
        self._access, self._refresh = body["access_token"], body.get("refresh_token")
        self.logins += 1

    async def _try_refresh(self, http: httpx.AsyncClient, env: str) -> bool:
        response = await self._post(http, env, REFRESH_PATH, bearer=self._refresh)
        if response.status_code != 200:
            return False
        self._access = response.json().get("access_token")
        return bool(self._access)

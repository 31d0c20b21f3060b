"""Async client for Superset's REST API (`/api/v1/...`) of one environment.

One httpx client per environment keeps the session cookie that the CSRF token is bound to.
It never retries on its own: the only repeat is after Superset rejected a request at the
door (expired token, missing/stale CSRF token), when nothing can have happened yet.
Every failure leaves as an `agent.errors` type (see `agent.superset.errors`).
"""

from __future__ import annotations

import json as jsonlib
from collections.abc import Sequence
from typing import Any

import httpx

from agent.errors import ToolAuthError, ToolFailure
from agent.superset.auth import Auth, BearerAuth, is_expired_token
from agent.superset.errors import error_for_response, error_for_transport, superset_message
from agent.superset.rison import Filter, ids_query, list_query

__all__ = ["SupersetClient"]

API = "/api/v1"
CSRF_PATH = f"{API}/security/csrf_token/"
_READ_METHODS = frozenset({"GET", "HEAD"})


def _csrf_rejected(response: httpx.Response) -> bool:
    """400 'The CSRF token is missing/invalid' or a 302 to the login page (no cookie)."""
    if response.status_code in (301, 302, 303) and "/login" in response.headers.get("location",
                                                                                    ""):
        return True
    return response.status_code == 400 and "csrf" in superset_message(response).lower()


class SupersetClient:
    """The REST API of one Superset environment."""

    def __init__(
        self, env: str, *, base_url: str, auth: Auth, read_timeout_s: float = 20.0,
        write_timeout_s: float = 60.0, transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.env = env
        self.base_url = base_url.rstrip("/")
        self.auth = auth
        # With the person's own token, Superset's 401/403 is its verdict on that person.
        self.acts_for_user = isinstance(auth, BearerAuth)
        self._read_timeout = httpx.Timeout(read_timeout_s, connect=min(10.0, read_timeout_s))
        self._write_timeout = httpx.Timeout(write_timeout_s, connect=min(10.0, write_timeout_s))
        self._transport = transport
        # Accept JSON always: without it Superset answers command errors with an HTML 500.
        self._http = httpx.AsyncClient(base_url=self.base_url, transport=transport,
                                       headers={"Accept": "application/json"},
                                       follow_redirects=False)
        self._csrf: str | None = None
        self._csrf_for: str | None = None  # the access token the CSRF session belongs to

    def with_token(self, token: str) -> SupersetClient:
        """A client acting as the holder of `token` (passthrough auth). It has its own cookie
        jar, so one user's Superset session never serves another user."""
        return SupersetClient(self.env, base_url=self.base_url, auth=BearerAuth(token),
                              read_timeout_s=self._read_timeout.read or 20.0,
                              write_timeout_s=self._write_timeout.read or 60.0,
                              transport=self._transport)

    async def aclose(self) -> None:
        await self._http.aclose()

    # the one request path --------------------------------------------------------------

    async def request(
        self, method: str, path: str, *, what: str, params: dict[str, Any] | None = None,
        json: Any = None, files: dict[str, Any] | None = None,
        data: dict[str, str] | None = None,
    ) -> httpx.Response:
        """Send one request and return the 2xx response, or raise a translated error."""
        method = method.upper()
        is_write = method not in _READ_METHODS
        token = await self.auth.access_token(self._http, self.env)
        renewed = csrf_refreshed = False
        while True:
            headers = {"Authorization": f"Bearer {token}"}
            if is_write:
                headers.update(await self._csrf_headers(token))
            try:
                response = await self._http.request(
                    method, path, params=params, json=json, files=files, data=data,
                    headers=headers,
                    timeout=self._write_timeout if is_write else self._read_timeout)
            except httpx.TransportError as exc:
                raise error_for_transport(exc, env=self.env, what=what,
                                          is_write=is_write) from exc
            if is_expired_token(response) and not renewed:
                renewed = True
                if await self.auth.renew(self._http, self.env, token):
                    token = await self.auth.access_token(self._http, self.env)
                    continue
            if is_write and _csrf_rejected(response) and not csrf_refreshed:
                csrf_refreshed = True
                self._csrf = None
                continue
            if response.is_success:
                return response
            if response.is_redirect:
                raise ToolAuthError(f"Superset ({self.env}) redirected {what} to its login "
                                    "page: the session or CSRF token was not accepted.")
            raise error_for_response(response, env=self.env, what=what,
                                     as_user=self.acts_for_user)

    async def _csrf_headers(self, token: str) -> dict[str, str]:
        """Writes need `X-CSRFToken` plus the session cookie set when it was issued."""
        if self._csrf is None or self._csrf_for != token:
            response = await self._get_raw(CSRF_PATH, token=token, what="CSRF token")
            self._csrf = str(response.json().get("result") or "")
            self._csrf_for = token
        headers = {"X-CSRFToken": self._csrf}
        if self.base_url.startswith("https://"):
            headers["Referer"] = self.base_url + "/"  # Flask-WTF's strict SSL check wants it
        return headers

    async def _get_raw(self, path: str, *, token: str, what: str) -> httpx.Response:
        try:
            response = await self._http.get(path, headers={"Authorization": f"Bearer {token}"},
                                            timeout=self._read_timeout)
        except httpx.TransportError as exc:
            raise error_for_transport(exc, env=self.env, what=what, is_write=False) from exc
        if not response.is_success:
            raise error_for_response(response, env=self.env, what=what,
                                     as_user=self.acts_for_user)
        return response

    async def _json(self, method: str, path: str, *, what: str, **kwargs: Any) -> Any:
        response = await self.request(method, path, what=what, **kwargs)
        try:
            return response.json()
        except ValueError as exc:
            raise ToolFailure(f"Superset ({self.env}) sent a non-JSON answer for {what}.") from exc

    # resources ---------------------------------------------------------------------------

    async def get(self, resource: str, key: int | str, *, what: str | None = None) -> dict:
        """`GET /api/v1/{resource}/{id}` -> the `result` object."""
        body = await self._json("GET", f"{API}/{resource}/{key}",
                                what=what or f"{resource} {key}")
        return body.get("result") or {}

    async def get_json(self, path: str, *, what: str, params: dict | None = None) -> Any:
        return await self._json("GET", f"{API}/{path.lstrip('/')}", what=what, params=params)

    async def list(
        self, resource: str, *, filters: Sequence[Filter] = (), page: int = 0,
        page_size: int = 25, columns: Sequence[str] = (), order_column: str | None = None,
        order_direction: str = "asc",
    ) -> dict:
        """`GET /api/v1/{resource}/?q=...` -> `{count, ids, result}`."""
        q = list_query(filters=filters, page=page, page_size=page_size, columns=columns,
                       order_column=order_column, order_direction=order_direction)
        return await self._json("GET", f"{API}/{resource}/", params={"q": q},
                                what=f"{resource} list")

    async def list_all(self, resource: str, *, columns: Sequence[str] = (),
                       max_items: int = 10_000) -> list[dict]:
        """Every row of a list endpoint, paging by 100 (Superset's cap)."""
        rows: list[dict] = []
        page = 0
        while len(rows) < max_items:
            body = await self.list(resource, page=page, page_size=100, columns=columns)
            batch = body.get("result") or []
            rows.extend(batch)
            if not batch or len(rows) >= int(body.get("count") or 0):
                break
            page += 1
        return rows

    async def put(self, resource: str, pk: int, payload: dict, *, what: str) -> dict:
        return await self._json("PUT", f"{API}/{resource}/{pk}", json=payload, what=what)

    async def delete(self, resource: str, pk: int, *, what: str) -> dict:
        return await self._json("DELETE", f"{API}/{resource}/{pk}", what=what)

    async def post_json(self, path: str, payload: dict, *, what: str) -> Any:
        return await self._json("POST", f"{API}/{path.lstrip('/')}", json=payload, what=what)

    async def put_path(self, path: str, *, what: str) -> Any:
        return await self._json("PUT", f"{API}/{path.lstrip('/')}", what=what)

    # export / import bundles ---------------------------------------------------------------

    async def export(self, resource: str, ids: Sequence[int], *, what: str) -> bytes:
        """`GET /api/v1/{resource}/export/?q=!(ids)` -> the ZIP bundle's bytes."""
        response = await self.request("GET", f"{API}/{resource}/export/",
                                      params={"q": ids_query(ids)}, what=what)
        if not response.content.startswith(b"PK"):
            raise ToolFailure(f"Superset ({self.env}) did not return a ZIP bundle for {what}.")
        return response.content

    async def import_bundle(self, resource: str, bundle: bytes, *, overwrite: bool,
                            what: str, passwords: dict[str, str] | None = None) -> dict:
        """`POST /api/v1/{resource}/import/` as multipart `formData` (+ overwrite, passwords)."""
        data = {"overwrite": "true" if overwrite else "false"}
        if passwords:
            data["passwords"] = jsonlib.dumps(passwords)
        return await self._json(
            "POST", f"{API}/{resource}/import/", what=what, data=data,
            files={"formData": ("bundle.zip", bundle, "application/zip")})

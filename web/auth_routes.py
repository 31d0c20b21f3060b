"""Sign-in routes (SPEC §10): `POST /api/login`, `POST /api/refresh`, `GET /api/me`.

`/api/login` and `/api/refresh` exist with AUTH_MODE=superset only (404 otherwise): they
exchange Superset credentials, or Superset's refresh token, for the person's Superset
tokens, which go back to the caller and are kept nowhere here. Bodies are read by hand so
that no validation error can ever echo a password back. Responses are `no-store`.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Header, HTTPException, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from agent.errors import AgentError
from agent.identity.superset import SignedIn
from runtime import Runtime
from web.errors import to_http

__all__ = ["SignedInResponse", "build_auth_router"]

_MAX_BODY = 8 * 1024
_NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}


class SignedInResponse(BaseModel):
    user_id: str
    name: str
    user_jwt: str
    roles: list[str]
    expires_at: float | None  # epoch seconds of the access token's expiry
    refresh_token: str | None  # Superset's; send it to /api/refresh before `expires_at`


class MeResponse(BaseModel):
    user_id: str
    name: str
    roles: list[str]
    auth_mode: str


def _signed_in(signed: SignedIn) -> JSONResponse:
    body = SignedInResponse(
        user_id=signed.identity.user_id, name=signed.identity.name,
        user_jwt=signed.access_token, roles=signed.identity.roles,
        expires_at=signed.expires_at, refresh_token=signed.refresh_token)
    return JSONResponse(body.model_dump(), headers=_NO_STORE)


async def _body(request: Request) -> dict[str, Any]:
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > _MAX_BODY:
        raise HTTPException(status_code=413, detail="The request body is too large.")
    raw = await request.body()
    if len(raw) > _MAX_BODY:
        raise HTTPException(status_code=413, detail="The request body is too large.")
    try:
        body = json.loads(raw or b"null")
    except ValueError:
        raise HTTPException(status_code=400, detail="The body is not valid JSON.") from None
    if not isinstance(body, dict):
        raise HTTPException(status_code=400, detail="The body must be a JSON object.")
    return body


def _bearer(authorization: str | None) -> str:
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise HTTPException(status_code=401, detail="A bearer token is required.",
                            headers={"WWW-Authenticate": "Bearer"})
    return token.strip()


def build_auth_router(runtime: Runtime) -> APIRouter:
    router = APIRouter(tags=["sign-in"])  # under /api
    signin = runtime.signin

    @router.get("/me", response_model=MeResponse)
    async def me(authorization: str | None = Header(default=None)) -> MeResponse:
        """Who the bearer token belongs to, as this app sees it (role after mapping)."""
        token = _bearer(authorization) if not runtime.settings.is_demo or authorization \
            else ""
        try:
            identity = await runtime.agent.authenticate(None, token)
        except AgentError as exc:
            raise to_http(exc) from exc
        return MeResponse(user_id=identity.user_id, name=identity.name, roles=identity.roles,
                          auth_mode=runtime.settings.resolved_auth_mode)

    if signin is None:

        @router.post("/login", include_in_schema=False)
        @router.post("/refresh", include_in_schema=False)
        def no_signin() -> None:
            raise HTTPException(status_code=404, detail="Not found")

        return router

    @router.post("/login", response_model=SignedInResponse,
                 responses={401: {"description": "Wrong username or password."},
                            403: {"description": "No Superset role this app accepts."},
                            429: {"description": "Too many failed sign-ins (Retry-After)."},
                            503: {"description": "Superset cannot be reached."}})
    async def login(request: Request) -> JSONResponse:
        """`{"username", "password"}` -> the person's Superset tokens (AUTH_MODE=superset)."""
        body = await _body(request)
        client = request.client.host if request.client else None
        try:
            signed = await signin.sign_in(username=body.get("username"),
                                          password=body.get("password"), client=client)
        except AgentError as exc:
            raise to_http(exc) from None
        return _signed_in(signed)

    @router.post("/refresh", response_model=SignedInResponse,
                 responses={401: {"description": "The session ended: sign in again."}})
    async def refresh(request: Request) -> JSONResponse:
        """`{"refresh_token"}` -> a new access token before the old one expires."""
        body = await _body(request)
        try:
            signed = await signin.renew(refresh_token=body.get("refresh_token"))
        except AgentError as exc:
            raise to_http(exc) from None
        return _signed_in(signed)

    return router

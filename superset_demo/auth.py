"""Login, refresh, CSRF and current-user routes, and the guard every other route runs first.

Tokens are HS256 JWTs with flask-jwt-extended's claims (900 s access, 30 day refresh) plus
the environment name, so a token from one demo environment is refused by another, as two
real Superset instances with their own secrets would. CSRF follows Flask-WTF as Superset
configures it: writes need `X-CSRFToken` matching the `session` cookie, checked before
authentication; login, refresh and `/chart/data` are exempt.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
import uuid
from dataclasses import dataclass
from typing import Any

import jwt
from fastapi import APIRouter, Request, Response

from superset_demo.catalog import USERS
from superset_demo.errors import DemoError, csrf_error, invalid, jwt_error

__all__ = ["ACCESS_TTL_S", "EnvContext", "guard", "router", "user_of"]

ACCESS_TTL_S = 900
REFRESH_TTL_S = 30 * 86400
_CSRF_EXEMPT = ("/api/v1/security/login", "/api/v1/security/refresh", "/api/v1/chart/data")
_WRITE_METHODS = {"POST", "PUT", "DELETE", "PATCH"}
_ROLE_PERMISSIONS = {
    "Admin": [["can_read", "Dashboard"], ["can_write", "Dashboard"], ["can_read", "Chart"],
              ["can_write", "Chart"], ["can_read", "Dataset"], ["can_write", "Dataset"],
              ["can_read", "Database"], ["can_write", "Database"], ["can_export", "Dashboard"],
              ["all_database_access", "all_database_access"]],
    "Alpha": [["can_read", "Dashboard"], ["can_write", "Dashboard"], ["can_read", "Chart"],
              ["can_write", "Chart"], ["can_read", "Dataset"], ["can_write", "Dataset"],
              ["can_read", "Database"], ["can_export", "Dashboard"]],
    "Gamma": [["can_read", "Dashboard"], ["can_read", "Chart"], ["can_read", "Dataset"]],
}

router = APIRouter()


@dataclass
class EnvContext:
    """What every route of one environment needs; lives on its sub-app's `state.ctx`."""

    env: str
    secret: str
    store: Any  # DocumentStore; Any keeps this module free of the storage import
    access_ttl_s: int = ACCESS_TTL_S  # Superset's JWT_ACCESS_TOKEN_EXPIRES

    def issue(self, user_id: int, kind: str) -> str:
        now = int(time.time())
        ttl = self.access_ttl_s if kind == "access" else REFRESH_TTL_S
        claims = {"fresh": kind == "access", "iat": now, "jti": str(uuid.uuid4()),
                  "type": kind, "sub": str(user_id), "nbf": now,
                  "csrf": str(uuid.uuid4()), "exp": now + ttl, "env": self.env}
        return jwt.encode(claims, self.secret, algorithm="HS256")

    def decode(self, token: str) -> dict[str, Any]:
        try:
            claims = jwt.decode(token, self.secret, algorithms=["HS256"])
        except jwt.ExpiredSignatureError as exc:
            raise jwt_error(401, "Token has expired") from exc
        except jwt.DecodeError as exc:
            text = "Not enough segments" if token.count(".") != 2 else (
                "Signature verification failed")
            raise jwt_error(422, text) from exc
        except jwt.InvalidTokenError as exc:
            raise jwt_error(422, str(exc)) from exc
        if claims.get("env") != self.env:
            raise jwt_error(422, "Signature verification failed")
        return claims

    def sign(self, purpose: str, raw: str) -> str:
        digest = hmac.new(self.secret.encode(), f"{purpose}:{raw}".encode(), hashlib.sha256)
        return f"{raw}.{digest.hexdigest()[:27]}"

    def unsign(self, purpose: str, value: str | None) -> str | None:
        if not value or "." not in value:
            return None
        raw = value.rsplit(".", 1)[0]
        return raw if hmac.compare_digest(self.sign(purpose, raw), value) else None


def _ctx(request: Request) -> EnvContext:
    return request.app.state.ctx


def _bearer(request: Request) -> str:
    header = request.headers.get("authorization", "")
    if not header:
        raise jwt_error(401, "Missing Authorization Header")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token:
        raise jwt_error(422, "Bad Authorization header. Expected 'Authorization: Bearer <JWT>'")
    return token.strip()


def _check_csrf(request: Request, ctx: EnvContext) -> None:
    header = request.headers.get("x-csrftoken")
    if not header:
        raise csrf_error("The CSRF token is missing.")
    session = ctx.unsign("session", request.cookies.get("session"))
    if session is None:
        raise csrf_error("The CSRF session token is missing.")
    if ctx.unsign("csrf", header) != session:
        raise csrf_error("The CSRF tokens do not match.")


async def guard(request: Request) -> int:
    """CSRF on writes (first, as Flask-WTF runs before the view), then the access token."""
    ctx = _ctx(request)
    if request.method in _WRITE_METHODS and not request.url.path.endswith(_CSRF_EXEMPT):
        _check_csrf(request, ctx)
    claims = ctx.decode(_bearer(request))
    if claims.get("type") != "access":
        raise jwt_error(422, "Only access tokens are allowed")
    user_id = int(claims["sub"])
    request.state.user_id = user_id
    return user_id


def user_of(user_id: int) -> tuple[int, str, str, str, str, str]:
    return next(row for row in USERS if row[0] == user_id)


@router.post("/api/v1/security/login")
async def login(request: Request) -> dict[str, str]:
    try:
        body = await request.json()
    except ValueError as exc:
        raise invalid({"_schema": ["Invalid JSON"]}) from exc
    if not isinstance(body, dict) or not body.get("username") or not body.get("provider"):
        raise invalid({"_schema": ["Missing username, password or provider"]})
    user = next((row for row in USERS if row[1] == body["username"]), None)
    if user is None or body.get("provider") != "db" or not hmac.compare_digest(
        str(body.get("password", "")), user[5]
    ):
        raise DemoError(401, {"message": "Not authorized"})
    ctx = _ctx(request)
    tokens = {"access_token": ctx.issue(user[0], "access")}
    if body.get("refresh"):
        tokens["refresh_token"] = ctx.issue(user[0], "refresh")
    return tokens


@router.post("/api/v1/security/refresh")
async def refresh(request: Request) -> dict[str, str]:
    ctx = _ctx(request)
    claims = ctx.decode(_bearer(request))
    if claims.get("type") != "refresh":
        raise jwt_error(422, "Only refresh tokens are allowed")
    return {"access_token": ctx.issue(int(claims["sub"]), "access")}


@router.get("/api/v1/security/csrf_token/")
async def csrf_token(request: Request, response: Response) -> dict[str, str]:
    await guard(request)
    ctx = _ctx(request)
    raw = ctx.unsign("session", request.cookies.get("session")) or secrets.token_hex(20)
    response.set_cookie("session", ctx.sign("session", raw), httponly=True, samesite="lax",
                        path=request.scope.get("root_path") or "/")
    return {"result": ctx.sign("csrf", raw)}


@router.get("/api/v1/me/")
async def me(request: Request) -> dict[str, Any]:
    user = user_of(await guard(request))
    return {"result": {"email": f"{user[1]}@example.org", "first_name": user[2],
                       "id": user[0], "is_active": True, "is_anonymous": False,
                       "last_name": user[3], "login_count": 1, "username": user[1]}}


@router.get("/api/v1/me/roles/")
async def my_roles(request: Request) -> dict[str, Any]:
    user = user_of(await guard(request))
    return {"result": {
        "createdOn": "2025-11-03T08:00:00", "email": f"{user[1]}@example.org",
        "firstName": user[2], "isActive": True, "isAnonymous": False, "lastName": user[3],
        "loginCount": 1, "permissions": {}, "roles": {user[4]: _ROLE_PERMISSIONS[user[4]]},
        "userId": user[0], "username": user[1],
    }}

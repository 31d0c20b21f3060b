"""REST routes under /api: health, (demo mode only) demo tokens and (outside it) sign-in
(SPEC §10), the audit log for admins (SPEC §5) with the user's token as a bearer token, and
side questions (SPEC §9).

Two health routes: `/api/health/live` says only that the process serves (for a restart
policy: restarting does not cure a database outage), `/api/health` that it can serve
requests, which needs the database (for a load balancer: 503 takes the replica out).
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from fastapi import APIRouter, Header, HTTPException, Query
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict

from agent.errors import AgentError
from agent.identity.demo import new_visitor
from runtime import Runtime
from storage import Database
from storage.retry import DATABASE_UNAVAILABLE
from web.auth_routes import build_auth_router
from web.errors import to_http
from web.side_routes import build_side_router

__all__ = ["build_api_router"]


class DemoTokenRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    user: Literal["viewer", "editor", "admin"]


class DemoTokenResponse(BaseModel):
    user_id: str
    user_jwt: str
    roles: list[str]


class DatabaseProbe:
    """`SELECT 1` with a deadline, at most one in flight: while the database hangs, probes
    that arrive meanwhile wait for the same one instead of each taking a thread."""

    def __init__(self, db: Database, timeout_s: float) -> None:
        self.db = db
        self.timeout_s = timeout_s
        self._probe: asyncio.Future[None] | None = None

    async def healthy(self) -> bool:
        if self._probe is None or self._probe.done():
            self._probe = asyncio.ensure_future(asyncio.to_thread(self.db.ping))
            # Retrieved here, so a probe that fails after its deadline logs no warning.
            self._probe.add_done_callback(lambda done: done.cancelled() or done.exception())
        try:
            await asyncio.wait_for(asyncio.shield(self._probe), self.timeout_s)
        except Exception:  # a timeout, an outage, refused credentials: not ready either way
            return False
        return True


def build_api_router(runtime: Runtime) -> APIRouter:
    router = APIRouter(prefix="/api")
    probe = DatabaseProbe(runtime.db, runtime.settings.database_health_timeout_s)

    @router.get("/audit")
    async def audit_log(authorization: str | None = Header(default=None),
                  limit: int = Query(default=100, ge=1, le=500),
                  before_id: int | None = Query(default=None, ge=1)) -> dict[str, object]:
        """Writes and decisions, newest first; admins only. No route edits or deletes."""
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise HTTPException(status_code=401, detail="A bearer token is required.")
        try:
            entries = await runtime.agent.audit_entries(
                user_id=None, user_jwt=token.strip(), limit=limit, before_id=before_id)
        except AgentError as exc:
            raise to_http(exc) from exc
        return {"count": len(entries), "entries": entries}

    @router.get("/health", responses={503: {"description": "The database does not answer "
                                            "(see Retry-After)."}})
    async def health() -> Any:
        """Ready to serve: 200 when the database answers within
        `database_health_timeout_s`, else 503."""
        body: dict[str, object] = {
            "status": "ok", "database": runtime.db.dialect,
            "model": runtime.settings.agent_model, "demo": runtime.settings.is_demo,
            "auth_mode": runtime.settings.resolved_auth_mode}
        if await probe.healthy():
            return body
        return JSONResponse({**body, "status": "unavailable", "detail": DATABASE_UNAVAILABLE},
                            status_code=503, headers={"Retry-After": "5"})

    @router.get("/health/live")
    def live() -> dict[str, str]:
        """The process is up and serving; says nothing about the database."""
        return {"status": "ok"}

    if runtime.settings.is_demo:

        @router.post("/demo/token", response_model=DemoTokenResponse)
        def demo_token(body: DemoTokenRequest) -> DemoTokenResponse:
            try:
                # Every request is its own visitor: two programs never share conversations.
                identity, token = runtime.issuer.mint_demo(body.user, visitor=new_visitor())
            except AgentError as exc:
                raise to_http(exc) from exc
            return DemoTokenResponse(user_id=identity.user_id, user_jwt=token,
                                     roles=identity.roles)

    else:

        @router.post("/demo/token", include_in_schema=False)
        def no_demo_token() -> None:
            raise HTTPException(status_code=404, detail="Not found")

    router.include_router(build_auth_router(runtime))
    router.include_router(build_side_router(runtime))
    return router

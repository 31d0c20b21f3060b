"""REST routes under /api: health, (demo mode only) demo tokens and (outside it) sign-in
(SPEC §10), the audit log for admins (SPEC §5) with the user's token as a bearer token, and
side questions (SPEC §9)."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Header, HTTPException, Query
from pydantic import BaseModel, ConfigDict

from agent.errors import AgentError
from agent.identity.demo import new_visitor
from agent.runtime import Runtime
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


def build_api_router(runtime: Runtime) -> APIRouter:
    router = APIRouter(prefix="/api")

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

    @router.get("/health")
    def health() -> dict[str, object]:
        return {"status": "ok", "database": runtime.db.dialect,
                "model": runtime.settings.agent_model, "demo": runtime.settings.is_demo,
                "auth_mode": runtime.settings.resolved_auth_mode}

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

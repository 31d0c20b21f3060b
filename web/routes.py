"""REST routes under /api: health and (demo mode only) demo tokens (SPEC §10)."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, HTTPException
from pydantic import BaseModel, ConfigDict

from agent.errors import AgentError
from agent.runtime import Runtime
from web.errors import to_http

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

    @router.get("/health")
    def health() -> dict[str, object]:
        return {"status": "ok", "database": runtime.db.dialect,
                "model": runtime.settings.agent_model, "demo": runtime.settings.is_demo}

    if runtime.settings.is_demo:

        @router.post("/demo/token", response_model=DemoTokenResponse)
        def demo_token(body: DemoTokenRequest) -> DemoTokenResponse:
            try:
                identity, token = runtime.issuer.mint_demo(body.user)
            except AgentError as exc:
                raise to_http(exc) from exc
            return DemoTokenResponse(user_id=identity.user_id, user_jwt=token,
                                     roles=identity.roles)

    else:

        @router.post("/demo/token", include_in_schema=False)
        def no_demo_token() -> None:
            raise HTTPException(status_code=404, detail="Not found")

    return router

"""REST and SSE routes for side questions (SPEC §9 HTTP contract), over SideQuestionService.

Every route authenticates the bearer token (in demo mode no token is the demo viewer) and
checks that the caller owns the parent conversation; a foreign or unknown parent, and an
unknown or cleared request, all answer the same 404 so nothing leaks about existence.
Status codes come from the one adapter in `web.errors`.
"""

# No `from __future__ import annotations`: FastAPI must see the closure-local `Caller`
# dependency alias when it inspects the route signatures.

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Header, HTTPException, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict, Field, field_validator
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.concurrency import run_in_threadpool

from agent.errors import AgentError
from agent.identity import Identity
from runtime import Runtime
from side_questions.errors import NO_SUCH_REQUEST, NotFound, SideQuestionError
from side_questions.service import PAGE_SIZE, SideQuestionService
from side_questions.views import SideRequestPublic
from web.errors import to_http
from web.side_render import drop_nul

__all__ = [
    "MAX_BODY_BYTES",
    "SideHistoryResponse",
    "SideQuestionCreate",
    "SnapshotMeta",
    "build_side_router",
]

MAX_BODY_BYTES = 64 * 1024  # 4000 characters, even fully \u-escaped, fit well below this
_ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
_CLIENT_ID_PATTERN = r"^[A-Za-z0-9_.:-]{1,128}$"

ConvId = Annotated[str, Path(pattern=_ID_PATTERN, description="The parent conversation id.")]
RequestId = Annotated[str, Path(pattern=_ID_PATTERN, description="A side question id.")]


class SideQuestionCreate(BaseModel):
    """Body of a submission. Over 4000 characters (after trimming) answers 413."""

    model_config = ConfigDict(extra="forbid")
    question: str = Field(description="The side question, at most 4000 characters.")
    client_request_id: str | None = Field(
        default=None, pattern=_CLIENT_ID_PATTERN,
        description="Idempotency key: the same id and question return the same request.")

    @field_validator("question")
    @classmethod
    def _drop_nul(cls, value: str) -> str:
        return drop_nul(value)


class SnapshotMeta(BaseModel):
    run_id: str
    version: int | None
    time: str | None
    model: str | None


class SideHistoryResponse(BaseModel):
    items: list[SideRequestPublic] = Field(description="Newest first, 20 a page.")
    running: SideRequestPublic | None
    snapshot: SnapshotMeta | None
    next_cursor: int = Field(description="Pass as `before` for the next page; 0 = no more.")


def _error(description: str) -> dict[str, Any]:
    return {"description": description,
            "content": {"application/json": {"example": {"detail": "..."}}}}


_AUTH = {401: _error("Missing, invalid or expired token."),
         404: _error("No such conversation or request for this caller.")}


class SideRoute(APIRoute):
    """Rejects oversize bodies (413) and unparsable JSON (400) before validation (422)."""

    def get_route_handler(self) -> Callable[[Request], Awaitable[Response]]:
        handler = super().get_route_handler()

        async def route(request: Request) -> Response:
            length = request.headers.get("content-length", "")
            if length.isdigit() and int(length) > MAX_BODY_BYTES:
                raise HTTPException(status_code=413, detail="The request body is too large.")
            try:
                return await handler(request)
            except RequestValidationError as exc:
                if any(error.get("type") == "json_invalid" for error in exc.errors()):
                    raise HTTPException(status_code=400,
                                        detail="The body is not valid JSON.") from exc
                raise

        return route


def build_side_router(runtime: Runtime) -> APIRouter:
    router = APIRouter(tags=["side questions"], route_class=SideRoute)  # under /api
    bearer = HTTPBearer(auto_error=False, description="The user's token (user_jwt).")
    open_streams: dict[str, int] = {}  # user -> SSE streams open in this process

    def service() -> SideQuestionService:
        return runtime.side_questions

    async def identity(
        request: Request,
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    ) -> Identity:
        """The caller from `Authorization: Bearer <user_jwt>`; none is the demo viewer (demo
        mode only: elsewhere 401)."""
        if request.headers.get("authorization") and credentials is None:
            raise HTTPException(status_code=401, detail="Use 'Authorization: Bearer <token>'.",
                                headers={"WWW-Authenticate": "Bearer"})
        token = credentials.credentials if credentials is not None else None
        try:
            return await runtime.agent.authenticate(None, token)
        except AgentError as exc:
            raise to_http(exc) from exc

    Caller = Annotated[Identity, Depends(identity)]

    async def own_parent(caller: Identity, conv_id: str) -> None:
        try:
            await run_in_threadpool(runtime.agent.check_owner, caller, conv_id)
        except AgentError as exc:
            raise to_http(exc) from exc

    async def own_request(caller: Identity, request_id: str) -> None:
        """Someone else's request answers exactly like one that does not exist. A request
        running here whose submission checked this caller's ownership needs no read."""
        if service().verified_owner(request_id) == caller.user_id:
            return
        try:
            parent = await service().parent_of(request_id)
            await run_in_threadpool(runtime.agent.check_owner, caller, parent)
        except (SideQuestionError, AgentError):
            raise to_http(NotFound(NO_SUCH_REQUEST)) from None

    @router.get("/conversations/{conv_id}/side-questions", response_model=SideHistoryResponse,
                responses=_AUTH)
    async def side_history(
        conv_id: ConvId, caller: Caller,
        before: Annotated[int | None, Query(ge=0, le=2**31 - 1,
                                            description="next_cursor of the previous page")
                          ] = None,
    ) -> dict[str, Any]:
        """The side history newest first (20 a page), the running request, the snapshot."""
        await own_parent(caller, conv_id)
        page = await service().history(parent_id=conv_id, before=before, limit=PAGE_SIZE)
        return page.as_dict()

    @router.post(
        "/conversations/{conv_id}/side-questions", status_code=202,
        response_model=SideRequestPublic,
        responses={**_AUTH,
                   200: {"model": SideRequestPublic,
                         "description": "Same client_request_id and question as before."},
                   400: _error("Body not JSON, or a blank question."),
                   409: _error("No snapshot, model configuration changed, a side question "
                               "is running, or client_request_id reused."),
                   413: _error("Question over 4000 characters or body too large."),
                   429: _error("This process runs its maximum of side questions, or this "
                               "person their share (2 at once, a rate); see Retry-After.")})
    async def side_submit(conv_id: ConvId, caller: Caller,
                          body: Annotated[SideQuestionCreate, Body()],
                          response: Response) -> SideRequestPublic:
        """Ask a side question from the latest snapshot; 202 new, 200 repeated submission."""
        try:  # the ownership check is part of the submission's one transaction
            result = await service().submit(parent_id=conv_id, question=body.question,
                                            client_request_id=body.client_request_id,
                                            owner_id=caller.user_id, verify_owner=True)
        except (SideQuestionError, AgentError) as exc:
            raise to_http(exc) from exc
        if not result.created:
            response.status_code = 200
        return result.request

    @router.delete("/conversations/{conv_id}/side-questions",
                   response_model=SideHistoryResponse, responses=_AUTH)
    async def side_clear(conv_id: ConvId, caller: Caller) -> dict[str, Any]:
        """Cancel the running side question and delete the side history (snapshot stays)."""
        await own_parent(caller, conv_id)
        await service().clear(conv_id)
        page = await service().history(parent_id=conv_id)
        return page.as_dict()

    @router.post("/side-questions/{request_id}/cancel", response_model=SideRequestPublic,
                 responses=_AUTH)
    async def side_cancel(request_id: RequestId, caller: Caller) -> SideRequestPublic:
        """Stop only this side question; returns its (normally terminal) state."""
        await own_request(caller, request_id)
        try:
            return await service().cancel(request_id)
        except SideQuestionError as exc:
            raise to_http(exc) from exc

    @router.get(
        "/side-questions/{request_id}/events", response_class=EventSourceResponse,
        responses={**_AUTH, 200: {"description": "Server-sent events: `id` the sequence, "
                                  "`data` the cumulative request object; `cleared` on clear.",
                                  "content": {"text/event-stream": {}}},
                   429: _error("This person already follows the most streams allowed.")})
    async def side_events(
        request_id: RequestId, caller: Caller,
        last_event_id: Annotated[int | None, Header(alias="Last-Event-ID", ge=0,
                                                    le=2**31 - 1)] = None,
    ) -> EventSourceResponse:
        """Follow a side question until it ends; Last-Event-ID resumes after that sequence.
        At most `sse_max_per_user` streams per person at once (429 beyond, per process)."""
        await own_request(caller, request_id)
        cap = runtime.settings.sse_max_per_user
        if open_streams.get(caller.user_id, 0) >= cap:
            raise HTTPException(status_code=429, headers={"Retry-After": "2"},
                                detail=f"You already follow {cap} side questions; close one.")
        open_streams[caller.user_id] = open_streams.get(caller.user_id, 0) + 1

        async def counted() -> AsyncIterator[ServerSentEvent | bytes]:
            try:
                async for event in _events(service(), request_id, last_event_id or 0):
                    yield event
            finally:
                left = open_streams.get(caller.user_id, 1) - 1
                if left > 0:
                    open_streams[caller.user_id] = left
                else:
                    open_streams.pop(caller.user_id, None)

        return EventSourceResponse(counted(), ping=15)

    return router


async def _events(service: SideQuestionService, request_id: str,
                  after: int) -> AsyncIterator[ServerSentEvent | bytes]:
    try:
        async for update in service.follow(request_id):
            if update.sequence <= after:
                continue
            if update.kind == "cleared" or update.request is None:
                yield ServerSentEvent(json.dumps({"id": request_id, "status": "cleared"}),
                                      event="cleared", id=str(update.sequence))
                return
            yield _state_frame(update.sequence, update.request_json)
    except SideQuestionError:  # cleared between the ownership check and the first read
        yield ServerSentEvent(json.dumps({"id": request_id, "status": "cleared"}),
                              event="cleared", id=str(after + 1))


def _state_frame(sequence: int, request_json: str) -> bytes:
    """One state event on the wire, framed as `ServerSentEvent.encode` frames it (same
    separator; JSON is one line and an int id has no line break to clean), from the update's
    shared JSON: the library's encoder split and re-joined the whole cumulative answer for
    every follower of every update (10 µs for a 3.7 KB answer; this, 0.2 µs)."""
    return f"id: {sequence}\r\ndata: {request_json}\r\n\r\n".encode()

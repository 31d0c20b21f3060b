"""Request hygiene for every route, REST and Gradio alike (SPEC §2, §9).

`BodyLimit` refuses a body over the limit while it is being read (a `Content-Length` that
says so at once; a chunked body as soon as it passes the limit), so nobody makes the app
buffer 50 MB before it says 413. `quiet_validation_errors` keeps FastAPI's 422 but never
echoes the input back (a 1 MB field would come back as 1 MB of error, and a NaN could not
even be serialised), and turns unreadable JSON into a plain 400.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["BodyLimit", "quiet_validation_errors"]

_MAX_DETAIL = 200


class _TooLarge(BaseException):
    """Raised from `receive`; a BaseException so that no framework's `except Exception`
    (FastAPI turns any body-reading error into a 400) swallows it on its way here."""


class BodyLimit:
    """ASGI middleware: HTTP request bodies of at most `max_bytes`."""

    def __init__(self, app: ASGIApp, *, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope.get("headers") or []).get(b"content-length", b"")
        if length.isdigit() and int(length) > self.max_bytes:
            await self._refuse(send)
            return
        seen = 0
        started = False

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise _TooLarge
            return message

        async def watched(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted, watched)
        except _TooLarge:
            if not started:
                await self._refuse(send)

    async def _refuse(self, send: Send) -> None:
        body = json.dumps({"detail": f"The request body is larger than {self.max_bytes:,} "
                                     "bytes."}).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


def _summary(error: dict[str, Any]) -> dict[str, Any]:
    """One validation problem without its input (and without `ctx`, which can hold it)."""
    return {"type": error.get("type"), "loc": list(error.get("loc") or [])[:6],
            "msg": str(error.get("msg") or "")[:_MAX_DETAIL]}


async def _validation_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = list(exc.errors())
    if any(error.get("type") == "json_invalid" for error in errors):
        return JSONResponse({"detail": "The body is not valid JSON."}, status_code=400)
    return JSONResponse({"detail": [_summary(error) for error in errors[:10]]},
                        status_code=422)


def quiet_validation_errors(app: FastAPI) -> None:
    app.add_exception_handler(RequestValidationError, _validation_error)

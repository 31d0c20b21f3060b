"""A check of raw calls to the mounted Gradio app before Gradio reads them.

Gradio answers a call with too few values, or a value its component cannot take (a list for
a Number, NaN for a Number with a precision), by raising an error that quotes every value it
received and printing that traceback to the server log: a token sent in the wrong place
would land in the log. `gradio_client` programs send what the endpoint documents; a raw
HTTP caller that does not gets a plain 422 from here, and nothing is logged. The body must
be a JSON object whose `data` is a list (Gradio's own shape for a call).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["GradioCallGuard", "arities"]

_CALL = re.compile(r"/gradio_api/(?:call|run|api)/(?P<name>[^/]+)/?$")
_JOIN = re.compile(r"/gradio_api/queue/join/?$")


Kind = Literal["number", "choice", "any"]
Signature = tuple[Kind, ...]


def _kind(component: Any) -> Kind:
    """What a component's preprocessing can take without raising (Textbox and JSON: all)."""
    name = type(component).__name__
    if name in ("Number", "Slider"):
        return "number"
    if name in ("Dropdown", "Radio"):
        return "choice"
    return "any"


def arities(blocks: Any) -> tuple[dict[str, Signature], dict[int, Signature]]:
    """The kinds of values each event takes: by API name and by function index."""
    by_name: dict[str, Signature] = {}
    by_index: dict[int, Signature] = {}
    for index, fn in blocks.fns.items():
        signature = tuple(_kind(component) for component in fn.inputs)
        by_index[int(index)] = signature
        if fn.api_name:
            by_name[str(fn.api_name)] = signature
    return by_name, by_index


def _fits(kind: Kind, value: Any) -> bool:
    if value is None or kind == "any":
        return True
    if kind == "number":
        return (isinstance(value, int | float) and not isinstance(value, bool)
                and math.isfinite(value))
    return isinstance(value, str)


class GradioCallGuard:
    def __init__(self, app: ASGIApp, *, prefix: str, by_name: Mapping[str, Signature],
                 by_index: Mapping[int, Signature]) -> None:
        self.app = app
        self.prefix = prefix.rstrip("/")
        self.by_name, self.by_index = dict(by_name), dict(by_index)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if (scope["type"] != "http" or scope.get("method") != "POST"
                or not path.startswith(self.prefix + "/gradio_api/")):
            await self.app(scope, receive, send)
            return
        if path.endswith(("/gradio_api/cancel", "/gradio_api/reset")):
            await self._nothing_to_cancel(scope, receive, send)
            return
        call, join = _CALL.search(path), _JOIN.search(path)
        if not call and not join:
            await self.app(scope, receive, send)
            return
        body = await _read(receive)
        problem = self._problem(body, call.group("name") if call else None)
        if problem:
            await _answer(send, 422, problem)
            return
        await self.app(scope, _replay(body, receive), send)

    async def _nothing_to_cancel(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Gradio's page sends `cancels=` for every listed event, also those that never
        started, with `event_id: null`, which Gradio answers 422 (a console error on every
        conversation switch). Nothing is running there: say so with Gradio's own answer."""
        body = await _read(receive)
        try:
            payload = json.loads(body or b"null")
        except (ValueError, RecursionError):
            payload = None
        if isinstance(payload, dict) and payload.get("event_id") is None:
            await _answer(send, 200, None, body={"success": True})
            return
        await self.app(scope, _replay(body, receive), send)

    def _problem(self, body: bytes, name: str | None) -> str | None:
        try:
            payload = json.loads(body or b"null")
        except (ValueError, RecursionError):
            return "The body is not valid JSON."
        if not isinstance(payload, dict) or not isinstance(payload.get("data"), list):
            return 'The body must be a JSON object with a "data" list.'
        index = payload.get("fn_index")
        if name is not None and name != "predict":
            wanted = self.by_name.get(name)
        elif isinstance(index, int) and not isinstance(index, bool):
            wanted = self.by_index.get(index)
        else:
            wanted = None
        if wanted is None:
            return None  # unknown names and indices: Gradio's own 404 says so
        return _mismatch(wanted, payload["data"])


def _mismatch(wanted: Signature, data: Sequence[Any]) -> str | None:
    if len(data) < len(wanted):
        return f'This endpoint takes {len(wanted)} values in "data"; {len(data)} were sent.'
    for position, (kind, value) in enumerate(zip(wanted, data, strict=False)):
        if not _fits(kind, value):
            what = "a finite number" if kind == "number" else "a string"
            return f'Value {position} of "data" must be {what} or null.'
    return None


async def _read(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            break
    return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """The body once more, then whatever the connection says next (a disconnect)."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


async def _answer(send: Send, status: int, detail: str | None, *,
                  body: dict[str, Any] | None = None) -> None:
    payload = json.dumps(body if body is not None else {"detail": detail}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(payload)).encode())]})
    await send({"type": "http.response.body", "body": payload})

"""A scripted OpenAI-compatible chat server on loopback, the network-boundary fake for models.

Tests queue replies (`reply_text`, `reply_tool_calls`, `reply_error`, ...) and point litellm
at `server.base_url` ("http://127.0.0.1:PORT/v1"). Every request body is recorded in
`server.requests`, so tests assert on the messages and tools litellm really sent. Each
request takes the next queued reply; with none left the server answers 500 with a message
that says so, which makes a missing script visible in the test's failure.

A reply can stream its text in N deltas, its tool calls in argument fragments, put usage in
the last chunk, sleep between chunks, stop at a "hold" point until the test releases it
(for deterministic cancellation tests), cut the connection mid-stream, or send an error
event after some chunks (a provider failing mid-answer). A test of many turns can answer
by rule instead of by queue (`respond_with`): the rule sees each request body first.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.fakes.loopback import LoopbackServer
from tests.waits import EVENT_WAIT_S

__all__ = [
    "CONTEXT_OVERFLOW_BODY",
    "ScriptedCall",
    "ScriptedOpenAIServer",
    "ScriptedReply",
    "split_evenly",
]

CONTEXT_OVERFLOW_BODY: dict[str, Any] = {
    "error": {
        "message": "This model's maximum context length is 8192 tokens. However, your messages "
        "resulted in 9001 tokens. Please reduce the length of the messages.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
}


def _error_body(status: int) -> dict[str, Any]:
    if status == 429:
        return {"error": {"message": "Rate limit reached for scripted in organization org-test.",
                          "type": "requests", "param": None, "code": "rate_limit_exceeded"}}
    if status == 401:
        return {"error": {"message": "Incorrect API key provided.",
                          "type": "invalid_request_error", "param": None,
                          "code": "invalid_api_key"}}
    return {"error": {"message": "The scripted server had an error while processing your "
                      "request.", "type": "server_error", "param": None, "code": None}}


def split_evenly(text: str, parts: int) -> list[str]:
    """Split `text` into `parts` non-empty pieces (fewer if the text is shorter)."""
    parts = max(1, min(parts, len(text))) if text else 0
    if not parts:
        return []
    size, extra = divmod(len(text), parts)
    pieces, start = [], 0
    for index in range(parts):
        end = start + size + (1 if index < extra else 0)
        pieces.append(text[start:end])
        start = end
    return pieces


@dataclass
class ScriptedCall:
    """One tool call the scripted model makes; `arguments` is sent verbatim (a JSON string)."""

    name: str
    arguments: str = "{}"
    id: str | None = field(default_factory=lambda: f"call_{uuid.uuid4().hex[:16]}")
    fragments: int = 3


@dataclass
class ScriptedReply:
    """What the server does with one request."""

    text: str = ""
    text_deltas: int = 1
    tool_calls: list[ScriptedCall] = field(default_factory=list)
    usage: dict[str, int] | None = None
    status: int = 200
    error_body: dict[str, Any] | None = None
    delay_s: float = 0.0  # before every chunk
    cut_after: int | None = None  # drop the connection after this many chunks
    hold_after: int | None = None  # stop after this many chunks until `release` is set
    reached: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    finish_reason: str | None = None
    error_after: int | None = None  # chunks sent before an in-stream context-overflow error
    send_usage: bool = True  # False: a provider that never reports usage in its stream

    async def until_reached(self, timeout_s: float = EVENT_WAIT_S) -> bool:
        """Wait (off the event loop) until the server holds this reply; False on timeout."""
        return await asyncio.to_thread(self.reached.wait, timeout_s)

    def resolved_usage(self) -> dict[str, int]:
        if self.usage is not None:
            return self.usage
        completion = max(1, len(self.text) // 4)
        return {"prompt_tokens": 10, "completion_tokens": completion,
                "total_tokens": 10 + completion}


class _CutConnection(Exception):
    """Raised inside the body iterator so uvicorn drops the connection mid-stream."""


@dataclass
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or [])

    @property
    def tool_names(self) -> list[str]:
        return [t.get("function", {}).get("name", "") for t in self.body.get("tools") or []]


class ScriptedOpenAIServer(LoopbackServer):
    """Starts on a free loopback port in a background thread; use as a context manager."""

    def __init__(self, *, model: str = "scripted") -> None:
        self.model = model
        self.requests: list[RecordedRequest] = []
        self.disconnects = 0  # streams the client abandoned before the end
        self._replies: deque[ScriptedReply] = deque()
        self._responder: Callable[[dict[str, Any]], ScriptedReply | None] | None = None
        self._lock = threading.Lock()
        self.in_flight = 0  # streams open right now, and the most ever open at once
        self.max_in_flight = 0
        super().__init__(self._app(), name="scripted-openai")

    # scripting ---------------------------------------------------------------------------

    def push(self, reply: ScriptedReply) -> ScriptedReply:
        with self._lock:
            self._replies.append(reply)
        return reply

    def reply_text(self, text: str, *, deltas: int = 1, **options: Any) -> ScriptedReply:
        return self.push(ScriptedReply(text=text, text_deltas=deltas, **options))

    def reply_tool_calls(self, *calls: ScriptedCall, text: str = "", **options: Any
                         ) -> ScriptedReply:
        return self.push(ScriptedReply(text=text, tool_calls=list(calls), **options))

    def reply_error(self, status: int, body: dict[str, Any] | None = None) -> ScriptedReply:
        return self.push(ScriptedReply(status=status, error_body=body or _error_body(status)))

    def reply_context_overflow(self) -> ScriptedReply:
        return self.reply_error(400, CONTEXT_OVERFLOW_BODY)

    def respond_with(self, responder: Callable[[dict[str, Any]], ScriptedReply | None] | None
                     ) -> None:
        """Answer each request with `responder(body)` when it returns a reply; queued
        replies answer the rest (None: back to the queue alone)."""
        with self._lock:
            self._responder = responder

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._replies)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # lifecycle ---------------------------------------------------------------------------

    def start(self) -> ScriptedOpenAIServer:
        super().start()
        return self

    def stop(self) -> None:
        with self._lock:  # let any held stream finish so shutdown is quick
            for reply in self._replies:
                reply.release.set()
        super().stop()

    def __enter__(self) -> ScriptedOpenAIServer:
        return self.start()

    # the HTTP side -------------------------------------------------------------------------

    def _app(self) -> Starlette:
        return Starlette(routes=[
            Route("/v1/chat/completions", self._chat, methods=["POST"]),
            Route("/chat/completions", self._chat, methods=["POST"]),
            Route("/v1/models", self._models, methods=["GET"]),
        ])

    async def _models(self, _: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": self.model, "object": "model"}]})

    async def _chat(self, request: Request) -> Response:
        body = await request.json()
        with self._lock:
            self.requests.append(RecordedRequest(path=request.url.path,
                                                 headers=dict(request.headers), body=body))
            responder = self._responder
        reply = responder(body) if responder is not None else None
        with self._lock:
            if reply is None and self._replies:
                reply = self._replies.popleft()
        if reply is None:
            return JSONResponse({"error": {"message": "scripted server: no reply queued for "
                                           f"request #{len(self.requests)}",
                                           "type": "server_error", "code": None}},
                                status_code=500)
        if reply.status != 200:
            return JSONResponse(reply.error_body or _error_body(reply.status),
                                status_code=reply.status)
        if not body.get("stream"):
            return JSONResponse(self._completion(reply))
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        return StreamingResponse(self._sse(reply, include_usage),
                                 media_type="text/event-stream")

    # payloads ------------------------------------------------------------------------------

    def _envelope(self, completion_id: str, **fields: Any) -> dict[str, Any]:
        return {"id": completion_id, "object": "chat.completion.chunk",
                "created": int(time.time()), "model": self.model,
                "system_fingerprint": "fp_scripted", **fields}

    def _chunks(self, reply: ScriptedReply, include_usage: bool) -> Iterator[dict[str, Any]]:
        cid = f"chatcmpl-{uuid.uuid4().hex[:12]}"

        def choice(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return self._envelope(cid, choices=[{"index": 0, "delta": delta, "logprobs": None,
                                                 "finish_reason": finish}])

        yield choice({"role": "assistant", "content": ""})
        for piece in split_evenly(reply.text, reply.text_deltas):
            yield choice({"content": piece})
        for index, call in enumerate(reply.tool_calls):
            head: dict[str, Any] = {"index": index, "type": "function",
                                    "function": {"name": call.name, "arguments": ""}}
            if call.id is not None:
                head["id"] = call.id
            yield choice({"tool_calls": [head]})
            for piece in split_evenly(call.arguments, call.fragments):
                yield choice({"tool_calls": [{"index": index,
                                              "function": {"arguments": piece}}]})
        finish = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
        yield choice({}, finish)
        if include_usage and reply.send_usage:
            yield self._envelope(cid, choices=[], usage=reply.resolved_usage())

    async def _sse(self, reply: ScriptedReply, include_usage: bool) -> AsyncIterator[bytes]:
        finished = False
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            for count, chunk in enumerate(self._chunks(reply, include_usage)):
                if reply.error_after is not None and count >= reply.error_after:
                    yield f"data: {json.dumps(CONTEXT_OVERFLOW_BODY)}\n\n".encode()
                    finished = True
                    return
                if reply.cut_after is not None and count >= reply.cut_after:
                    raise _CutConnection
                if reply.hold_after is not None and count == reply.hold_after:
                    reply.reached.set()
                    while not reply.release.is_set():
                        await asyncio.sleep(0.01)
                if reply.delay_s:
                    await asyncio.sleep(reply.delay_s)
                yield f"data: {json.dumps(chunk)}\n\n".encode()
            yield b"data: [DONE]\n\n"
            finished = True
        finally:
            with self._lock:
                self.in_flight -= 1
            if not finished and reply.cut_after is None:
                self.disconnects += 1

    def _completion(self, reply: ScriptedReply) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
        if reply.tool_calls:
            message["tool_calls"] = [
                {"id": call.id or f"call_{index}", "type": "function",
                 "function": {"name": call.name, "arguments": call.arguments}}
                for index, call in enumerate(reply.tool_calls)
            ]
        return {"id": f"chatcmpl-{uuid.uuid4().hex[:12]}", "object": "chat.completion",
                "created": int(time.time()), "model": self.model,
                "choices": [{"index": 0, "message": message, "logprobs": None,
                             "finish_reason": "tool_calls" if reply.tool_calls else "stop"}],
                "usage": reply.resolved_usage()}

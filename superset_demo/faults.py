"""Per-environment latency and failure injection (`DEMO_FAULTS`, SPEC §8) as ASGI middleware.

A spec is `{"status": 502, "count": 1, "methods": ["GET"], "latency_ms": 0}`: the next
`count` requests whose method is in `methods` (all methods when absent) answer `status`;
every matching request is delayed by `latency_ms` for as long as the spec is set.
`path_contains` narrows the match to request paths containing it (`"/export/"`: only
exports fail, as when a proxy times out on large downloads).
`hold_after_ms` delays the *answer* of every matching request after the request has been
handled (a write has landed), as a slow proxy in front of Superset would: the fault that
leaves a caller unsure whether its write happened.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from pydantic import BaseModel, Field
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["FaultInjector", "FaultMiddleware", "FaultSpec"]


class FaultSpec(BaseModel):
    """One environment's faults; `count` is how many more requests will fail."""

    status: int = Field(default=502, ge=400, le=599)
    count: int = Field(default=1, ge=0)
    methods: list[str] | None = None
    latency_ms: int = Field(default=0, ge=0, le=120_000)
    hold_after_ms: int = Field(default=0, ge=0, le=120_000)
    path_contains: str | None = Field(default=None, max_length=200)

    def matches(self, method: str, path: str = "") -> bool:
        if self.path_contains is not None and self.path_contains not in path:
            return False
        return self.methods is None or method.upper() in {m.upper() for m in self.methods}


class FaultInjector:
    """Thread-safe fault table shared by the middleware and whoever toggles faults."""

    def __init__(self, faults: dict[str, Any] | None = None) -> None:
        self._lock = threading.Lock()
        self._specs: dict[str, FaultSpec] = {}
        for env, spec in (faults or {}).items():
            self.set(env, spec)

    def set(self, env: str, spec: dict[str, Any] | FaultSpec | None) -> None:
        with self._lock:
            if spec is None:
                self._specs.pop(env, None)
            else:
                self._specs[env] = FaultSpec.model_validate(spec)

    def get(self, env: str) -> FaultSpec | None:
        with self._lock:
            spec = self._specs.get(env)
            return spec.model_copy() if spec else None

    def all(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            return {env: spec.model_dump() for env, spec in self._specs.items()}

    def take(self, env: str, method: str, path: str = "") -> tuple[float, int | None]:
        """(delay in seconds, status to fail with or None) for one request; uses up a count."""
        with self._lock:
            spec = self._specs.get(env)
            if spec is None or not spec.matches(method, path):
                return 0.0, None
            status = None
            if spec.count > 0:
                spec.count -= 1
                status = spec.status
            return spec.latency_ms / 1000.0, status

    def hold_after(self, env: str, method: str, path: str = "") -> float:
        """Seconds to hold a matching request's answer after it was handled."""
        with self._lock:
            spec = self._specs.get(env)
            return spec.hold_after_ms / 1000.0 if spec and spec.matches(method, path) else 0.0


class FaultMiddleware:
    """Applies the injector to `/{env}/...` requests before they reach the env app."""

    def __init__(self, app: ASGIApp, injector: FaultInjector) -> None:
        self.app = app
        self.injector = injector

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        env = scope["path"].lstrip("/").split("/", 1)[0]
        delay, status = self.injector.take(env, scope["method"], scope["path"])
        if delay:
            await asyncio.sleep(delay)
        if status is None:
            hold = self.injector.hold_after(env, scope["method"], scope["path"])
            if not hold:
                await self.app(scope, receive, send)
                return
            answer: list[Any] = []

            async def keep(message: Any) -> None:
                answer.append(message)

            await self.app(scope, receive, keep)  # the request is handled (and committed)
            await asyncio.sleep(hold)
            for message in answer:
                await send(message)
            return
        body = f"{status} injected by DEMO_FAULTS for {env}".encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

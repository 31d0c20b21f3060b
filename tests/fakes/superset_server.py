"""The bundled demo Superset served over real HTTP on loopback, recording what it receives.

A stand-in identity provider and passthrough target for sign-in tests (the real Superset
6.1 suite in tests/real_superset/ does the same against the real thing). Every request is
recorded with its method, path and Authorization header, so a test can count `/me/` calls
at the Superset side or see whose token a write carried.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from superset_demo import DemoSuperset
from tests.fakes.loopback import LoopbackServer

__all__ = ["Received", "ServedSuperset"]


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    authorization: str
    # `time.monotonic()` on arrival, so a test can measure the pause between two requests.
    at: float = field(default_factory=time.monotonic)

    @property
    def token(self) -> str:
        return self.authorization.partition(" ")[2]


class _Recorder:
    def __init__(self, app: Any, log: list[Received]) -> None:
        self.app, self.log = app, log

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            self.log.append(Received(scope["method"], scope["path"],
                                     headers.get(b"authorization", b"").decode()))
        await self.app(scope, receive, send)


class ServedSuperset(LoopbackServer):
    """`with ServedSuperset(tmp_path / "ss.db") as ss: ss.env_url("ss-dev")`."""

    def __init__(self, db_path: Path, *, access_ttl_s: int | None = None) -> None:
        options = {"access_ttl_s": access_ttl_s} if access_ttl_s else {}
        self.demo = DemoSuperset(db_path, **options)
        self.received: list[Received] = []
        super().__init__(_Recorder(self.demo.app, self.received), name="served-superset")

    def env_url(self, env: str) -> str:
        return f"{self.url}/{env}"

    def count(self, path: str, method: str = "GET") -> int:
        """Requests for `path` (without the environment prefix) that reached the server."""
        return sum(1 for r in self.received if r.method == method and r.path.endswith(path))

    def stop(self) -> None:
        super().stop()
        self.demo.close()

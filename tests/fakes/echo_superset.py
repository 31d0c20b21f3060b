"""A Superset (or the proxy in front of one) that echoes what it was sent in its errors.

`/echo-login/...`: the login fails with HTTP 500 quoting the request body (the service
password). `/echo-read/...`: the login works, and every read fails with HTTP 500 quoting
the request headers (the bearer token) and a `password` field. The worst a real deployment
can do to the agent's error handling, on loopback.
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.fakes.loopback import LoopbackServer

__all__ = ["EchoSuperset"]


class EchoSuperset(LoopbackServer):
    def __init__(self, *, token: str, password: str) -> None:
        self.token, self.password = token, password
        super().__init__(Starlette(routes=[Route("/{env}/{path:path}", self._any,
                                                 methods=["GET", "POST", "PUT", "DELETE"])]),
                         name="echo-superset")

    def env_url(self, env: str) -> str:
        return f"{self.url}/{env}"

    async def _any(self, request: Request) -> JSONResponse:
        env, path = request.path_params["env"], request.path_params["path"]
        body = (await request.body()).decode(errors="replace")
        if path == "api/v1/security/login":
            if env == "echo-login":
                return JSONResponse({"message": f"Login backend error for body {body}"}, 500)
            return JSONResponse({"access_token": self.token, "refresh_token": self.token})
        headers = dict(request.headers)
        return JSONResponse({"message": f"Proxy error on {request.method} /{path} with "
                                        f"headers {headers}; retry with password="
                                        f"{self.password}"}, 500)

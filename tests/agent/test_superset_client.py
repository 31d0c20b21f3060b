"""The Superset client against a small Superset-like server on loopback: headers, Rison,
login/refresh on expiry, CSRF for writes, error translation, and no retries of its own."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import prison
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from agent.errors import (
    ToolAuthError,
    ToolFailure,
    ToolInputError,
    ToolNotFound,
    TransientToolError,
)
from agent.superset import Filter, ServiceAuth, SupersetClient
from agent.superset.auth import BearerAuth


class StubSuperset:
    """Just the endpoints the client's behaviour depends on; every request is recorded."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.valid_tokens: set[str] = set()
        self.expire_next = 0  # answer this many authenticated calls with "Token has expired"
        self.refresh_works = True
        self.responses: dict[int, tuple[int, Any]] = {}
        self.logins = 0
        self.csrf_issued = 0
        self.stale_csrf_once = False

    def app(self) -> Starlette:
        return Starlette(routes=[
            Route("/api/v1/security/login", self.login, methods=["POST"]),
            Route("/api/v1/security/refresh", self.refresh, methods=["POST"]),
            Route("/api/v1/security/csrf_token/", self.csrf, methods=["GET"]),
            Route("/api/v1/dashboard/", self.list_dashboards, methods=["GET"]),
            Route("/api/v1/dashboard/slow", self.slow, methods=["GET"]),
            Route("/api/v1/dashboard/{pk:int}", self.dashboard, methods=["GET", "PUT"]),
        ])

    def _record(self, request: Request, body: bytes = b"") -> None:
        self.requests.append({"method": request.method, "path": request.url.path,
                              "query": dict(request.query_params),
                              "headers": dict(request.headers),
                              "cookies": dict(request.cookies), "body": body})

    async def login(self, request: Request) -> Response:
        body = await request.json()
        self._record(request)
        if (body.get("username"), body.get("password")) != ("svc", "pw"):
            return JSONResponse({"message": "Not authorized"}, 401)
        self.logins += 1
        token = f"access-{self.logins}"
        self.valid_tokens.add(token)
        return JSONResponse({"access_token": token, "refresh_token": "refresh-1"})

    async def refresh(self, request: Request) -> Response:
        self._record(request)
        if not self.refresh_works or request.headers.get("authorization") != "Bearer refresh-1":
            return JSONResponse({"msg": "Token has expired"}, 401)
        token = f"refreshed-{len(self.valid_tokens)}"
        self.valid_tokens.add(token)
        return JSONResponse({"access_token": token})

    def _auth_problem(self, request: Request) -> Response | None:
        token = request.headers.get("authorization", "").removeprefix("Bearer ")
        if self.expire_next > 0:
            self.expire_next -= 1
            self.valid_tokens.discard(token)
            return JSONResponse({"msg": "Token has expired"}, 401)
        if token not in self.valid_tokens:
            return JSONResponse({"msg": "Not enough segments"}, 401)
        return None

    async def csrf(self, request: Request) -> Response:
        self._record(request)
        problem = self._auth_problem(request)
        if problem:
            return problem
        self.csrf_issued += 1
        response = JSONResponse({"result": f"csrf-{self.csrf_issued}"})
        response.set_cookie("session", f"s-{self.csrf_issued}")
        return response

    async def list_dashboards(self, request: Request) -> Response:
        self._record(request)
        return self._auth_problem(request) or JSONResponse(
            {"count": 1, "ids": [1], "result": [{"id": 1, "dashboard_title": "Sales"}]})

    async def slow(self, request: Request) -> Response:
        self._record(request)
        await asyncio.sleep(3)
        return JSONResponse({"result": {}})

    async def dashboard(self, request: Request) -> Response:
        body = await request.body()
        self._record(request, body)
        problem = self._auth_problem(request)
        if problem:
            return problem
        if request.method == "PUT":
            token, cookie = request.headers.get("x-csrftoken"), request.cookies.get("session")
            if self.stale_csrf_once:
                self.stale_csrf_once = False
                return JSONResponse({"message": "400 Bad Request: The CSRF token has expired."},
                                    400)
            if not token:
                return JSONResponse({"message": "The CSRF token is missing."}, 400)
            if not cookie or cookie.split("-")[1] != token.split("-")[1]:
                return Response(status_code=302, headers={"location": "/login/"})
        pk = int(request.path_params["pk"])
        status, payload = self.responses.get(pk, (200, {"result": {"id": pk}}))
        if isinstance(payload, str):
            return Response(payload, status_code=status, media_type="text/html")
        return JSONResponse(payload, status)


@pytest.fixture
def stub() -> Iterator[tuple[StubSuperset, str]]:
    fake = StubSuperset()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(fake.app(), log_level="critical", log_config=None))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "stub did not start"
        time.sleep(0.02)
    yield fake, f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


def make_client(base_url: str, **kwargs: Any) -> SupersetClient:
    kwargs.setdefault("auth", ServiceAuth("svc", "pw"))
    return SupersetClient("test-env", base_url=base_url, **kwargs)


async def test_get_sends_accept_json_no_content_type_and_rison_q(stub):
    fake, url = stub
    client = make_client(url)
    body = await client.list("dashboard", filters=[Filter("dashboard_title", "ct", "Sales x")],
                             page=2, page_size=10)
    assert body["count"] == 1
    request = fake.requests[-1]
    assert request["headers"]["accept"] == "application/json"
    assert "content-type" not in request["headers"]
    assert prison.loads(request["query"]["q"]) == {
        "filters": [{"col": "dashboard_title", "opr": "ct", "value": "Sales x"}],
        "page": 2, "page_size": 10}
    await client.aclose()


async def test_unknown_filter_operator_is_refused_before_any_request(stub):
    fake, url = stub
    client = make_client(url)
    with pytest.raises(ToolInputError, match="Unknown filter operator 'contains'"):
        await client.list("dashboard", filters=[Filter("dashboard_title", "contains", "x")])
    with pytest.raises(ToolInputError):
        await client.list("dashboard", page_size=500)
    assert fake.requests == []
    await client.aclose()


async def test_expired_token_refreshes_once_and_repeats_the_call(stub):
    fake, url = stub
    client = make_client(url)
    await client.list("dashboard")
    fake.expire_next = 1
    await client.list("dashboard")
    paths = [r["path"] for r in fake.requests]
    assert paths == ["/api/v1/security/login", "/api/v1/dashboard/", "/api/v1/dashboard/",
                     "/api/v1/security/refresh", "/api/v1/dashboard/"]
    await client.aclose()


async def test_failed_refresh_falls_back_to_login_and_never_loops(stub):
    fake, url = stub
    client = make_client(url)
    await client.list("dashboard")
    fake.refresh_works = False
    fake.expire_next = 1
    await client.list("dashboard")
    assert fake.logins == 2
    fake.expire_next = 5  # expires again and again: one renewal, then the 401 surfaces
    before = len(fake.requests)
    with pytest.raises(ToolAuthError):
        await client.list("dashboard")
    dashboard_calls = [r for r in fake.requests[before:] if r["path"] == "/api/v1/dashboard/"]
    assert len(dashboard_calls) == 2
    await client.aclose()


async def test_bad_service_credentials_are_an_auth_error(stub):
    _, url = stub
    client = make_client(url, auth=ServiceAuth("svc", "wrong"))
    with pytest.raises(ToolAuthError, match="refused the service login"):
        await client.list("dashboard")
    await client.aclose()


async def test_passthrough_token_is_sent_and_not_renewed(stub):
    fake, url = stub
    fake.valid_tokens.add("user-token")
    client = make_client(url, auth=BearerAuth("user-token"))
    await client.get("dashboard", 1)
    assert fake.requests[-1]["headers"]["authorization"] == "Bearer user-token"
    fake.expire_next = 1
    with pytest.raises(ToolAuthError):
        await client.get("dashboard", 1)
    assert not any(r["path"].startswith("/api/v1/security/") for r in fake.requests)
    await client.aclose()


async def test_writes_fetch_csrf_token_and_send_it_with_the_session_cookie(stub):
    fake, url = stub
    client = make_client(url)
    await client.put("dashboard", 7, {"published": True}, what="dashboard 7")
    await client.put("dashboard", 7, {"published": False}, what="dashboard 7")
    csrf_calls = [r for r in fake.requests if r["path"] == "/api/v1/security/csrf_token/"]
    puts = [r for r in fake.requests if r["method"] == "PUT"]
    assert len(csrf_calls) == 1 and len(puts) == 2
    assert puts[0]["headers"]["x-csrftoken"] == "csrf-1"
    assert puts[0]["cookies"]["session"] == "s-1"
    assert puts[0]["headers"]["content-type"] == "application/json"
    await client.aclose()


async def test_stale_csrf_token_is_fetched_again_once(stub):
    fake, url = stub
    client = make_client(url)
    fake.stale_csrf_once = True
    await client.put("dashboard", 7, {"published": True}, what="dashboard 7")
    assert fake.csrf_issued == 2
    assert [r["method"] for r in fake.requests if r["path"] == "/api/v1/dashboard/7"] == \
        ["PUT", "PUT"]
    await client.aclose()


@pytest.mark.parametrize(("status", "payload", "error", "text"), [
    (404, {"message": "Not found"}, ToolNotFound, "dashboard 5 was not found"),
    (400, {"message": {"dashboard_title": ["Longer than maximum length 500."]}},
     ToolInputError, "dashboard_title: Longer than maximum length 500."),
    (422, {"errors": [{"message": "Dashboard could not be updated.", "error_type": "X"}]},
     ToolInputError, "Dashboard could not be updated."),
    (403, {"message": "Forbidden"}, ToolAuthError, "forbids"),
    (502, "<html>Bad gateway</html>", TransientToolError, "HTTP 502"),
    (503, {"message": "down"}, TransientToolError, "HTTP 503"),
    (504, {"message": "slow"}, TransientToolError, "HTTP 504"),
    (500, "<html>oops</html>", ToolFailure, "HTTP 500"),
])
async def test_errors_are_translated_and_never_retried(stub, status, payload, error, text):
    fake, url = stub
    fake.responses[5] = (status, payload)
    client = make_client(url)
    with pytest.raises(error, match=text) as info:
        await client.get("dashboard", 5)
    assert type(info.value) is error
    assert len([r for r in fake.requests if r["path"] == "/api/v1/dashboard/5"]) == 1
    await client.aclose()


async def test_read_timeout_is_transient(stub):
    _, url = stub
    client = make_client(url, read_timeout_s=0.3)
    with pytest.raises(TransientToolError, match="timed out"):
        await client.get_json("dashboard/slow", what="slow call")
    await client.aclose()


async def test_connection_refused_is_transient():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    client = make_client(f"http://127.0.0.1:{port}", read_timeout_s=2)
    with pytest.raises(TransientToolError, match="could not be reached"):
        await client.list("dashboard")
    await client.aclose()


# the per-environment registry ---------------------------------------------------------------

def _settings(*envs: dict[str, Any]):
    from agent.settings import Settings

    return Settings(superset_environments=list(envs), auth_jwt_secret="x" * 40)


async def test_registry_service_env_logs_in_with_its_credentials(stub):
    from agent.superset import SupersetClients

    fake, url = stub
    clients = SupersetClients(_settings({"name": "real", "base_url": url, "username": "svc",
                                         "password": "pw"}))
    await clients.get("real").list("dashboard")
    assert fake.logins == 1
    with pytest.raises(ToolInputError, match=r"Unknown environment 'nope'\. Known "
                                             r"environments: real"):
        clients.get("nope")
    await clients.aclose()


async def test_registry_passthrough_needs_and_uses_the_users_token(stub):
    from agent.superset import SupersetClients

    fake, url = stub
    fake.valid_tokens.add("alice-token")
    clients = SupersetClients(_settings({"name": "sso", "base_url": url,
                                         "auth_mode": "passthrough"}))
    with pytest.raises(ToolAuthError, match="your own Superset login"):
        clients.get("sso")
    alice = clients.get("sso", user_token="alice-token")
    assert clients.get("sso", user_token="alice-token") is alice
    assert clients.get("sso", user_token="bob-token") is not alice
    await alice.list("dashboard")
    assert fake.requests[-1]["headers"]["authorization"] == "Bearer alice-token"
    assert fake.logins == 0
    await clients.aclose()


async def test_registry_service_env_without_credentials_is_a_clear_auth_error(stub):
    from agent.superset import SupersetClients

    fake, url = stub
    clients = SupersetClients(_settings({"name": "half", "base_url": url}))
    with pytest.raises(ToolAuthError, match="no username and password configured"):
        await clients.get("half").list("dashboard")
    assert fake.requests == []
    await clients.aclose()


async def test_registry_demo_env_without_a_demo_server_says_so():
    from agent.superset import SupersetClients

    clients = SupersetClients(_settings({"name": "ss-dev"}), demo=None)
    with pytest.raises(ToolInputError, match="demo Superset server does not provide it"):
        clients.get("ss-dev")

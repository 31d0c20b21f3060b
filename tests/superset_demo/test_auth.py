"""Login, refresh, token errors, CSRF and roles behave like real Superset 6.1."""

from __future__ import annotations

import time

import httpx
import jwt

from superset_demo import DemoSuperset


def _client(demo: DemoSuperset, env: str = "ss-dev") -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=demo.transport(), base_url=demo.base_url(env),
                             headers={"Accept": "application/json"})


async def test_login_refresh_and_bad_credentials(demo: DemoSuperset) -> None:
    async with _client(demo) as client:
        bad = await client.post("/api/v1/security/login", json={
            "username": "admin", "password": "nope", "provider": "db"})
        assert bad.status_code == 401 and bad.json() == {"message": "Not authorized"}
        ok = await client.post("/api/v1/security/login", json={
            "username": "admin", "password": "admin", "provider": "db", "refresh": True})
        tokens = ok.json()
        assert set(tokens) == {"access_token", "refresh_token"}
        claims = jwt.decode(tokens["access_token"], options={"verify_signature": False})
        assert claims["exp"] - claims["iat"] == 900 and claims["type"] == "access"
        wrong = await client.post("/api/v1/security/refresh", headers={
            "Authorization": f"Bearer {tokens['access_token']}"})
        assert wrong.status_code == 422
        assert wrong.json() == {"msg": "Only refresh tokens are allowed"}
        fresh = await client.post("/api/v1/security/refresh", headers={
            "Authorization": f"Bearer {tokens['refresh_token']}"})
        assert set(fresh.json()) == {"access_token"}
        me = await client.get("/api/v1/me/", headers={
            "Authorization": f"Bearer {fresh.json()['access_token']}"})
        assert me.json()["result"]["username"] == "admin"


async def test_token_errors(demo: DemoSuperset) -> None:
    async with _client(demo) as client:
        missing = await client.get("/api/v1/dashboard/")
        assert missing.status_code == 401
        assert missing.json() == {"msg": "Missing Authorization Header"}
        garbage = await client.get("/api/v1/dashboard/", headers={"Authorization": "Bearer x"})
        assert garbage.status_code == 422 and "msg" in garbage.json()
        secret = demo.store.get_meta("jwt_secret")
        now = int(time.time())
        expired = jwt.encode({"sub": "1", "type": "access", "env": "ss-dev", "iat": now - 2000,
                              "exp": now - 1000}, secret, algorithm="HS256")
        resp = await client.get("/api/v1/dashboard/", headers={"Authorization":
                                                               f"Bearer {expired}"})
        assert resp.status_code == 401 and resp.json() == {"msg": "Token has expired"}
    async with _client(demo, "prod") as prod, _client(demo) as dev:
        token = (await dev.post("/api/v1/security/login", json={
            "username": "admin", "password": "admin", "provider": "db"})).json()["access_token"]
        other = await prod.get("/api/v1/dashboard/", headers={"Authorization": f"Bearer {token}"})
        assert other.status_code == 422, "a token of one environment is refused by another"


async def test_csrf_required_on_writes(login, demo: DemoSuperset) -> None:
    client = await login(csrf=False)
    missing = await client.put("/api/v1/dashboard/1", json={"dashboard_title": "x"})
    assert missing.status_code == 400
    assert missing.json()["errors"][0]["message"] == "400 Bad Request: The CSRF token is missing."
    token = (await client.get("/api/v1/security/csrf_token/")).json()["result"]
    assert "session" in client.cookies
    async with _client(demo) as bare:  # header without the session cookie
        bare.headers.update({"Authorization": client.headers["Authorization"],
                             "X-CSRFToken": token})
        no_cookie = await bare.put("/api/v1/dashboard/1", json={"dashboard_title": "x"})
        assert no_cookie.status_code == 400
        assert "CSRF session token is missing" in no_cookie.json()["errors"][0]["message"]
    ok = await client.put("/api/v1/dashboard/1", json={"dashboard_title": "x"},
                          headers={"X-CSRFToken": token})
    assert ok.status_code == 200
    # /chart/data is CSRF-exempt, like on the real server
    data = await client.post("/api/v1/chart/data", json={
        "datasource": {"id": 1, "type": "table"}, "queries": [{"row_limit": 1}]})
    assert data.status_code == 200


async def test_roles_and_gamma_cannot_write(login) -> None:
    for user, role in (("admin", "Admin"), ("alpha", "Alpha"), ("gamma", "Gamma")):
        client = await login(user=user)
        roles = (await client.get("/api/v1/me/roles/")).json()["result"]["roles"]
        assert list(roles) == [role]
    gamma = await login(user="gamma")
    assert (await gamma.get("/api/v1/dashboard/1")).status_code == 200
    resp = await gamma.delete("/api/v1/dashboard/1")
    assert resp.status_code == 403 and resp.json() == {"message": "Forbidden"}

"""`SignInService`: Superset credentials for Superset's tokens, at most 5 failed attempts
per username and client address a minute (counted in the database, on SQLite and
PostgreSQL), and no credential stored anywhere."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.errors import BadCredentials, InputError, SignInRateLimited
from agent.identity.superset import SupersetIdentity
from agent.settings import DEFAULT_ROLE_MAP, Settings
from agent.signin import SignInService
from storage import Database
from tests.fakes.runs import all_rows
from tests.fakes.superset_server import ServedSuperset

LOGIN = "/api/v1/security/login"
SENTINEL_PASSWORD = "pw-sentinel-7d1e0b9c44"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedSuperset]:
    with ServedSuperset(tmp_path_factory.mktemp("ss") / "demo.db") as server:
        yield server


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def service(db: Database, settings: Settings, served: ServedSuperset, clock: Clock):  # type: ignore[no-untyped-def]
    provider = SupersetIdentity(env="ss-dev", base_url=served.env_url("ss-dev"),
                                role_map=DEFAULT_ROLE_MAP)
    yield SignInService(provider, db, settings, clock=clock)
    await provider.aclose()


async def fail(service: SignInService, username: str = "alpha", client: str = "10.0.0.1",
               password: str = SENTINEL_PASSWORD) -> None:
    with pytest.raises(BadCredentials):
        await service.sign_in(username=username, password=password, client=client)


async def test_the_sixth_attempt_in_a_minute_is_refused_even_with_the_right_password(
    service: SignInService, served: ServedSuperset, clock: Clock,
) -> None:
    for _ in range(5):
        await fail(service)
        clock.now += 5
    logins = served.count(LOGIN, "POST")

    with pytest.raises(SignInRateLimited) as caught:
        await service.sign_in(username="alpha", password="alpha", client="10.0.0.1")
    assert caught.value.retry_after_s == 35  # the oldest failure leaves the window then
    assert served.count(LOGIN, "POST") == logins  # Superset was not even asked
    with pytest.raises(SignInRateLimited):  # the lock ignores case and spaces of the name
        await service.sign_in(username=" ALPHA", password="alpha", client="10.0.0.1")
    # per username and address: another address, or another name, is not locked out
    assert (await service.sign_in(username="alpha", password="alpha",
                                  client="10.0.0.2")).identity.user_id == "alpha"
    assert (await service.sign_in(username="gamma", password="gamma",
                                  client="10.0.0.1")).identity.user_id == "gamma"
    clock.now += 36
    assert (await service.sign_in(username="alpha", password="alpha", client="10.0.0.1")
            ).identity.user_id == "alpha"


async def test_successes_do_not_count(service: SignInService, clock: Clock) -> None:
    for _ in range(6):
        await service.sign_in(username="admin", password="admin", client="10.0.0.3")
    for _ in range(5):
        await fail(service, "admin", "10.0.0.3")
    with pytest.raises(SignInRateLimited):
        await fail(service, "admin", "10.0.0.3")


async def test_parallel_guesses_cannot_slip_past_the_limit(service: SignInService,
                                                           served: ServedSuperset) -> None:
    logins = served.count(LOGIN, "POST")
    outcomes = await asyncio.gather(
        *(service.sign_in(username="gamma", password=f"guess-{i}", client="10.0.0.4")
          for i in range(12)), return_exceptions=True)

    kinds = sorted(type(outcome).__name__ for outcome in outcomes)
    assert kinds.count("BadCredentials") <= 5
    assert set(kinds) <= {"BadCredentials", "SignInRateLimited"}
    assert served.count(LOGIN, "POST") - logins <= 5


async def test_failed_attempts_keep_no_name_address_or_password(service: SignInService,
                                                                db: Database) -> None:
    await fail(service, "sentinel-user", "203.0.113.77")

    dump = repr(all_rows(db))
    for secret in (SENTINEL_PASSWORD, "sentinel-user", "203.0.113.77"):
        assert secret not in dump
    assert len(all_rows(db)["login_failures"]) == 1


@pytest.mark.parametrize(("username", "password"), [
    ("", "x"), ("alpha", ""), (None, "x"), ("alpha", 7), ("a" * 257, "x"), ("alpha", "x\x00y")])
async def test_malformed_credentials_are_refused_before_anything_happens(
    service: SignInService, db: Database, served: ServedSuperset, username: object,
    password: object,
) -> None:
    before, logins = all_rows(db), served.count(LOGIN, "POST")
    with pytest.raises(InputError) as caught:
        await service.sign_in(username=username, password=password, client="10.0.0.5")
    if isinstance(password, str) and password:
        assert password not in str(caught.value)
    assert all_rows(db) == before and served.count(LOGIN, "POST") == logins


def test_no_signin_service_outside_superset_mode(settings: Settings, tmp_path: Path) -> None:
    from runtime import build_runtime

    rt = build_runtime(settings)
    try:
        assert rt.settings.is_demo and rt.signin is None
    finally:
        rt.close()

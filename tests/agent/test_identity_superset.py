"""`SupersetIdentity`: a Superset access token is verified by asking Superset who it is.

Against the bundled demo Superset over real HTTP on loopback (users admin, alpha, gamma;
password = username), which records every request it receives, so lookups are counted at
the Superset side. The real Superset 6.1 suite repeats the essentials (tests/real_superset).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import jwt
import pytest

from agent.errors import (
    BadCredentials,
    IdentityError,
    IdentityUnavailable,
    RoleNotMapped,
    TokenExpired,
)
from agent.identity.superset import WRONG_CREDENTIALS, SupersetIdentity, token_expiry
from agent.settings import DEFAULT_ROLE_MAP
from tests.fakes.superset_server import ServedSuperset

ME = "/api/v1/me/"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedSuperset]:
    with ServedSuperset(tmp_path_factory.mktemp("ss") / "demo.db") as server:
        yield server


def provider_for(served: ServedSuperset, env: str = "ss-dev", **options: object
                 ) -> SupersetIdentity:
    options = {"role_map": DEFAULT_ROLE_MAP, **options}
    return SupersetIdentity(env=env, base_url=served.env_url(env), **options)  # type: ignore[arg-type]


@pytest.fixture
async def provider(served: ServedSuperset) -> AsyncIterator[SupersetIdentity]:
    identity = provider_for(served)
    yield identity
    await identity.aclose()


@pytest.mark.parametrize(("username", "role", "name"), [
    ("admin", "admin", "Ada Admin"), ("alpha", "editor", "Alan Alpha"),
    ("gamma", "viewer", "Grace Gamma")])
async def test_each_superset_role_maps_to_its_app_role(
    provider: SupersetIdentity, username: str, role: str, name: str,
) -> None:
    signed = await provider.sign_in(username=username, password=username)

    assert signed.identity.user_id == username
    assert (signed.identity.role, signed.identity.name) == (role, name)
    assert signed.refresh_token and signed.expires_at == token_expiry(signed.access_token)
    verified = await provider.verify(user_id=username, token=signed.access_token)
    assert verified == signed.identity


async def test_every_wrong_credential_gets_the_same_message(provider: SupersetIdentity
                                                            ) -> None:
    messages = set()
    for username, password in [("alpha", "wrong"), ("nobody", "alpha"), ("alpha", "")]:
        with pytest.raises(BadCredentials) as caught:
            await provider.sign_in(username=username, password=password)
        messages.add(str(caught.value))
    assert messages == {WRONG_CREDENTIALS}


async def test_user_id_must_be_the_superset_username(provider: SupersetIdentity) -> None:
    token = (await provider.sign_in(username="gamma", password="gamma")).access_token

    with pytest.raises(IdentityError, match="does not match"):
        await provider.verify(user_id="admin", token=token)
    with pytest.raises(IdentityError, match="token is required"):
        await provider.verify(user_id="gamma", token="")


async def test_a_hundred_checks_within_the_cache_time_ask_superset_once(
    served: ServedSuperset, provider: SupersetIdentity,
) -> None:
    token = (await provider.sign_in(username="alpha", password="alpha")).access_token
    before = served.count(ME)
    for _ in range(50):
        await provider.verify(user_id="alpha", token=token)
    await asyncio.gather(*(provider.verify(user_id="alpha", token=token) for _ in range(50)))

    assert served.count(ME) == before  # sign-in verified it once; all 100 were cached
    assert provider.lookups == 1


async def test_concurrent_first_checks_share_one_lookup(served: ServedSuperset,
                                                        provider: SupersetIdentity) -> None:
    token = (await provider.sign_in(username="gamma", password="gamma")).access_token
    provider.forget(token)
    before = served.count(ME)

    callers = [asyncio.ensure_future(provider.verify(user_id=None, token=token))
               for _ in range(20)]
    await asyncio.sleep(0)  # every caller now waits on the one lookup
    callers[0].cancel()  # one caller leaving must not cancel the lookup the others wait on
    results = await asyncio.gather(*callers[1:])
    assert callers[0].cancelled()

    assert {identity.user_id for identity in results} == {"gamma"}
    assert served.count(ME) == before + 1


async def test_the_cache_holds_digests_never_tokens(provider: SupersetIdentity) -> None:
    token = (await provider.sign_in(username="admin", password="admin")).access_token

    # Private on purpose: the promise is about what this object keeps in memory.
    keys = list(provider._cache)
    assert keys and all(len(key) == 64 and token not in key for key in keys)
    assert all(token not in repr(value) for value in provider._cache.values())


async def test_a_cache_entry_ends_when_its_token_expires(tmp_path: Path) -> None:
    """Superset issues 30 s tokens here; the cache time is 60 s. A clock moved past the
    token's expiry makes the next check ask Superset again; 10 s before it does not. The
    clock is set from the token's own `exp` (the server's time at issue, seconds after the
    test began on a loaded machine)."""
    now = [time.time()]
    with ServedSuperset(tmp_path / "short.db", access_ttl_s=30) as short:
        provider = provider_for(short, clock=lambda: now[0], cache_ttl_s=60)
        try:
            token = (await provider.sign_in(username="alpha", password="alpha")).access_token
            expires = jwt.decode(token, options={"verify_signature": False})["exp"]
            now[0] = expires - 10
            await provider.verify(user_id=None, token=token)
            assert short.count(ME) == 1
            now[0] = expires + 1
            await provider.verify(user_id=None, token=token)
            assert short.count(ME) == 2
        finally:
            await provider.aclose()


async def test_an_expired_token_is_refused_as_expired(served: ServedSuperset,
                                                      provider: SupersetIdentity) -> None:
    secret = served.demo.store.get_meta("jwt_secret")
    now = int(time.time())
    expired = jwt.encode({"type": "access", "sub": "2", "env": "ss-dev", "iat": now - 1000,
                          "nbf": now - 1000, "exp": now - 100}, secret, algorithm="HS256")

    with pytest.raises(TokenExpired, match="expired"):
        await provider.verify(user_id=None, token=expired)


async def test_a_token_of_another_superset_is_refused(served: ServedSuperset,
                                                      provider: SupersetIdentity) -> None:
    """Each demo environment signs with its own scope, like two unrelated Supersets."""
    other = provider_for(served, env="staging")
    try:
        foreign = (await other.sign_in(username="admin", password="admin")).access_token
        with pytest.raises(IdentityError, match="does not accept this token") as caught:
            await provider.verify(user_id=None, token=foreign)
        assert not isinstance(caught.value, TokenExpired)
        assert foreign not in str(caught.value)
        with pytest.raises(IdentityError):
            await provider.verify(user_id=None, token="not-a-token")
    finally:
        await other.aclose()


async def test_an_outage_is_unavailable_not_a_refusal_and_is_not_remembered(
    served: ServedSuperset, provider: SupersetIdentity,
) -> None:
    token = (await provider.sign_in(username="alpha", password="alpha")).access_token
    provider.forget(token)
    served.demo.set_faults("ss-dev", {"status": 503, "count": 1, "methods": ["GET"]})

    with pytest.raises(IdentityUnavailable, match="try again"):
        await provider.verify(user_id=None, token=token)
    assert (await provider.verify(user_id=None, token=token)).user_id == "alpha"

    down = SupersetIdentity(env="gone", base_url="http://127.0.0.1:9/ss-dev",
                            role_map=DEFAULT_ROLE_MAP, timeout_s=2)
    try:
        with pytest.raises(IdentityUnavailable):
            await down.sign_in(username="alpha", password="alpha")
        with pytest.raises(IdentityUnavailable):
            await down.verify(user_id=None, token=token)
    finally:
        await down.aclose()


async def test_a_user_without_a_mapped_role_is_refused(served: ServedSuperset) -> None:
    provider = provider_for(served, role_map={"Admin": "admin", "Alpha": "editor"})
    try:
        with pytest.raises(RoleNotMapped, match="no role this app accepts") as caught:
            await provider.sign_in(username="gamma", password="gamma")
        assert "Admin, Alpha" in str(caught.value)
        assert (await provider.sign_in(username="alpha", password="alpha")).identity.role \
            == "editor"
    finally:
        await provider.aclose()


async def test_the_highest_mapped_role_wins(served: ServedSuperset) -> None:
    provider = provider_for(served, role_map={"Gamma": "admin", "Alpha": "viewer"})
    try:
        signed = await provider.sign_in(username="gamma", password="gamma")
        assert signed.identity.role == "admin"  # a deliberately wrong map is obeyed here...
    finally:
        await provider.aclose()  # ...and Superset's own permissions still apply (passthrough)


async def test_renewal_gives_a_new_token_for_the_same_person(provider: SupersetIdentity
                                                             ) -> None:
    signed = await provider.sign_in(username="alpha", password="alpha")
    assert signed.refresh_token is not None

    renewed = await provider.renew(refresh_token=signed.refresh_token)

    assert renewed.identity == signed.identity
    assert renewed.access_token != signed.access_token
    assert renewed.refresh_token == signed.refresh_token
    with pytest.raises(TokenExpired, match="sign in again"):
        await provider.renew(refresh_token="garbage")
    with pytest.raises(TokenExpired):
        await provider.renew(refresh_token=signed.access_token)  # not a refresh token

"""AUTH_MODE=jwt: an external identity provider's tokens, verified against a JWKS served by
a loopback HTTP server (and, separately, a shared HS256 secret)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import AsyncIterator, Iterator

import jwt
import pytest

from agent.errors import IdentityError, IdentityUnavailable, RoleNotMapped, TokenExpired
from agent.identity.external_jwt import ExternalJwtIdentity
from agent.settings import DEFAULT_ROLE_MAP, Settings
from runtime import build_runtime
from tests.fakes.jwks_server import ISSUER, JwksServer
from tests.fakes.runs import collect, of_type

AUDIENCE = "superset-agent"


@pytest.fixture(scope="module")
def idp() -> Iterator[JwksServer]:
    with JwksServer() as server:
        yield server


@pytest.fixture
async def provider(idp: JwksServer) -> AsyncIterator[ExternalJwtIdentity]:
    yield ExternalJwtIdentity(issuer=ISSUER, audience=AUDIENCE, role_map=DEFAULT_ROLE_MAP,
                              jwks_url=idp.jwks_url)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def hs256_with_public_key(idp: JwksServer, **claims: object) -> str:
    """The classic algorithm-confusion forgery: HMAC keyed with the RSA *public* key."""
    now = int(time.time())
    header = {"alg": "HS256", "typ": "JWT", "kid": "rsa-1"}
    body = {"iss": ISSUER, "aud": AUDIENCE, "iat": now, "exp": now + 300, **claims}
    signing_input = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(body).encode())}"
    signature = hmac.new(idp.public_pem(), signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{_b64(signature)}"


@pytest.mark.parametrize(("alg", "roles", "role"), [
    ("RS256", ["Alpha"], "editor"), ("ES256", ["Gamma", "Admin"], "admin"),
    ("RS256", "Gamma", "viewer")])
async def test_valid_tokens_verify_with_the_mapped_role(
    idp: JwksServer, provider: ExternalJwtIdentity, alg: str, roles: object, role: str,
) -> None:
    token = idp.sign(alg=alg, sub="ada", name="Ada L", roles=roles)

    identity = await provider.verify(user_id="ada", token=token)

    assert (identity.user_id, identity.name, identity.role) == ("ada", "Ada L", role)


def _refused_tokens(idp: JwksServer) -> dict[str, str]:
    other = JwksServer()  # same kids, other keys: a forger's tokens
    now = int(time.time())
    none_token = jwt.encode({"iss": ISSUER, "aud": AUDIENCE, "exp": now + 300, "sub": "ada",
                             "roles": ["Admin"]}, None, algorithm="none")
    return {
        "wrong aud": idp.sign(sub="ada", roles=["Admin"], audience="another-app"),
        "wrong iss": idp.sign(sub="ada", roles=["Admin"], issuer="https://evil.test/"),
        "expired": idp.sign(sub="ada", roles=["Admin"], ttl_s=-120),
        "alg none": none_token,
        "HS256 signed with the public key": hs256_with_public_key(idp, sub="ada",
                                                                  roles=["Admin"]),
        "signed by another key": other.sign(sub="ada", roles=["Admin"]),
        "unknown key id": idp.sign(sub="ada", roles=["Admin"], kid="rsa-9"),
        "garbage": "not.a.token",
    }


@pytest.mark.parametrize("label", [
    "wrong aud", "wrong iss", "expired", "alg none", "HS256 signed with the public key",
    "signed by another key", "unknown key id", "garbage"])
async def test_bad_tokens_are_refused(idp: JwksServer, provider: ExternalJwtIdentity,
                                      label: str) -> None:
    token = _refused_tokens(idp)[label]

    with pytest.raises(IdentityError) as caught:
        await provider.verify(user_id=None, token=token)

    assert token not in str(caught.value)
    assert isinstance(caught.value, TokenExpired) == (label == "expired")


async def test_claims_that_must_be_there_and_must_match(idp: JwksServer,
                                                        provider: ExternalJwtIdentity) -> None:
    with pytest.raises(RoleNotMapped, match="no role this app accepts"):
        await provider.verify(user_id=None, token=idp.sign(sub="ada", roles=["Reporting"]))
    with pytest.raises(IdentityError, match="does not match"):
        await provider.verify(user_id="bob", token=idp.sign(sub="ada", roles=["Alpha"]))
    with pytest.raises(IdentityError):
        await provider.verify(user_id=None, token=idp.sign(roles=["Alpha"]))  # no subject
    with pytest.raises(IdentityError, match="required"):
        await provider.verify(user_id=None, token="")


async def test_keys_are_cached_and_claims_are_configurable(idp: JwksServer) -> None:
    provider = ExternalJwtIdentity(
        issuer=ISSUER, audience=AUDIENCE, role_map={"agent-editors": "editor"},
        jwks_url=idp.jwks_url, user_claim="preferred_username",
        roles_claim="realm_access.roles")
    before = idp.fetches
    for i in range(20):
        token = idp.sign(sub=f"uuid-{i}", preferred_username="ada",
                         realm_access={"roles": ["offline_access", "agent-editors"]})
        identity = await provider.verify(user_id="ada", token=token)
        assert identity.role == "editor"
    assert idp.fetches - before == 1


async def test_an_unreachable_jwks_is_unavailable_not_a_refusal(idp: JwksServer) -> None:
    provider = ExternalJwtIdentity(issuer=ISSUER, audience=AUDIENCE,
                                   role_map=DEFAULT_ROLE_MAP,
                                   jwks_url="http://127.0.0.1:9/jwks.json", timeout_s=2)
    with pytest.raises(IdentityUnavailable):
        await provider.verify(user_id=None, token=idp.sign(sub="ada", roles=["Alpha"]))


async def test_a_shared_hs256_secret_and_nothing_else(idp: JwksServer) -> None:
    secret = "idp-shared-secret-" + "k" * 32
    provider = ExternalJwtIdentity(issuer=ISSUER, audience=AUDIENCE,
                                   role_map=DEFAULT_ROLE_MAP, secret=secret)
    now = int(time.time())
    good = jwt.encode({"iss": ISSUER, "aud": AUDIENCE, "exp": now + 60, "sub": "ada",
                       "roles": ["Alpha"]}, secret, algorithm="HS256")

    assert (await provider.verify(user_id=None, token=good)).role == "editor"
    with pytest.raises(IdentityError):  # an RS256 token means nothing here
        await provider.verify(user_id=None, token=idp.sign(sub="ada", roles=["Alpha"]))


@pytest.mark.parametrize("options", [
    {"issuer": None}, {"audience": None}, {"jwks_url": None},
    {"secret": "s" * 40}, {"algorithms": ["HS256"]}, {"algorithms": ["none"]}])
def test_a_misconfiguration_stops_start_up(options: dict[str, object]) -> None:
    config = {"issuer": ISSUER, "audience": AUDIENCE, "role_map": DEFAULT_ROLE_MAP,
              "jwks_url": "http://127.0.0.1:9/jwks.json", **options}
    with pytest.raises(ValueError, match="AUTH_"):
        ExternalJwtIdentity(**config)  # type: ignore[arg-type]


async def test_the_app_runs_turns_for_a_jwt_user(settings: Settings, idp: JwksServer) -> None:
    rt = build_runtime(settings.model_copy(update={
        "auth_mode": "jwt", "auth_jwt_jwks_url": idp.jwks_url, "auth_jwt_issuer": ISSUER,
        "auth_jwt_audience": AUDIENCE}))
    try:
        token = idp.sign(sub="ada", roles=["Alpha"])
        live = await rt.agent.start_turn(message="what can you do?", conv_id="jwt-1",
                                         user_id="ada", user_jwt=token, env_id="ss-dev",
                                         uicontext_str=None)
        events = await collect(live)
        assert events[-1]["status"] == "completed" and live.owner_id == "ada"
        (started,) = of_type(events, "run_started")
        assert "delete_dashboard" not in started["tools"]  # an editor
        assert "update_dashboard" in started["tools"]
        with pytest.raises(IdentityError):
            await rt.agent.start_turn(message="hi", conv_id="jwt-2", user_id="", user_jwt="",
                                      env_id=None, uicontext_str=None)
    finally:
        rt.close()

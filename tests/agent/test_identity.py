"""`TokenIssuer`: demo tokens, verification of signature, expiry, issuer and subject."""

from __future__ import annotations

import time

import jwt
import pytest

from agent.errors import IdentityError
from agent.identity import DEMO_USERS, Identity, TokenIssuer, role_at_least

SECRET = "s" * 48


@pytest.fixture
def issuer() -> TokenIssuer:
    return TokenIssuer(SECRET, ttl_s=600, demo=True)


def _claims(**overrides: object) -> dict[str, object]:
    now = int(time.time())
    return {"sub": "alice", "name": "Alice", "roles": ["editor"], "iss": "superset-agent",
            "iat": now, "exp": now + 86_400, **overrides}  # built at collection: outlive the suite


@pytest.mark.parametrize("user", ["viewer", "editor", "admin"])
def test_demo_tokens_verify_to_their_user(issuer: TokenIssuer, user: str) -> None:
    identity, token = issuer.mint_demo(user)

    assert identity == Identity(user_id=DEMO_USERS[user][0], name=DEMO_USERS[user][1],
                                role=user)  # type: ignore[arg-type]
    assert issuer.verify(user_id=identity.user_id, token=token) == identity
    assert issuer.verify(user_id=None, token=token) == identity  # subject from the token


def test_a_token_lasts_its_ttl(issuer: TokenIssuer) -> None:
    _, token = issuer.mint_demo("viewer")
    claims = jwt.decode(token, SECRET, algorithms=["HS256"], issuer="superset-agent")

    assert claims["exp"] - claims["iat"] == 600
    assert claims["roles"] == ["viewer"]


def test_the_highest_known_role_wins_and_unknown_roles_are_ignored(
    issuer: TokenIssuer,
) -> None:
    token = jwt.encode(_claims(roles=["viewer", "admin", "Gamma", "root"]), SECRET,
                       algorithm="HS256")
    assert issuer.verify(user_id="alice", token=token).role == "admin"

    token = jwt.encode(_claims(roles=["root"]), SECRET, algorithm="HS256")
    assert issuer.verify(user_id="alice", token=token).role == "viewer"


def test_a_token_for_someone_else_is_refused(issuer: TokenIssuer) -> None:
    _, token = issuer.mint_demo("viewer")

    with pytest.raises(IdentityError, match="does not match"):
        issuer.verify(user_id="demo-admin", token=token)


BAD_TOKENS = [
    ("expired", jwt.encode(_claims(exp=int(time.time()) - 5), SECRET, algorithm="HS256"),
     "expired"),
    ("wrong secret", jwt.encode(_claims(), "x" * 48, algorithm="HS256"), "not valid"),
    ("wrong issuer", jwt.encode(_claims(iss="someone-else"), SECRET, algorithm="HS256"),
     "not valid"),
    ("no expiry", jwt.encode({k: v for k, v in _claims().items() if k != "exp"}, SECRET,
                             algorithm="HS256"), "not valid"),
    ("no subject", jwt.encode({k: v for k, v in _claims().items() if k != "sub"}, SECRET,
                              algorithm="HS256"), "not valid"),
    ("alg none", jwt.encode(_claims(), None, algorithm="none"), "not valid"),
    ("garbage", "a.b.c", "not valid"),
]


# The label alone names each case: pytest-xdist workers collect separately, and an id with
# the token in it would differ between them (each mints with its own clock).
@pytest.mark.parametrize(("label", "token", "message"), BAD_TOKENS,
                         ids=[label for label, _, _ in BAD_TOKENS])
def test_bad_tokens_are_refused(issuer: TokenIssuer, label: str, token: str,
                                message: str) -> None:
    with pytest.raises(IdentityError, match=message):
        issuer.verify(user_id="alice", token=token)


def test_a_tampered_payload_is_refused(issuer: TokenIssuer) -> None:
    _, token = issuer.mint_demo("viewer")
    header, _, signature = token.split(".")
    forged_payload = jwt.encode(_claims(sub="demo-viewer", roles=["admin"]), "other-secret" * 4,
                                algorithm="HS256").split(".")[1]

    with pytest.raises(IdentityError):
        issuer.verify(user_id="demo-viewer", token=f"{header}.{forged_payload}.{signature}")


def test_errors_do_not_echo_the_token(issuer: TokenIssuer) -> None:
    token = jwt.encode(_claims(exp=int(time.time()) - 5), SECRET, algorithm="HS256")

    with pytest.raises(IdentityError) as caught:
        issuer.verify(user_id="alice", token=token)

    assert token not in str(caught.value)
    assert token.split(".")[1] not in str(caught.value)


def test_an_empty_token_is_the_demo_viewer_in_demo_mode(issuer: TokenIssuer) -> None:
    viewer = issuer.verify(user_id=None, token=None)

    assert viewer == Identity(user_id="demo-viewer", name="Demo Viewer", role="viewer")
    assert issuer.verify(user_id="demo-viewer", token="") == viewer
    with pytest.raises(IdentityError, match="demo viewer only"):
        issuer.verify(user_id="demo-admin", token=None)


def test_outside_demo_mode_a_token_is_required() -> None:
    issuer = TokenIssuer(SECRET, demo=False)

    with pytest.raises(IdentityError, match="required"):
        issuer.verify(user_id=None, token=None)
    with pytest.raises(IdentityError, match="only in demo mode"):
        issuer.mint_demo("admin")
    token = issuer.mint(user_id="alice", name="Alice", role="editor")
    assert issuer.verify(user_id="alice", token=token).role == "editor"


def test_unknown_demo_user_is_refused(issuer: TokenIssuer) -> None:
    with pytest.raises(IdentityError, match="Unknown demo user"):
        issuer.mint_demo("root")


def test_role_order() -> None:
    assert role_at_least("admin", "editor")
    assert role_at_least("editor", "editor")
    assert not role_at_least("viewer", "editor")
    assert not role_at_least("superuser", "viewer")

"""Sign-in outside demo mode (SPEC §10): Superset credentials for Superset's own tokens.

`POST /api/login` and the page's sign-in form both come here. Failed attempts are limited per
username and client address (a database count, so the limit holds across replicas); the
limit is checked before Superset is asked, so a locked-out guess never reaches it. The app
keeps no session: the tokens go back to the caller, which renews them with `renew`.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import time
from collections.abc import Callable
from typing import Any

from agent.errors import BadCredentials, InputError, SignInRateLimited
from agent.identity.superset import SignedIn, SupersetIdentity
from agent.inputs import clean_text
from agent.settings import Settings
from storage import Database
from storage import login_failures as repo

__all__ = ["MAX_CREDENTIAL_CHARS", "SignInService"]

MAX_CREDENTIAL_CHARS = 256


def _credential(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value or clean_text(value) != value:
        raise InputError(f"Give a {what}.")  # empty, or NUL / an unpaired surrogate in it
    if len(value) > MAX_CREDENTIAL_CHARS:
        raise InputError(f"The {what} is longer than {MAX_CREDENTIAL_CHARS} characters.")
    return value


class SignInService:
    def __init__(self, provider: SupersetIdentity, db: Database, settings: Settings,
                 clock: Callable[[], float] = time.time) -> None:
        self.provider = provider
        self.db = db
        self.max_failures = settings.auth_login_max_failures
        self.window_s = settings.auth_login_window_s
        self.clock = clock

    async def sign_in(self, *, username: Any, password: Any, client: str | None) -> SignedIn:
        """The user's Superset tokens, or `BadCredentials` (one message for every wrong
        credential) or `SignInRateLimited` after too many failures."""
        name = _credential(username, "username").strip()
        secret = _credential(password, "password")
        key = hashlib.sha256(f"{name.lower()}\n{client or '-'}".encode()).hexdigest()
        attempt = await asyncio.to_thread(self._reserve, key)
        failed = False
        try:
            return await self.provider.sign_in(username=name, password=secret)
        except BadCredentials:
            failed = True
            raise
        finally:
            if not failed:  # a success, an outage or a refused role is not a wrong guess
                await asyncio.to_thread(self._discard, attempt)

    async def renew(self, *, refresh_token: Any) -> SignedIn:
        """A fresh access token from Superset's refresh token (`TokenExpired` when it ended)."""
        token = refresh_token if isinstance(refresh_token, str) else ""
        return await self.provider.renew(refresh_token=token.strip())

    def sign_out(self, token: str | None) -> None:
        if token:
            self.provider.forget(token)

    def _reserve(self, key: str) -> int:
        """Count this attempt in advance; refuse it when it would exceed the limit."""
        now = self.clock()
        with self.db.session() as session:
            repo.lock_key(session=session, key=key)
            repo.prune_failures(session=session, before=now - self.window_s)
            attempt = repo.record_attempt(session=session, key=key, at=now)
            count, oldest = repo.failures_since(session=session, key=key,
                                                since=now - self.window_s)
            if count <= self.max_failures:
                return attempt
            repo.discard_attempt(session=session, attempt_id=attempt)
        wait = max(1, math.ceil((oldest or now) + self.window_s - now))
        raise SignInRateLimited(f"Too many failed sign-ins for this username from your "
                                f"address; try again in {wait} s.", retry_after_s=wait)

    def _discard(self, attempt: int) -> None:
        with self.db.session() as session:
            repo.discard_attempt(session=session, attempt_id=attempt)

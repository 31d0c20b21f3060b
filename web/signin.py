"""Callbacks of the sign-in strip outside demo mode: sign in, renew, sign out, hand-over.

The page holds the person's tokens (Superset's access and refresh tokens, or a token a host
frontend handed over) in hidden components and the tab's sessionStorage, never on the
server. Every callback returns one `SessionView`, the same tuple of outputs, so the strip,
the hidden identity and the renewal timer always change together.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import gradio as gr

from agent.errors import AgentError, IdentityError, IdentityUnavailable, TokenExpired
from agent.identity import Identity
from agent.identity.superset import SignedIn, token_expiry
from runtime import Runtime
from web.text_policy import md_code, md_escape

__all__ = ["SIGNED_OUT", "SIGN_IN_FIRST", "SIGN_IN_PROMPT", "SessionView", "SignInHandlers"]

SIGNED_OUT = ("You were signed out (your Superset session ended). Please sign in again; "
              "nothing you typed is lost.")
UNREACHABLE = "⚠️ Superset cannot be reached to confirm your sign-in; trying again shortly."
RETRY_RENEWAL_S = 20.0  # a lifetime that makes the page's timer fire again in 15 s
SIGN_IN_PROMPT = "Sign in with your Superset account to start."
SIGN_IN_FIRST = "Please sign in with your Superset account first; your message is kept."
_HANDOVER_ONLY = ("Open this page from your host application: it hands over your sign-in. "
                  "(This deployment verifies tokens from an external identity provider.)")




@dataclass(frozen=True)
class SessionView:
    """What the page shows and keeps for one sign-in state."""

    user_id: str = ""
    user_jwt: str = ""
    refresh_token: str = ""
    expires_in: float = 0  # seconds from now; the page schedules its renewal from it
    label: str = ""  # "Signed in as …" once signed in
    message: str = ""  # a notice above the form while signed out

    @property
    def signed_in(self) -> bool:
        return bool(self.user_jwt)

    def outputs(self, *, strip: bool = True) -> tuple[Any, ...]:
        """(user_id, user_jwt, refresh, expires_in, form box, session row, label, message);
        `strip=False` (demo mode) keeps the sign-in strip hidden."""
        return (self.user_id, self.user_jwt, self.refresh_token, self.expires_in,
                gr.update(visible=strip and not self.signed_in),
                gr.update(visible=strip and self.signed_in), self.label,
                md_escape(self.message))  # messages can quote Superset


def _label(identity: Identity) -> str:
    # Names come from Superset: `[x](https://…)` must not become a link, so code spans.
    return (f"👤 Signed in as {md_code(identity.name)} · {md_code(identity.user_id)} "
            f"({identity.role})")


def _view(signed: SignedIn) -> SessionView:
    left = max(0.0, signed.expires_at - time.time()) if signed.expires_at else 0.0
    return SessionView(user_id=signed.identity.user_id, user_jwt=signed.access_token,
                       refresh_token=signed.refresh_token or "", expires_in=round(left, 1),
                       label=_label(signed.identity))


class SignInHandlers:
    """Bound to one runtime; only meaningful outside demo mode (the strip is hidden there)."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.form = runtime.signin is not None  # username/password only with AUTH_MODE=superset

    @property
    def active(self) -> bool:
        return not self.runtime.settings.is_demo

    def signed_out(self, message: str = "") -> tuple[Any, ...]:
        if not message:
            message = SIGN_IN_PROMPT if self.form else _HANDOVER_ONLY
        return SessionView(message=message).outputs()

    async def sign_in(self, username: Any, password: Any, request: gr.Request | None
                      ) -> tuple[Any, ...]:
        """The form's Sign in: the same service (and failure limit) as `POST /api/login`."""
        if self.runtime.signin is None:
            return self.signed_out("Sign-in with a password is not available here.")
        client = request.client.host if request is not None and request.client else None
        try:
            signed = await self.runtime.signin.sign_in(username=username, password=password,
                                                       client=client)
        except AgentError as exc:  # said above the form, where the person is looking
            return self.signed_out(f"⚠️ {exc}")
        return _view(signed).outputs()

    async def renew(self, refresh_token: Any, user_id: Any) -> tuple[Any, ...]:
        """The page's timer: a fresh access token before the current one expires. Superset
        being unreachable keeps the session and tries again shortly; a refused renewal
        signs out with a clear message (the page keeps everything typed)."""
        if self.runtime.signin is None or not refresh_token:
            return self.signed_out(SIGNED_OUT)
        try:
            signed = await self.runtime.signin.renew(refresh_token=refresh_token)
        except IdentityUnavailable:  # keep everything; the page asks again in ~15 s
            unchanged = gr.update()
            return (unchanged, unchanged, unchanged, RETRY_RENEWAL_S, *(unchanged,) * 4)
        except AgentError:
            return self.signed_out(SIGNED_OUT)
        if user_id and signed.identity.user_id != user_id:  # never switch people silently
            return self.signed_out(SIGNED_OUT)
        return _view(signed).outputs()

    async def restore(self, stored: Any) -> SessionView:
        """The tab's saved session or a host's hand-over (`{"user_jwt", "refresh_token"}`):
        verified again, renewed when it has expired, else signed out."""
        data = _parse(stored)
        token, refresh = data.get("user_jwt", ""), data.get("refresh_token", "")
        if not token:
            return SessionView(message=SIGN_IN_PROMPT if self.form else _HANDOVER_ONLY)
        identities = self.runtime.identities
        try:
            identity = await identities.verify(user_id=None, token=token)
        except TokenExpired:
            if self.runtime.signin is None or not refresh:
                return SessionView(message=SIGNED_OUT)
            try:
                return _view(await self.runtime.signin.renew(refresh_token=refresh))
            except AgentError:
                return SessionView(message=SIGNED_OUT)
        except IdentityUnavailable:  # keep the session; the renewal timer checks again soon
            return SessionView(user_id=data.get("user_id", ""), user_jwt=token,
                               refresh_token=refresh, expires_in=RETRY_RENEWAL_S,
                               label=UNREACHABLE)
        except AgentError as exc:  # refused, or no role here
            return SessionView(message=str(exc))
        expires = token_expiry(token)
        return SessionView(user_id=identity.user_id, user_jwt=token, refresh_token=refresh,
                           expires_in=round(max(0.0, expires - time.time()), 1)
                           if expires else 0, label=_label(identity))

    async def handover(self, stored: Any) -> tuple[Any, ...]:
        return (await self.restore(stored)).outputs()

    def sign_out(self, user_jwt: Any) -> tuple[Any, ...]:
        if self.runtime.signin is not None and isinstance(user_jwt, str):
            self.runtime.signin.sign_out(user_jwt)
        return self.signed_out("You are signed out.")

    async def check(self, user_id: Any, user_jwt: Any) -> tuple[Any, ...]:
        """After a refused send: show the form again when the sign-in is what failed."""
        unchanged = tuple(gr.update() for _ in range(8))
        if not self.active:
            return unchanged
        try:
            await self.runtime.agent.authenticate(user_id, user_jwt)
        except IdentityError:
            return self.signed_out(SIGNED_OUT if user_jwt else SIGN_IN_FIRST)
        except AgentError:
            pass
        return unchanged


def _parse(stored: Any) -> dict[str, str]:
    if isinstance(stored, str) and stored.strip():
        try:
            stored = json.loads(stored)
        except ValueError:
            return {}
    if not isinstance(stored, dict):
        return {}
    return {key: value.strip() for key in ("user_id", "user_jwt", "refresh_token")
            if isinstance(value := stored.get(key), str)}

"""Translation of Superset HTTP failures into the agent's error types, at the client boundary.

    httpx.TimeoutException / NetworkError   -> TransientToolError
    502 / 503 / 504                          -> TransientToolError
    400 / 409 / 422                          -> ToolInputError (with Superset's own message)
    401 / 403                                -> ToolAuthError; SupersetRefused when the
                                                request carried the person's own token
    404                                      -> ToolNotFound
    anything else >= 400                     -> ToolFailure
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from agent.errors import (
    SupersetRefused,
    ToolAuthError,
    ToolFailure,
    ToolInputError,
    ToolNotFound,
    TransientToolError,
)

__all__ = ["error_for_response", "error_for_transport", "superset_message"]

_TRANSIENT = {502, 503, 504}
_MAX_MESSAGE = 500


def _flatten(value: Any) -> str:
    """Superset messages are strings, lists, or {field: [problems]} maps; make one line."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "; ".join(_flatten(item) for item in value)
    if isinstance(value, dict):
        return "; ".join(f"{key}: {_flatten(item)}" for key, item in value.items())
    return json.dumps(value, default=str)


def superset_message(response: httpx.Response) -> str:
    """The human-readable reason Superset gave, whatever shape the body has."""
    try:
        body = response.json()
    except ValueError:
        text = response.text.strip()
        return (text[:200] if text and not text.lstrip().startswith("<") else
                response.reason_phrase or f"HTTP {response.status_code}")
    if isinstance(body, dict):
        if body.get("errors"):
            return _flatten([err.get("message", err) if isinstance(err, dict) else err
                             for err in body["errors"]])[:_MAX_MESSAGE]
        for key in ("message", "msg", "error"):
            if body.get(key):
                return _flatten(body[key])[:_MAX_MESSAGE]
    return _flatten(body)[:_MAX_MESSAGE]


def error_for_response(response: httpx.Response, *, env: str, what: str,
                       as_user: bool = False) -> ToolFailure:
    """The error to raise for a failed response; `what` names the call, e.g. 'dashboard 42'.
    `as_user`: the request carried the person's own token, so a 401/403 is Superset's own
    permission check refusing that person, not a configuration problem of this app."""
    status = response.status_code
    reason = superset_message(response)
    if as_user and status in (401, 403):
        if status == 401 and "expired" in reason.lower():
            reason = "your Superset sign-in expired; sign in again"
        return SupersetRefused(f"Superset ({env}) refused {what} for your account: {reason}",
                               reason=reason)
    if status == 404:
        # Superset hides what a person may not see: with their own token, say so.
        hidden = " (or your Superset account cannot see it)" if as_user else ""
        return ToolNotFound(f"{what} was not found in environment {env!r}{hidden}.")
    if status in (400, 409, 422):
        return ToolInputError(f"Superset ({env}) rejected the request for {what}: {reason}")
    if status == 401:
        return ToolAuthError(f"Superset ({env}) did not accept the credentials: {reason}")
    if status == 403:
        return ToolAuthError(f"Superset ({env}) forbids this for the current user: {reason}")
    if status in _TRANSIENT:
        return TransientToolError(f"Superset ({env}) is temporarily unavailable "
                                  f"(HTTP {status}) for {what}.")
    return ToolFailure(f"Superset ({env}) failed on {what} with HTTP {status}: {reason}")


def error_for_transport(exc: httpx.TransportError, *, env: str, what: str,
                        is_write: bool) -> ToolFailure:
    """Connection problems and timeouts are transient; a write's outcome is then unknown."""
    if isinstance(exc, httpx.TimeoutException):
        kind = "timed out"
    elif isinstance(exc, httpx.NetworkError | httpx.RemoteProtocolError):
        kind = "could not be reached"
    else:
        return ToolFailure(f"Superset ({env}) request for {what} failed: {type(exc).__name__}")
    note = " The change may or may not have happened: check Superset." if is_write else ""
    return TransientToolError(f"Superset ({env}) {kind} during {what}.{note}")

"""The one adapter from domain errors to HTTP status codes and Gradio errors.

A database outage is a domain error too (`storage.retry.DatabaseUnavailable`): 503 with
`Retry-After`, and the same one sentence in Gradio, never the driver's text. `answer_outages`
installs it as an exception handler, so a route that does not catch it still answers 503.
"""

from __future__ import annotations

import gradio as gr
from fastapi import FastAPI, HTTPException, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.responses import Response
from sqlalchemy.exc import SQLAlchemyError

from agent.errors import (
    AgentError,
    AuditAccessError,
    BadCredentials,
    ConfirmationError,
    ConversationAccessError,
    IdentityError,
    IdentityUnavailable,
    InputError,
    RateLimited,
    RoleNotMapped,
    SignInRateLimited,
    TokenExpired,
)
from side_questions.errors import (
    Conflict,
    InvalidQuestion,
    NotFound,
    OverCapacity,
    SideQuestionError,
)
from storage.retry import DatabaseUnavailable, is_transient
from web.text_policy import escape_html

__all__ = ["answer_outages", "error_code", "gradio_error", "http_status", "to_gradio",
           "to_http"]

DomainError = AgentError | SideQuestionError | DatabaseUnavailable


def http_status(exc: DomainError) -> int:
    if isinstance(exc, RoleNotMapped):
        return 403  # known to the identity provider, but no role here
    if isinstance(exc, IdentityError):
        return 401
    if isinstance(exc, RateLimited):
        return 429
    if isinstance(exc, IdentityUnavailable | DatabaseUnavailable):
        return 503
    if isinstance(exc, ConversationAccessError | NotFound):
        return 404  # no existence leak: a foreign conversation looks like a missing one
    if isinstance(exc, InputError):
        return 400
    if isinstance(exc, AuditAccessError):
        return 403
    if isinstance(exc, Conflict | ConfirmationError):
        return 409
    if isinstance(exc, OverCapacity):
        return 429
    if isinstance(exc, InvalidQuestion):
        return {"too_long": 413, "empty": 400}.get(exc.kind, 422)
    return 500


def error_code(exc: DomainError) -> str:
    """A stable machine-readable name (the `X-Error-Code` header), e.g. `busy`."""
    if isinstance(exc, Conflict | InvalidQuestion):
        return exc.kind
    for kind, code in ((TokenExpired, "token_expired"), (BadCredentials, "bad_credentials"),
                       (RoleNotMapped, "no_role"), (SignInRateLimited, "rate_limited"),
                       (RateLimited, "over_user_share"),
                       (DatabaseUnavailable, "database_unavailable")):
        if isinstance(exc, kind):
            return code
    return {401: "unauthorized", 403: "forbidden", 404: "not_found", 400: "bad_request",
            409: "conflict", 429: "over_capacity", 503: "unavailable"}.get(
        http_status(exc), "internal")


def to_http(exc: DomainError) -> HTTPException:
    status = http_status(exc)
    headers = {"X-Error-Code": error_code(exc)}
    if status == 401:
        headers["WWW-Authenticate"] = "Bearer"
    if status == 429:
        headers["Retry-After"] = str(getattr(exc, "retry_after_s", 1))
    if status == 503:
        headers["Retry-After"] = str(getattr(exc, "retry_after_s", 5))
    return HTTPException(status_code=status, detail=str(exc), headers=headers)


def gradio_error(message: str, *, title: str = "Error", visible: bool = True) -> gr.Error:
    """A `gr.Error` whose text shows as text: Gradio renders toast messages as (sanitised)
    HTML, so an error quoting a Superset title or a user's input could otherwise load an
    image or show a link (web/text_policy.py). gradio_client callers get the same text."""
    return gr.Error(escape_html(message), title=escape_html(title), visible=visible,
                    print_exception=False)


def to_gradio(exc: DomainError) -> gr.Error:
    """For Gradio callbacks: the message for people, `<status> <code>` as the title."""
    return gradio_error(str(exc), title=f"{http_status(exc)} {error_code(exc)}")


async def _outage(request: Request, exc: Exception) -> Response:
    """Exception handler: an outage anywhere under a route is a 503, never a 500 with the
    driver's text (which can name the database host and port)."""
    if isinstance(exc, SQLAlchemyError) and not is_transient(exc):
        raise exc  # a bug, not an outage: the server's plain 500
    unavailable = exc if isinstance(exc, DatabaseUnavailable) else DatabaseUnavailable()
    return await http_exception_handler(request, to_http(unavailable))


def answer_outages(app: FastAPI) -> None:
    """Install `_outage` for what an outage can raise past a route's own error handling."""
    app.add_exception_handler(DatabaseUnavailable, _outage)
    app.add_exception_handler(SQLAlchemyError, _outage)

"""The one adapter from domain errors to HTTP status codes and Gradio errors."""

from __future__ import annotations

from fastapi import HTTPException

from agent.audit import AuditAccessError
from agent.errors import AgentError, ConversationAccessError, IdentityError, InputError

__all__ = ["http_status", "to_http"]


def http_status(exc: AgentError) -> int:
    if isinstance(exc, IdentityError):
        return 401
    if isinstance(exc, ConversationAccessError):
        return 404  # no existence leak: a foreign conversation looks like a missing one
    if isinstance(exc, InputError):
        return 400
    if isinstance(exc, AuditAccessError):
        return 403
    return 500


def to_http(exc: AgentError) -> HTTPException:
    return HTTPException(status_code=http_status(exc), detail=str(exc))

"""Errors of the agent package. They carry data and never log.

    AgentError
    ├── IdentityError          token missing, invalid, expired, or not the claimed user
    ├── ConversationAccessError conversation belongs to someone else
    ├── InputError             an argument is malformed (too long, wrong type)
    ├── ConfirmationError      a confirmation cannot be decided (unknown, foreign, used, expired)
    ├── AuditAccessError       a non-admin asked for the audit log
    ├── ModelError             the model provider failed (after translation at the boundary)
    │   └── ContextOverflowError  the prompt exceeded the model's context window
    └── ToolFailure            a tool could not do its job (becomes a result for the model)
        ├── ToolInputError     bad arguments; the model can correct them
        ├── ToolNotFound       the object does not exist
        ├── ToolAuthError      Superset refused the credentials (401) or the action (403)
        └── TransientToolError 502/503/504, connection error, read timeout: retryable
"""

from __future__ import annotations

__all__ = [
    "AgentError",
    "AuditAccessError",
    "ConfirmationError",
    "ContextOverflowError",
    "ConversationAccessError",
    "IdentityError",
    "InputError",
    "ModelError",
    "ToolAuthError",
    "ToolFailure",
    "ToolInputError",
    "ToolNotFound",
    "TransientToolError",
]


class AgentError(Exception):
    """Root of every error this package raises on purpose."""


class IdentityError(AgentError):
    pass


class ConversationAccessError(AgentError):
    pass


class InputError(AgentError):
    pass


class ConfirmationError(AgentError):
    """A confirmation cannot be decided; the message says why. Nothing was executed."""


class AuditAccessError(AgentError):
    """Someone who is not an admin asked to read the audit log."""


class ModelError(AgentError):
    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code


class ContextOverflowError(ModelError):
    pass


class ToolFailure(AgentError):
    retryable = False


class ToolInputError(ToolFailure):
    pass


class ToolNotFound(ToolFailure):
    pass


class ToolAuthError(ToolFailure):
    pass


class TransientToolError(ToolFailure):
    retryable = True

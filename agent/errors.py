"""Errors of the agent package. They carry data and never log.

    AgentError
    ├── IdentityError          token missing, invalid, expired, or not the claimed user
    │   ├── TokenExpired       it was valid but has expired: renew it or sign in again
    │   ├── BadCredentials     sign-in refused (one message for every wrong credential)
    │   └── RoleNotMapped      a real user whose roles map to no app role (fail closed)
    ├── RateLimited            over a per-user share (runs at once, runs a minute): 429
    │   └── SignInRateLimited  too many failed sign-ins for this username and address
    ├── IdentityUnavailable    the identity provider (Superset, a JWKS URL) cannot answer
    ├── ConversationAccessError conversation unknown or someone else's (one message)
    ├── InputError             an argument is malformed (too long, wrong type)
    ├── ConfirmationError      a confirmation cannot be decided (unknown, foreign, used, expired)
    ├── AuditAccessError       a non-admin asked for the audit log
    ├── ModelError             the model provider failed (after translation at the boundary)
    │   └── ContextOverflowError  the prompt exceeded the model's context window
    └── ToolFailure            a tool could not do its job (becomes a result for the model)
        ├── ToolInputError     bad arguments; the model can correct them
        ├── ToolNotFound       the object does not exist
        ├── ToolAuthError      Superset refused the credentials (401) or the action (403)
        │   └── SupersetRefused   …for the person's own account (passthrough): a denial
        └── TransientToolError 502/503/504, connection error, read timeout: retryable
"""

from __future__ import annotations

__all__ = [
    "CONVERSATION_NOT_FOUND",
    "AgentError",
    "AuditAccessError",
    "BadCredentials",
    "ConfirmationError",
    "ContextOverflowError",
    "ConversationAccessError",
    "IdentityError",
    "IdentityUnavailable",
    "InputError",
    "ModelError",
    "RateLimited",
    "RoleNotMapped",
    "SignInRateLimited",
    "SupersetRefused",
    "TokenExpired",
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


class TokenExpired(IdentityError):
    """The token was genuine but has expired; the page renews or asks to sign in again."""


class BadCredentials(IdentityError):
    """A sign-in was refused. The message is the same for a wrong name or password."""


class RoleNotMapped(IdentityError):
    """The person is known to the identity provider, but none of their roles is mapped."""


class RateLimited(AgentError):
    """Over a fair share; `retry_after_s` says when to try again (the Retry-After header)."""

    def __init__(self, message: str, *, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class SignInRateLimited(RateLimited):
    pass


class IdentityUnavailable(AgentError):
    """Who the caller is cannot be checked right now (the provider is down): try again."""


# One message for a conversation that does not exist and one that is someone else's, on
# every endpoint, so a caller cannot learn that an id exists.
CONVERSATION_NOT_FOUND = "Conversation not found."


class ConversationAccessError(AgentError):
    def __init__(self, message: str = CONVERSATION_NOT_FOUND) -> None:
        super().__init__(message)


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


class SupersetRefused(ToolAuthError):
    """Superset said 401/403 to a request made with the person's own token: Superset's own
    permissions refused it. `reason` is Superset's message (never a token)."""

    def __init__(self, message: str, *, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


class TransientToolError(ToolFailure):
    retryable = True

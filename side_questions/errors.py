"""Errors of the side-question service. They carry data and never log.

    SideQuestionError
    ├── Conflict           409; `kind` is no_snapshot | config_changed | busy |
    │                      client_request_id_reused
    ├── OverCapacity       429: this process runs its maximum of side questions, or this
    │                      person their share (at once, or a minute)
    ├── NotFound           404: no such request (or it was cleared)
    └── InvalidQuestion    400/413/422: empty, too long or malformed input; `kind` says which
"""

from __future__ import annotations

from typing import Literal

__all__ = [
    "NO_SUCH_REQUEST",
    "Conflict",
    "ConflictKind",
    "InvalidQuestion",
    "NotFound",
    "OverCapacity",
    "SideQuestionError",
]

NO_SUCH_REQUEST = "No such side question."
ConflictKind = Literal["no_snapshot", "config_changed", "busy", "client_request_id_reused"]

_CONFLICT_MESSAGES: dict[str, str] = {
    "no_snapshot": "There is no agent context yet: run the main agent first.",
    "config_changed": "The model configuration changed since the last agent run: "
                      "run the main agent first.",
    "busy": "A side question is already running in this conversation; stop it or wait.",
    "client_request_id_reused": "This client_request_id was already used with another "
                                "question.",
}


class SideQuestionError(Exception):
    """Root of every error this package raises on purpose."""


class Conflict(SideQuestionError):
    def __init__(self, kind: ConflictKind, message: str | None = None) -> None:
        super().__init__(message or _CONFLICT_MESSAGES[kind])
        self.kind = kind


class OverCapacity(SideQuestionError):
    def __init__(self, limit: int, message: str | None = None, *,
                 retry_after_s: int = 1) -> None:
        super().__init__(message or f"Too many side questions are running (limit {limit}); "
                         "try again in a moment.")
        self.limit = limit
        self.retry_after_s = retry_after_s


class NotFound(SideQuestionError):
    pass


class InvalidQuestion(SideQuestionError):
    def __init__(self, message: str, *,
                 kind: Literal["empty", "too_long", "malformed"] = "malformed") -> None:
        super().__init__(message)
        self.kind = kind

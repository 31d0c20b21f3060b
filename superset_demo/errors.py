"""Error responses in the exact shapes real Superset 6.1 uses, raised as one exception type.

    DemoError (status + JSON body)
    ├── not_found()          404 {"message": "Not found"}
    ├── invalid(fields)      400 {"message": {field: [msg]}}       (schema validation)
    ├── unprocessable(...)   422 {"message": {field: [msg]}}       (command validation)
    ├── command_error(...)   422 {"errors": [{message, error_type, level, extra}]}
    ├── csrf_error(text)     400 {"errors": [...GENERIC_BACKEND_ERROR...]}
    └── jwt_error(...)       401/422 {"msg": ...}                  (flask-jwt-extended)
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "DemoError",
    "command_error",
    "csrf_error",
    "invalid",
    "jwt_error",
    "not_found",
    "unprocessable",
]


class DemoError(Exception):
    """An HTTP error answer; the env app's exception handler renders it verbatim."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        super().__init__(status, body)
        self.status = status
        self.body = body


def not_found() -> DemoError:
    return DemoError(404, {"message": "Not found"})


def invalid(fields: dict[str, list[str]]) -> DemoError:
    return DemoError(400, {"message": fields})


def unprocessable(fields: dict[str, list[str]]) -> DemoError:
    return DemoError(422, {"message": fields})


def command_error(message: str, extra: dict[str, Any] | None = None) -> DemoError:
    return DemoError(422, {"errors": [{
        "message": message, "error_type": "GENERIC_COMMAND_ERROR", "level": "warning",
        "extra": {**(extra or {}), "issue_codes": [{
            "code": 1010,
            "message": "Issue 1010 - Superset encountered an error while running a command."}]},
    }]})


def csrf_error(text: str) -> DemoError:
    return DemoError(400, {"errors": [{
        "message": f"400 Bad Request: {text}", "error_type": "GENERIC_BACKEND_ERROR",
        "level": "error", "extra": {"issue_codes": [{
            "code": 1011,
            "message": "Issue 1011 - Superset encountered an unexpected error."}]},
    }]})


def jwt_error(status: int, msg: str) -> DemoError:
    return DemoError(status, {"msg": msg})

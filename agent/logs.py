"""One logging configuration for the whole app (issue 14, item 4).

- `LOG_LEVEL` (default INFO) and `LOG_FORMAT=text|json` (one JSON object per line).
- Every line logged while a run is driven carries its `run_id`, `conv_id` and `user`
  (`run_context`, a context variable: each run is its own asyncio task, so runs never
  see each other's fields); other lines carry `-`.
- Every line is scrubbed on the way out (agent/secrets.py: configured secrets, tokens,
  passwords in URLs, `token=` query parameters of the access log), tracebacks included.
- An internal error is logged once, with its traceback, under a short error id; the
  person sees `internal_error_message(...)`: one safe sentence with the same id.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import sys
import uuid
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

from agent.secrets import Scrubber

__all__ = ["RUN_FIELDS", "configure_logging", "internal_error_message", "run_context"]

RUN_FIELDS = ("run_id", "conv_id", "user")
_RUN: ContextVar[tuple[tuple[str, str], ...]] = ContextVar("agent_run_fields", default=())
_QUERY_SECRET = re.compile(r"(?i)([?&](?:token|access_token|refresh_token|user_jwt|jwt)=)"
                           r"[^&\s\"]+")
_TEXT = "%(asctime)s %(levelname)s %(name)s [run=%(run_id)s conv=%(conv_id)s user=%(user)s] " \
        "%(message)s"
_HANDLER_NAME = "superset-agent"


@contextlib.contextmanager
def run_context(**fields: str | None) -> Iterator[None]:
    """Within this block (and the tasks it starts), log lines carry these fields."""
    merged = dict(_RUN.get()) | {k: str(v) for k, v in fields.items() if v}
    token = _RUN.set(tuple(merged.items()))
    try:
        yield
    finally:
        _RUN.reset(token)


class _RunFields(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        current = dict(_RUN.get())
        for field in RUN_FIELDS:
            if not hasattr(record, field):
                setattr(record, field, current.get(field, "-"))
        return True


class _Scrubbed(logging.Formatter):
    """Formats, then scrubs the whole line (message, arguments and traceback)."""

    def __init__(self, scrubber: Scrubber, *, as_json: bool) -> None:
        super().__init__(_TEXT)
        self.scrubber = scrubber
        self.as_json = as_json

    def format(self, record: logging.LogRecord) -> str:
        if self.as_json:
            line: dict[str, Any] = {"ts": self.formatTime(record), "level": record.levelname,
                                    "logger": record.name, "message": record.getMessage()}
            line |= {field: getattr(record, field, "-") for field in RUN_FIELDS}
            if record.exc_info:
                line["traceback"] = self.formatException(record.exc_info)
            text = json.dumps(line, ensure_ascii=False, default=str)
        else:
            text = super().format(record)
        return self.scrubber.scrub(_QUERY_SECRET.sub(r"\1[redacted]", text))


def configure_logging(level: str = "INFO", fmt: str = "text",
                      scrubber: Scrubber | None = None, stream: Any = None) -> logging.Handler:
    """Install the app's one handler on the root logger (again: replaces it); uvicorn's
    loggers propagate to it (`python app.py` passes `log_config=None`)."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        if handler.get_name() == _HANDLER_NAME:
            root.removeHandler(handler)
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.set_name(_HANDLER_NAME)
    handler.addFilter(_RunFields())
    handler.setFormatter(_Scrubbed(scrubber or Scrubber(), as_json=fmt == "json"))
    root.addHandler(handler)
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):  # as uvicorn may have left
        named = logging.getLogger(name)  # them (own handlers, no propagation, disabled)
        named.handlers.clear()
        named.propagate = True
        named.disabled = False
        named.setLevel(logging.NOTSET)
    return handler


def internal_error_message(exc: BaseException, logger: logging.Logger, where: str) -> str:
    """Log `exc` once with its traceback under a new error id; the sentence to show."""
    error_id = uuid.uuid4().hex[:8]
    logger.error("internal error %s in %s: %s", error_id, where, type(exc).__name__,
                 exc_info=(type(exc), exc, exc.__traceback__))
    return (f"Internal error (error id {error_id}): something went wrong on our side; the "
            "details are in the server log under that id.")

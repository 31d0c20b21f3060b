"""Start-up checks of the places the app writes: the data directory and the database.

Each check returns None when all is well, or one line for the operator: which path or URL
(never its password), what is wrong, and what to do. `python app.py` prints it and exits
with status 2 instead of failing later with a traceback that names neither.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import uuid
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

__all__ = ["check_data_dir", "check_database", "redact_url"]

_PROBE_BYTES = 64 * 1024  # a write this size fails on a full file system, not only a create
_ERRNO_TEXT = {
    errno.ENOTDIR: "a part of the path is a file, not a directory",
    errno.EEXIST: "it exists and is not a directory",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.EROFS: "the file system is read-only",
    errno.ENOSPC: "no space left on the device",
    errno.EDQUOT: "the disk quota is exhausted",
    errno.ENOENT: "files cannot be created there",
}


def _os_reason(exc: OSError) -> str:
    return _ERRNO_TEXT.get(exc.errno or 0, exc.strerror or type(exc).__name__)


def check_writable_dir(path: Path, label: str, fix: str) -> str | None:
    """Create `path` if needed, then create, write, sync and delete a probe file in it."""
    shown = f"{label} {str(path)!r}"
    if path.exists() and not path.is_dir():
        return f"{shown} is not a directory: {fix}."
    probe = path / f".write-probe-{uuid.uuid4().hex[:8]}"
    try:
        path.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(descriptor, b"\0" * _PROBE_BYTES)
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
    except OSError as exc:
        return f"{shown} is not usable ({_os_reason(exc)}): {fix}."
    finally:
        with contextlib.suppress(OSError):
            probe.unlink(missing_ok=True)
    return None


def check_data_dir(path: Path) -> str | None:
    """DATA_DIR holds the token secret and the demo Superset: it must be writable."""
    return check_writable_dir(path, "DATA_DIR", "set DATA_DIR to a writable directory with "
                              "free space, or fix its permissions")


def redact_url(url: str) -> str:
    """The URL as it may be printed: the password replaced by ***."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", url)


def _driver_reason(exc: BaseException) -> str:
    """What the driver said, on one line and without the password it may echo."""
    orig = getattr(exc, "orig", None) or exc
    message = " ".join(str(orig).split())
    for pattern, reason in (("connection refused", "the connection was refused"),
                            ("timeout expired", "no answer before the connect timeout"),
                            ("timed out", "no answer before the connect timeout"),
                            ("password authentication failed", "the password was refused"),
                            ("could not translate host name", "the host name is unknown"),
                            ("name or service not known", "the host name is unknown")):
        if pattern in message.lower():
            return reason
    return message[:200] or type(orig).__name__


def _sqlite_problem(url: URL, shown: str) -> str | None:
    if not url.database or url.database == ":memory:":
        return None
    path = Path(url.database)
    if path.exists() and not path.is_file():
        return f"DATABASE_URL {shown}: {str(path)!r} is not a file: point it at a file in " \
               "a writable directory."
    return check_writable_dir(path.parent, f"DATABASE_URL {shown}: its directory",
                              "point DATABASE_URL at a file in a writable directory with "
                              "free space")


def check_database(url: str, *, timeout_s: int = 5) -> str | None:
    """Connect, read and take the write lock once (SQLite) within `timeout_s`."""
    shown = redact_url(url)
    try:
        parsed = make_url(url)
    except ArgumentError:
        return f"DATABASE_URL {shown} is not a database URL: use sqlite:///path/to/file.db " \
               "or postgresql+psycopg://user:password@host:port/database."
    backend = parsed.get_backend_name()
    if backend not in ("sqlite", "postgresql"):
        return f"DATABASE_URL {shown} uses {backend!r}: use sqlite or postgresql."
    if backend == "sqlite" and (problem := _sqlite_problem(parsed, shown)):
        return problem
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    connect_args = ({"timeout": timeout_s} if backend == "sqlite"
                    else {} if "connect_timeout" in parsed.query
                    else {"connect_timeout": timeout_s})
    try:
        engine = create_engine(parsed, connect_args=connect_args)
    except (ArgumentError, ImportError, SQLAlchemyError) as exc:
        return f"DATABASE_URL {shown} cannot be used ({_driver_reason(exc)}): fix DATABASE_URL."
    try:
        with engine.connect() as connection:
            connection.execute(text("SELECT 1"))
            if backend == "sqlite":  # a read-only file opens and reads fine; writes fail
                connection.exec_driver_sql("BEGIN IMMEDIATE")
                connection.exec_driver_sql("ROLLBACK")
    except SQLAlchemyError as exc:
        what = ("start the database or fix host, port and credentials in DATABASE_URL"
                if backend == "postgresql" else "point DATABASE_URL at a writable file")
        return f"DATABASE_URL {shown} is unusable ({_driver_reason(exc)}): {what}."
    finally:
        engine.dispose()
    return None

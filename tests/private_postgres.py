"""A PostgreSQL server of a test's own (own data directory, own free port) to stop and start.

Outage tests cannot stop the shared server at 127.0.0.1:5432. `initdb` and `pg_ctl` refuse
to run as root, so as root they run as the `postgres` user (`runuser`), in a directory
under /tmp that user can enter. Without the binaries the test is skipped, except under
CI=true, where that is a failure.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.web.conftest import free_port

__all__ = ["PrivatePostgres", "private_postgres"]


def _bin_dir() -> Path | None:
    """Debian keeps the server tools out of PATH, one directory per major version."""
    versions = [Path(path).parent for path in glob.glob("/usr/lib/postgresql/*/bin/pg_ctl")]
    versions.sort(key=lambda path: int(path.parent.name) if path.parent.name.isdigit() else 0)
    if versions:
        return versions[-1]
    pg_ctl = shutil.which("pg_ctl")
    return Path(pg_ctl).parent if pg_ctl else None


def _unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"A private PostgreSQL is required under CI=true: {reason}")
    pytest.skip(reason)


class PrivatePostgres:
    """One server: `start()`, `stop()`, and `url` for the app."""

    def __init__(self, bin_dir: Path, root: Path, port: int, as_user: list[str]) -> None:
        self.bin_dir = bin_dir
        self.root = root
        self.port = port
        self._as_user = as_user  # e.g. ["runuser", "-u", "postgres", "--"] as root

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, tool: str, *args: str, timeout: float = 60) -> None:
        result = subprocess.run([*self._as_user, str(self.bin_dir / tool), *args],
                                capture_output=True, text=True, timeout=timeout)
        if result.returncode != 0:
            log = (self.root / "log").read_text() if (self.root / "log").exists() else ""
            raise RuntimeError(f"{tool} failed: {result.stdout}{result.stderr}{log[-2000:]}")

    def init(self) -> None:
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres",
                  "--no-sync", "-E", "UTF8")

    def start(self) -> None:
        """Returns once the server accepts connections (`pg_ctl -w`)."""
        options = (f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 "
                   "-c fsync=off -c full_page_writes=off -c synchronous_commit=off")
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.root / "log"),
                  "-w", "-t", "60", "start")

    def stop(self) -> None:
        """Fast shutdown: open connections are cut, as in a failover or restart."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "-t", "60", "stop")


@contextmanager
def private_postgres() -> Iterator[PrivatePostgres]:
    bin_dir = _bin_dir()
    if bin_dir is None or not (bin_dir / "initdb").exists():
        _unavailable("PostgreSQL server binaries (initdb, pg_ctl) are not installed")
    assert bin_dir is not None
    as_user: list[str] = []
    root = Path(tempfile.mkdtemp(prefix="private-pg-"))  # /tmp: the postgres user can enter
    if os.geteuid() == 0:
        if shutil.which("runuser") is None:
            _unavailable("running as root without runuser to start PostgreSQL as postgres")
        try:
            shutil.chown(root, user="postgres")
        except (LookupError, OSError) as exc:
            _unavailable(f"no postgres user to run PostgreSQL as ({exc})")
        as_user = ["runuser", "-u", "postgres", "--"]
    server = PrivatePostgres(bin_dir, root, free_port(), as_user)
    try:
        server.init()
        server.start()
        yield server
    finally:
        with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
            server.stop()  # fails when already stopped, or never started
        shutil.rmtree(root, ignore_errors=True)

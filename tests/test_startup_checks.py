"""`python app.py` with an unusable DATA_DIR or database: one line on stderr naming the path
or URL (never the password), and exit status 2, not a traceback (issue 12, item 6).

Tests run as root here, and chmod 0555 does not stop root from writing. So "read-only" and
"full" are real file systems: a read-only tmpfs and a tiny full one, mounted for the test.
Without the privilege to mount, the read-only case uses chmod 0555 (as an ordinary user) or
/proc/1 (as root), and the full case is skipped. The other cases need no privilege: a path
under a file, a SQLite file under a file, and PostgreSQL on a closed port. All processes
start at once, so the module costs one start-up, not five.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.web.conftest import free_port

ROOT = Path(__file__).resolve().parent.parent
PASSWORD = "s3cret-pw"


@dataclass
class Outcome:
    shown: str  # what the line must name
    returncode: int
    stderr: str


def _mount_tmpfs(target: Path, options: str) -> bool:
    if os.geteuid() != 0:
        return False
    target.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(target)],
                            capture_output=True)
    return result.returncode == 0


def _writable(directory: Path) -> bool:
    probe = directory / f".probe-{os.getpid()}"
    try:
        probe.write_bytes(b"x")
    except OSError:
        return False
    probe.unlink()
    return True


def _fill(directory: Path) -> None:
    with contextlib.suppress(OSError), open(directory / "filler", "wb") as handle:
        while True:
            handle.write(b"\0" * 4096)
            handle.flush()
            os.fsync(handle.fileno())


def _start(data_dir: Path | str, database_url: str) -> subprocess.Popen[str]:
    env = {**os.environ, "DATA_DIR": str(data_dir), "DATABASE_URL": database_url,
           "GRADIO_SERVER_PORT": str(free_port())}
    return subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Outcome]]:
    tmp = tmp_path_factory.mktemp("startup")
    sqlite_ok = f"sqlite:///{tmp}/ok.db"
    a_file = tmp / "file.txt"
    a_file.write_text("not a directory")
    mounts: list[Path] = []
    cases: dict[str, tuple[str, subprocess.Popen[str]]] = {}

    read_only: Path | None = tmp / "read-only"
    if _mount_tmpfs(read_only, "ro,size=1m"):
        mounts.append(read_only)
    elif os.geteuid() != 0:
        read_only.mkdir()
        read_only.chmod(0o555)
    else:  # root without mount: /proc/1 refuses new files even to root
        read_only = Path("/proc/1") if not _writable(Path("/proc/1")) else None
    if read_only is not None:
        cases["read_only"] = (str(read_only), _start(read_only, sqlite_ok))
    full = tmp / "full"
    if _mount_tmpfs(full, "size=64k"):
        mounts.append(full)
        _fill(full)
        cases["full"] = (str(full), _start(full, sqlite_ok))
    cases["under_a_file"] = (str(a_file / "sub"), _start(a_file / "sub", sqlite_ok))
    cases["sqlite_under_a_file"] = (f"sqlite:///{a_file}/app.db",
                                    _start(tmp / "data", f"sqlite:///{a_file}/app.db"))
    closed = free_port()  # nothing listens there
    cases["postgres_closed_port"] = (
        f"postgresql+psycopg://postgres:***@127.0.0.1:{closed}/test",
        _start(tmp / "data2", f"postgresql+psycopg://postgres:{PASSWORD}@127.0.0.1:{closed}/test"))
    try:
        results = {}
        for name, (shown, process) in cases.items():
            try:
                _, stderr = process.communicate(timeout=120)
            except subprocess.TimeoutExpired:
                process.kill()
                _, stderr = process.communicate()
            results[name] = Outcome(shown, process.returncode, stderr)
        yield results
    finally:
        for mount in mounts:
            subprocess.run(["umount", str(mount)], capture_output=True)


@pytest.mark.parametrize("case", ["read_only", "full", "under_a_file", "sqlite_under_a_file",
                                  "postgres_closed_port"])
def test_an_unusable_place_exits_2_with_one_line(outcomes: dict[str, Outcome],
                                                 case: str) -> None:
    if case not in outcomes:
        pytest.skip(f"{case}: no such place here (a tmpfs mount needs CAP_SYS_ADMIN)")
    outcome = outcomes[case]
    lines = [line for line in outcome.stderr.splitlines() if line.strip()]
    assert outcome.returncode == 2, outcome.stderr[-3000:]
    assert len(lines) == 1, outcome.stderr[-3000:]
    assert outcome.shown in lines[0]
    assert "Traceback" not in outcome.stderr and PASSWORD not in outcome.stderr
    assert lines[0].startswith("Cannot start: ")

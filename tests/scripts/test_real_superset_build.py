"""The real-Superset cache is built once under a file lock, whoever asks and however many.

Each test runs `scripts/real_superset.py` in subprocesses against its own empty cache
(SUPERSET_AGENT_CACHE), with a fake build step or pre-made markers in place of Superset, so
they take seconds and need no Superset: two builders at once make one build, the other waits
and then uses it; nothing half-built is ever visible; a failed or killed build leaves nothing
behind and does not keep the lock. The one real build from an empty cache is minutes of CPU,
so it is a manual proof (recorded with issue 12), not a test.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"

# A child process: fake-build `cache/target` with `build_once`, as `template()` builds the
# real template. argv: scripts dir, base dir, mode ("peer": wait until a second child has
# arrived, so it must wait on the lock; "fail": raise mid-build; "hang": never finish).
CHILD = r"""
import os, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import real_superset as rs
base, mode = Path(sys.argv[2]), sys.argv[3]

def build(work: Path) -> None:
    with (base / "builds.log").open("a") as log:
        log.write(f"{os.getpid()}\n")
    (work / "payload").write_text("half")
    if mode == "peer":
        deadline = time.monotonic() + 30
        while len(list(base.glob("arrived-*"))) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1.0)  # the peer is now past its first marker check, blocked in flock
    elif mode == "fail":
        raise RuntimeError("superset db upgrade exited 1")
    elif mode == "hang":
        time.sleep(600)
    (work / "payload").write_text("whole")

(base / f"arrived-{os.getpid()}").touch()
print(rs.build_once(rs.CACHE / "target", ".done", build))
"""

# Holds the build lock like a build in progress would until the test says both waiters are
# blocked on it (the `release` file), makes the finished result, releases.
HOLDER = r"""
import sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import real_superset as rs
base = Path(sys.argv[2])
with rs.build_lock():
    (base / "held").touch()
    deadline = time.monotonic() + 120
    while not (base / "release").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    for marker in (rs.VENV / ".installed-6.1.0", rs.TEMPLATE / rs.TEMPLATE_MARKER):
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()
"""


def _env(cache: Path) -> dict[str, str]:
    # PIP_NO_INDEX: should the lock ever fail to hold, `install` fails fast, offline.
    return {**os.environ, "SUPERSET_AGENT_CACHE": str(cache), "PIP_NO_INDEX": "1"}


def _child(base: Path, mode: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", CHILD, str(SCRIPTS), str(base), mode],
                            env=_env(base / "cache"), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _leftovers(cache: Path) -> list[str]:
    return sorted(p.name for p in cache.glob(".target.*"))


def test_two_concurrent_builds_make_one_and_never_show_a_half_built_result(
    tmp_path: Path,
) -> None:
    target = tmp_path / "cache" / "target"
    procs = [_child(tmp_path, "peer"), _child(tmp_path, "peer")]
    while any(p.poll() is None for p in procs):
        if target.exists():  # visible only whole: the rename carries the marker with it
            assert (target / ".done").exists()
            assert (target / "payload").read_text() == "whole"
        time.sleep(0.01)
    results = [(p.returncode, *p.communicate(timeout=60)) for p in procs]

    assert [code for code, _, _ in results] == [0, 0], results
    assert len((tmp_path / "builds.log").read_text().split()) == 1
    assert sorted(float(out) > 0 for _, out, _ in results) == [False, True]
    [waiter_err] = [err for _, out, err in results if float(out) == 0]
    assert "waiting for the build in progress (pid " in waiter_err
    assert (target / "payload").read_text() == "whole"
    assert _leftovers(tmp_path / "cache") == []


def test_a_failed_build_leaves_nothing_and_the_next_call_builds(tmp_path: Path) -> None:
    failed = _child(tmp_path, "fail")
    _, err = failed.communicate(timeout=60)
    assert failed.returncode == 1 and "superset db upgrade exited 1" in err
    assert not (tmp_path / "cache" / "target").exists()
    assert _leftovers(tmp_path / "cache") == []

    again = _child(tmp_path, "once")
    again.communicate(timeout=60)
    assert again.returncode == 0
    assert (tmp_path / "cache" / "target" / "payload").read_text() == "whole"


def test_a_killed_build_releases_the_lock_and_its_debris_is_cleared(tmp_path: Path) -> None:
    hung = _child(tmp_path, "hang")
    deadline = time.monotonic() + 30
    while not list((tmp_path / "cache").glob(".target.building-*/payload")):
        assert hung.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    hung.send_signal(signal.SIGKILL)
    hung.communicate(timeout=60)
    assert not (tmp_path / "cache" / "target").exists()  # the half-built one stays hidden

    again = _child(tmp_path, "once")
    again.communicate(timeout=30)  # a lock left held would hang here
    assert again.returncode == 0
    assert (tmp_path / "cache" / "target" / "payload").read_text() == "whole"
    assert _leftovers(tmp_path / "cache") == []


def test_install_and_template_wait_for_a_build_in_progress_and_then_do_nothing(
    tmp_path: Path,
) -> None:
    """The real CLI: while another process holds the lock and finishes both results,
    `install` and `template` wait, then find them made and build nothing. Had either not
    waited, it would have found no markers and started a real (here: failing) build."""
    cache = tmp_path / "cache"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(SCRIPTS), str(tmp_path)],
                              env=_env(cache), stdout=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not (tmp_path / "held").exists():
        assert holder.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    clis = {command: subprocess.Popen(
        [sys.executable, str(SCRIPTS / "real_superset.py"), command], env=_env(cache),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for command in ("install", "template")}
    for proc in clis.values():  # each says it waits, then blocks on the lock
        assert proc.stderr is not None
        seen = []
        while not seen or "waiting for the build in progress" not in seen[-1]:
            line = proc.stderr.readline()
            assert line, f"exited without waiting: {''.join(seen)}"
            seen.append(line)
    (tmp_path / "release").touch()
    holder.communicate(timeout=60)
    assert holder.returncode == 0
    for command, proc in clis.items():
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        assert json.loads(out) == {f"{command}_seconds": 0.0}


def test_the_build_script_needs_only_the_standard_library() -> None:
    """`.ci/run` builds the template before the project is installed: on a new machine with
    a bare Python, an import of a third-party package (httpx, once) failed the whole run."""
    result = subprocess.run(
        [sys.executable, "-I", "-S", "-c",
         f"import sys; sys.path.insert(0, {str(SCRIPTS)!r}); import real_superset"],
        capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def test_a_waiter_arriving_before_the_holder_wrote_its_pid_still_names_the_holder(
    tmp_path: Path,
) -> None:
    """The holder writes "pid N since ..." just after its flock succeeds; a waiter that
    read the file in between logged "holder unknown" (CI, 2026-12-05). Here the holder
    writes during the waiter's first pause, exactly that interleaving."""
    sys.path.insert(0, str(SCRIPTS))
    try:
        import superset_cache
    finally:
        sys.path.remove(str(SCRIPTS))
    lock_file = tmp_path / "build.lock"
    lock_file.touch()
    with lock_file.open("a+") as waiters_view:
        def holder_writes_now(_seconds: float) -> None:
            lock_file.write_text("pid 4242 since 12:00:00")

        assert superset_cache.holder_of(waiters_view, pause=holder_writes_now) == \
            "pid 4242 since 12:00:00"
        lock_file.write_text("")  # a holder that never says who it is: named so, promptly
        assert superset_cache.holder_of(waiters_view, patience=0.0) == "holder unknown"

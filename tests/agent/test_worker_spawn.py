"""`python app.py` spawns the model worker before anything heavy is imported
(`agent/worker_spawn.py`): its import of litellm is start-up's longest part, and the first
answer waited for it (spawned 0.65-0.93 s after the server's start, behind the settings'
modules and the database check, traced)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from agent import worker_spawn

ROOT = Path(__file__).resolve().parents[2]

_SPAWN_ORDER = textwrap.dedent("""
    import runpy, subprocess, sys

    def popen(command, **_):  # the worker's spawn: what start-up has imported by then
        print("spawned", " ".join(command[1:3]), "with",
              sorted(name for name in ("pydantic", "sqlalchemy", "agent.settings", "gradio",
                                       "litellm") if name in sys.modules))
        raise SystemExit(0)  # enough: start-up stops here

    subprocess.Popen = popen
    runpy.run_path("app.py", run_name="__main__")  # `python app.py`
    print("never spawned")
""")


def test_python_app_py_spawns_the_model_worker_before_importing_settings_or_gradio(
        tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", _SPAWN_ORDER], cwd=ROOT, text=True,
                          capture_output=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "DATA_DIR": str(tmp_path),
                               "DATABASE_URL": f"sqlite:///{tmp_path}/app.db"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == ["spawned -m agent.model_worker with []"]


@pytest.mark.parametrize(("environ", "expected"), [
    ({}, True),
    ({"AGENT_MODEL_PROCESS": "true"}, True),
    ({"AGENT_MODEL_PROCESS": "1"}, True),
    ({"AGENT_MODEL_PROCESS": "false"}, False),
    ({"agent_model_process": "OFF"}, False),  # any case, as the settings read it
    ({"AGENT_MODEL_PROCESS": "0"}, False),
    ({"AGENT_MODEL_PROCESS": "no"}, False),
])
def test_whether_to_spawn_is_read_as_the_settings_read_it(
        environ: dict[str, str], expected: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    from agent.settings import Settings

    assert worker_spawn.wanted(environ) is expected
    monkeypatch.delenv("AGENT_MODEL_PROCESS", raising=False)
    for key, value in environ.items():
        monkeypatch.setenv(key, value)
    assert Settings().agent_model_process is expected


def test_a_worker_spawned_early_that_the_settings_do_not_want_ends_and_is_reaped() -> None:
    worker_spawn.start_early()
    early = worker_spawn._early
    assert early is not None
    process = early[0]
    worker_spawn.discard_early()  # its socket closes: it exits at once
    assert worker_spawn.adopt_early() is None
    reaper = next(thread for thread in threading.enumerate()
                  if thread.name == "model-worker-discarded")
    reaper.join(timeout=120)  # the process's exit, not a fixed time
    assert not reaper.is_alive() and process.returncode == 0  # reaped: no zombie left


def _imported(stderr: str) -> set[str]:
    """The modules whose import finished, from `-X importtime`'s lines on stderr."""
    return {line.rsplit("|", 1)[1].strip() for line in stderr.splitlines()
            if line.startswith("import time:")}


def test_a_worker_whose_server_is_gone_exits_without_finishing_its_import(
        capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """`python app.py` that refuses to start (exit 2) closes the worker's socket at once;
    the worker went on importing litellm first (3-4 s of CPU; 42 s for the start-up
    check's five refused starts on a loaded CI machine) with the server's stdout and stderr
    open, so whoever read them to the end waited. Now it exits mid-import: its stderr
    (`-X importtime`, inherited) shows litellm never finished importing."""
    monkeypatch.setenv("PYTHONPROFILEIMPORTTIME", "1")
    process, sock = worker_spawn.spawn()
    sock.close()  # the server is gone before the worker has read anything
    assert process.wait(timeout=120) == 0  # its exit, not a fixed time
    imported = _imported(capfd.readouterr().err)
    assert {"socket", "pickle", "threading"} <= imported  # the lines reach this test
    assert not imported & {"litellm", "litellm.main"}

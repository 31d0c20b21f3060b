"""Spawning the model worker process (`agent/model_worker.py`), importing nothing heavy.

`python app.py` spawns it first thing, before even the settings' modules (pydantic,
SQLAlchemy: ~0.75 s of imports and the database check): the worker's import of litellm is
the longest part of start-up, and the first answer waited for it. Traced (5 starts): the
worker was spawned 0.65-0.93 s after the server's start, finished importing 0.2-1.1 s after
the server answered its first 200, and the first turn waited for it. Spawned first
(bench/startup.py, two runs of 5 rounds each side): first completed turn 1.19 / 1.15x the
bare app's -> 1.01 / 1.03x; first turn after the 200 1.03 / 1.14 s -> 0.53 / 0.60 s.
`model_process` wraps the spawned process in its `ModelWorker` when the runtime is built
(`adopt_early`).

Whether to spawn is read from the environment as the settings will read it
(`AGENT_MODEL_PROCESS`, any case; off for a false value); settings that end up saying
otherwise discard the spawned worker (`discard_early`), and settings that do not validate
(or an unusable DATA_DIR or database) end the server, whose closed socket ends the worker
at once, before its import is through (`model_worker._read_until_closed`).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path

__all__ = ["adopt_early", "discard_early", "spawn", "start_early", "wanted"]

_PROJECT_ROOT = Path(__file__).resolve().parents[1]
_FALSE = {"0", "false", "f", "no", "n", "off"}  # as pydantic reads a bool
_early: tuple[subprocess.Popen[bytes], socket.socket] | None = None
_early_lock = threading.Lock()


def spawn() -> tuple[subprocess.Popen[bytes], socket.socket]:
    """A new worker process and this end of its socket."""
    ours, theirs = socket.socketpair()
    environ = dict(os.environ)
    environ["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(_PROJECT_ROOT), environ.get("PYTHONPATH")]))
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "agent.model_worker", str(theirs.fileno())],
            pass_fds=[theirs.fileno()], env=environ, stdin=subprocess.DEVNULL)
    except BaseException:
        ours.close()
        raise
    finally:
        theirs.close()
    return process, ours


def wanted(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether the settings will ask for the worker process (`AGENT_MODEL_PROCESS`, default
    on), read without importing them."""
    values = [value for key, value in environ.items() if key.upper() == "AGENT_MODEL_PROCESS"]
    return not values or values[-1].strip().lower() not in _FALSE


def start_early() -> None:
    """Spawn the worker now (`python app.py`, before its slow imports); idempotent."""
    global _early
    with _early_lock:
        if _early is None:
            _early = spawn()


def adopt_early() -> tuple[subprocess.Popen[bytes], socket.socket] | None:
    """The worker `start_early` spawned, handed out once; None when there is none."""
    global _early
    with _early_lock:
        early, _early = _early, None
        return early


def discard_early() -> None:
    """End a worker spawned early that the settings do not want: its socket closes, so it
    exits at once, in the middle of its import if need be; a daemon thread reaps it, so
    the server goes on at once and leaves no zombie behind."""
    early = adopt_early()
    if early is not None:
        process, sock = early
        sock.close()
        threading.Thread(target=process.wait, name="model-worker-discarded",
                         daemon=True).start()

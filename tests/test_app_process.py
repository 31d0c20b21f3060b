"""README command 1 for real: `python app.py` serves /agent, and a restart keeps history.

Runs the app as a separate process, as a person would, on the parametrised database.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.fakes.gradio_api import api_client
from tests.waits import PROCESS_START_S
from tests.web.conftest import free_port

ROOT = Path(__file__).resolve().parent.parent


@contextmanager
def app_process(database_url: str, data_dir: Path, port: int) -> Iterator[str]:
    env = {**os.environ, "GRADIO_SERVER_PORT": str(port), "DATABASE_URL": database_url,
           "DATA_DIR": str(data_dir)}
    with served_app(env, port) as url:
        yield url


@contextmanager
def served_app(env: dict[str, str], port: int, *, ready_path: str = "/agent/",
               timeout_s: float = PROCESS_START_S) -> Iterator[str]:
    """`python app.py` with exactly `env`, once `ready_path` answers 200; stopped after."""
    with served_process(env, port, ready_path=ready_path, timeout_s=timeout_s) as (url, _):
        yield url


@contextmanager
def served_process(env: dict[str, str], port: int, *, ready_path: str = "/agent/",
                   timeout_s: float = PROCESS_START_S) -> Iterator[tuple[str, subprocess.Popen]]:
    """`served_app`, also handing out the process (for tests that kill it)."""
    process = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            assert process.poll() is None, process.stdout.read() if process.stdout else ""
            try:
                if httpx.get(f"{url}{ready_path}", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.2)  # polling a starting process: the wait is for its answer
        else:
            raise AssertionError(f"python app.py did not serve {ready_path} within "
                                 f"{timeout_s:g} s")
        yield url, process
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


def _user_texts(chat: list[dict]) -> list[str]:
    texts = []
    for message in chat:
        if message["role"] != "user":
            continue
        content = message["content"]
        texts.append("".join(p.get("text", "") for p in content) if isinstance(content, list)
                     else content)
    return texts


def _model_workers(parent_pid: int) -> list[int]:
    """Pids of `agent.model_worker` processes whose parent is `parent_pid`."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (stat.parent / "cmdline").read_bytes()
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile
        if ppid == parent_pid and b"agent.model_worker" in cmdline:
            found.append(int(stat.parent.name))
    return found


def test_python_app_serves_and_a_restart_keeps_history(database_url: str, tmp_path: Path
                                                       ) -> None:
    port = free_port()
    env = {**os.environ, "GRADIO_SERVER_PORT": str(port), "DATABASE_URL": database_url,
           "DATA_DIR": str(tmp_path / "data")}
    with served_process(env, port) as (url, process):
        # Model calls run in one worker process (agent/model_worker.py), which ends with
        # the server (checked below, after the server stopped).
        workers = _model_workers(process.pid)
        assert len(workers) == 1
        assert httpx.get(f"{url}/", follow_redirects=False, timeout=5).headers[
            "location"] == "/agent/"
        assert httpx.get(f"{url}/api/health", timeout=5).json()["status"] == "ok"
        who = httpx.post(f"{url}/api/demo/token", json={"user": "editor"}, timeout=5).json()
        client = api_client(f"{url}/agent/")
        _, events = client.predict("what can you do?", None, "", who["user_id"],
                                   who["user_jwt"], "ss-dev", api_name="/agent_handler")
        assert events[-1]["status"] == "completed"
        conv_id = events[0]["conv_id"]
    deadline = time.monotonic() + PROCESS_START_S
    while Path(f"/proc/{workers[0]}/cmdline").exists() and \
            b"agent.model_worker" in Path(f"/proc/{workers[0]}/cmdline").read_bytes():
        assert time.monotonic() < deadline, "the model worker outlived the server"
        time.sleep(0.05)  # polling another process's exit: there is no event to await

    with app_process(database_url, tmp_path / "data", port) as url:
        # The token secret lives in DATA_DIR, so the same token is still valid.
        client = api_client(f"{url}/agent/")
        chat, events = client.predict("which environments are there?", None, conv_id,
                                      who["user_id"], who["user_jwt"], "ss-dev",
                                      api_name="/agent_handler")
        assert events[-1]["status"] == "completed"
        assert _user_texts(chat) == ["<p>what can you do?</p>",
                                     "<p>which environments are there?</p>"]  # chat HTML

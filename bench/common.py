"""Server processes for the benchmarks: `python app.py` and the bare baselines, each started
as a process of its own, polled until it answers, measured from /proc, and stopped.

Every server under test runs in its own process, never in the benchmark's: the driver's
own threads and imports must not share a GIL (or a resident set) with what it measures.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from agent.settings import apply_offline_defaults  # light: no gradio, no litellm

apply_offline_defaults()  # inherited by every server process started below

ROOT = Path(__file__).resolve().parent.parent

__all__ = ["APP_SETTINGS", "ROOT", "Server", "Servers", "free_port", "start_app",
           "start_bare_api", "start_bare_gradio", "using", "wait_all"]

# One client for every readiness probe: `httpx.get` builds a client, with its TLS context,
# per call (39 ms of CPU measured here). Probing every 50 ms that way kept ~45 % of a core
# busy in the driver while the servers started, which starved the app's model worker (its
# litellm import then ran at nice 19, yielding to any other process) and so lengthened the
# app's first answer; a bare one-process app was not hurt. A shared client: 0.2 ms a probe.
_PROBE = httpx.Client(timeout=1)
READY_TIMEOUT_S = 600.0  # a loaded 2-core machine has taken minutes to import gradio+litellm
# Every benchmark app runs with the per-person rate limits raised: one driver stands in for
# many people (hundreds of turns and side questions a minute). The limiter still runs.
APP_SETTINGS = {"RUNS_BURST_PER_USER": 1_000_000, "RUNS_PER_MINUTE_PER_USER": 1_000_000,
                "SIDE_BURST_PER_USER": 1_000_000, "SIDE_PER_MINUTE_PER_USER": 1_000_000}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _proc_status_mb(pid: int, key: str) -> float:
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:  # exited meanwhile
        return 0.0
    for line in lines:
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def _process_tree(pid: int) -> list[int]:
    """`pid` and its descendants: the app's model worker process counts as the app."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(stat.parent.name))
    tree, todo = [], [pid]
    while todo:
        tree.append(current := todo.pop())
        todo += children.get(current, [])
    return tree


@dataclass
class Server:
    """One server process; `url` is where its Gradio page (or API) lives."""

    name: str
    base: str  # http://127.0.0.1:PORT
    ready_path: str  # answers 200 once the server is up
    process: subprocess.Popen
    log: Path
    database_url: str | None = None
    replay: Path | None = None  # what a bare baseline replays (bare_gradio.py, bare_api.py)
    spawned_at: float = field(default_factory=time.perf_counter)
    ready_s: float | None = None  # seconds from spawn to the first 200

    @property
    def url(self) -> str:
        return self.base + self.ready_path

    def rss_mb(self) -> float:
        """Resident memory of the server and its child processes (the model worker)."""
        return sum(_proc_status_mb(pid, "VmRSS") for pid in _process_tree(self.process.pid))

    def peak_rss_mb(self) -> float:
        """The sum of each process's high-water mark of resident memory (VmHWM), over the
        server and its child processes (an upper bound of their joint peak)."""
        return sum(_proc_status_mb(pid, "VmHWM") for pid in _process_tree(self.process.pid))

    def poll_ready(self) -> bool:
        """One probe; records `ready_s` on the first 200. Raises if the process died."""
        if self.ready_s is not None:
            return True
        if self.process.poll() is not None:
            tail = self.log.read_text(errors="replace")[-3000:]
            raise RuntimeError(f"{self.name} exited with {self.process.returncode}:\n{tail}")
        try:
            if _PROBE.get(self.url).status_code == 200:
                self.ready_s = time.perf_counter() - self.spawned_at
                return True
        except httpx.HTTPError:
            pass
        return False

    def wait_ready(self) -> float:
        wait_all([self])
        assert self.ready_s is not None
        return self.ready_s

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def wait_all(servers: list[Server]) -> None:
    """Poll every server until each answers 200 (they start in parallel: two cores)."""
    deadline = time.perf_counter() + READY_TIMEOUT_S
    waiting = list(servers)
    while waiting:
        waiting = [server for server in waiting if not server.poll_ready()]
        if waiting and time.perf_counter() > deadline:
            raise RuntimeError(f"{[s.name for s in waiting]} did not answer within "
                               f"{READY_TIMEOUT_S:.0f} s")
        if waiting:
            time.sleep(0.05)


def _spawn(name: str, command: list[str], ready_path: str, env: dict[str, str],
           port: int, **fields: Any) -> Server:
    log = Path(tempfile.mkstemp(prefix=f"bench-{name.replace(' ', '_')}-", suffix=".log")[1])
    with log.open("wb") as sink:
        process = subprocess.Popen(command, cwd=ROOT, env={**os.environ, **env},
                                   stdout=sink, stderr=subprocess.STDOUT)
    return Server(name=name, base=f"http://127.0.0.1:{port}", ready_path=ready_path,
                  process=process, log=log, **fields)


def start_app(database_url: str, data_dir: Path, **settings: object) -> Server:
    """`python app.py` as an operator starts it; `settings` are extra environment variables
    (e.g. OFFLINE_TOKEN_DELAY_MS=20)."""
    port = free_port()
    env = {"DATABASE_URL": database_url, "DATA_DIR": str(data_dir),
           "GRADIO_SERVER_PORT": str(port), "LOG_LEVEL": "WARNING",
           **{key: str(value) for key, value in settings.items()}}
    return _spawn("app.py", [sys.executable, "app.py"], "/agent/", env, port,
                  database_url=database_url)


def start_bare_gradio(replay: Path, concurrency: int = 16) -> Server:
    """bench/bare_gradio.py: a bare Blocks app replaying `replay` (see that module)."""
    port = free_port()
    env = {"BENCH_PORT": str(port), "BENCH_CONCURRENCY": str(concurrency),
           "BENCH_REPLAY": str(replay)}
    return _spawn("bare Gradio", [sys.executable, "-m", "bench.bare_gradio"], "/", env, port,
                  replay=replay)


def start_bare_api(database_url: str, replay: Path) -> Server:
    """bench/bare_api.py: bare FastAPI doing one insert per submit (see that module)."""
    port = free_port()
    env = {"BENCH_PORT": str(port), "BENCH_DATABASE_URL": database_url,
           "BENCH_REPLAY": str(replay)}
    return _spawn("bare FastAPI", [sys.executable, "-m", "bench.bare_api"], "/health", env,
                  port, database_url=database_url, replay=replay)


class Servers:
    """The servers a benchmark runs against, started on first request (in parallel: call
    `ready` once all are requested) and stopped by `close`. A script run alone makes its
    own; `all.py --short` hands one set to every script, so scripts asking for servers with
    the same settings share a process (a quick check; its numbers are not for quoting)."""

    def __init__(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="bench-servers-")
        self.dir = Path(self._tmp.name)
        self._started: dict[tuple[Any, ...], Server] = {}

    def _get(self, key: tuple[Any, ...], start: Callable[[int], Server]) -> Server:
        if key not in self._started:
            self._started[key] = start(len(self._started))
        return self._started[key]

    def app(self, database_url: str | None = None, **settings: object) -> Server:
        """`python app.py` with APP_SETTINGS and `settings`; SQLite in this set's directory
        unless `database_url` is given."""
        return self._get(("app", database_url, tuple(sorted(settings.items()))), lambda n:
                         start_app(database_url or f"sqlite:///{self.dir}/app-{n}.db",
                                   self.dir / f"data-{n}", **{**APP_SETTINGS, **settings}))

    def bare_gradio(self, concurrency: int = 16) -> Server:
        return self._get(("bare_gradio", concurrency), lambda n: start_bare_gradio(
            self.dir / f"replay-{n}.json", concurrency))

    def bare_api(self, database_url: str | None = None) -> Server:
        return self._get(("bare_api", database_url), lambda n: start_bare_api(
            database_url or f"sqlite:///{self.dir}/bare-{n}.db", self.dir / f"replay-{n}.json"))

    def ready(self, *servers: Server) -> tuple[Server, ...]:
        wait_all(list(servers))
        return servers

    def stop(self, server: Server) -> None:
        """Stop one now (e.g. before its database schema is dropped)."""
        self._started = {key: s for key, s in self._started.items() if s is not server}
        server.stop()
        with contextlib.suppress(OSError):
            server.log.unlink()

    def close(self) -> None:
        for server in list(self._started.values()):
            self.stop(server)
        self._tmp.cleanup()

    def __enter__(self) -> Servers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextlib.contextmanager
def using(shared: Servers | None) -> Iterator[Servers]:
    """`shared` as it is (its owner closes it), or a set of this script's own."""
    if shared is not None:
        yield shared
        return
    with Servers() as own:
        yield own

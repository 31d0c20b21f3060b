"""`ProcessGateway`: the `ModelGateway` the served app uses, with litellm in a child process
(`agent/model_worker.py` says why and speaks the other end of the protocol).

`python app.py` spawns the worker first thing (`agent/worker_spawn.py`), before gradio or
even the settings are imported, so the imports run on two cores; `build_runtime` adopts
that worker (`adopt_early`). A worker
that dies (killed, out of memory) fails the calls in flight with a `ModelError` the run
reports, and the next call starts a new one. Closing the gateway (shutdown) closes the
socket, which ends the worker; so does the server's own death, since the worker reads end of
file on its socket then.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import socket
import subprocess
import threading
from collections.abc import AsyncIterator
from typing import Any

from agent import worker_spawn
from agent.errors import ContextOverflowError, ModelError
from agent.model_gateway import ModelReply, ModelRequest, TextDelta
from agent.model_worker import FrameReader, send_frame
from agent.secrets import Scrubber

__all__ = ["ModelWorker", "ProcessGateway", "adopt_early"]

WORKER_GONE = "The model worker process stopped; try again."


class ModelWorker:
    """One worker process, its socket, and the reader thread that hands each answer to the
    event loop of the call that asked for it."""

    def __init__(self, connected: socket.socket | None = None,
                 process: subprocess.Popen[bytes] | None = None) -> None:
        """Spawns a worker process, or speaks to `connected`: a process spawned already
        (`worker_spawn`), or the far end of a test's socket, with no process."""
        if connected is None:
            process, connected = worker_spawn.spawn()
        self.process = process
        self.sock = connected
        self._send_lock = threading.Lock()
        self._waiting: dict[int, tuple[asyncio.AbstractEventLoop, asyncio.Queue[Any]]] = {}
        self._ids = itertools.count(1)
        self.configured = False
        self.alive = True
        self._reader = threading.Thread(target=self._read, name="model-worker-answers",
                                        daemon=True)
        self._reader.start()

    def configure(self, secrets: list[str], offline_token_delay_s: float) -> None:
        """The settings the worker needs, and the offline model's tool facts (so the worker
        never imports the tools); sent once, before any call."""
        if not self.configured:
            from agent.offline.catalog import TOOLS

            self.send(("config", secrets, offline_token_delay_s, dict(TOOLS)))
            self.configured = True

    def send(self, message: Any) -> None:
        send_frame(self.sock, self._send_lock, message)

    def open(self) -> tuple[int, asyncio.Queue[Any]]:
        """A new call id and the queue its answers arrive on (this loop's)."""
        request_id, answers = next(self._ids), asyncio.Queue()
        self._waiting[request_id] = (asyncio.get_running_loop(), answers)
        if not self.alive:  # died between the check and now: answered at once
            answers.put_nowait(("error", False, WORKER_GONE, None))
        return request_id, answers

    def done(self, request_id: int) -> None:
        self._waiting.pop(request_id, None)

    def _read(self) -> None:
        reader = FrameReader(self.sock)
        while (messages := reader.frames()) is not None:
            self._deliver([(message[0], message[1:]) for message in messages])
        self.alive = False
        self._deliver([(request_id, ("error", False, WORKER_GONE, None))
                       for request_id in list(self._waiting)])

    def _deliver(self, answers: list[tuple[int, tuple[Any, ...]]]) -> None:
        """Hands the answers to their calls' loops: one wake-up per loop for all the answers
        read together, not one per answer (each a write to the loop's self-pipe that the
        loop must wake for while the streams it serves wait)."""
        by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Queue[Any], Any]]] = {}
        for request_id, answer in answers:
            target = self._waiting.get(request_id)
            if target is not None:
                by_loop.setdefault(target[0], []).append((target[1], answer))
        for loop, puts in by_loop.items():
            with contextlib.suppress(RuntimeError):  # that loop has closed: nobody reads
                loop.call_soon_threadsafe(_put_all, puts)

    def close(self, wait_s: float = 5.0) -> None:
        self.alive = False
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
        if self.process is None:
            return
        try:
            self.process.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _put_all(puts: list[tuple[asyncio.Queue[Any], Any]]) -> None:
    for answers, answer in puts:
        answers.put_nowait(answer)


def adopt_early() -> ModelWorker | None:
    """The worker `python app.py` spawned first thing (`worker_spawn.start_early`), handed
    out once; None when there is none."""
    early = worker_spawn.adopt_early()
    return None if early is None else ModelWorker(connected=early[1], process=early[0])


class ProcessGateway:
    """Streams completions from the worker process; the same contract as `LiteLLMGateway`
    (text deltas, then one `ModelReply`; provider errors as `ModelError`), with the text
    already coalesced by the worker (about 20 deltas a second; `agent/coalesce.py`)."""

    coalesces_text = True

    def __init__(self, *, offline_token_delay_s: float = 0.0, scrubber: Scrubber | None = None,
                 worker: ModelWorker | None = None) -> None:
        self._secrets = list((scrubber or Scrubber()).secrets)
        self._delay_s = offline_token_delay_s
        self._lock = threading.Lock()
        self._worker = worker
        self._windows: dict[str, int | None] = {}
        self._closed = False
        if worker is not None:
            worker.configure(self._secrets, self._delay_s)

    def worker(self) -> ModelWorker:
        """The live worker, started anew if there is none or it died."""
        with self._lock:
            if self._closed:
                raise ModelError("The app is shutting down; no model call was made.")
            if self._worker is None or not self._worker.alive:
                if self._worker is not None:
                    self._worker.close(wait_s=0.5)
                self._worker = ModelWorker()
                self._worker.configure(self._secrets, self._delay_s)
            return self._worker

    def warm(self) -> None:
        """Start the worker if it is not running (it warms litellm up itself)."""
        self.worker()

    async def stream(self, request: ModelRequest) -> AsyncIterator[TextDelta | ModelReply]:
        worker = self.worker()
        request_id, answers = worker.open()
        finished = False
        try:
            worker.send(("stream", request_id, request))
            while True:
                kind, *rest = await answers.get()
                if kind == "delta":
                    yield TextDelta(rest[0])
                elif kind == "reply":
                    finished = True
                    yield rest[0]
                    return
                else:
                    finished = True
                    overflow, message, status = rest
                    raise (ContextOverflowError if overflow else ModelError)(
                        message, status_code=status) from None  # as the provider's own
        except OSError:
            finished = True
            raise ModelError(WORKER_GONE) from None
        finally:
            worker.done(request_id)
            if not finished and worker.alive:  # the reader stopped early: stop the call
                with contextlib.suppress(OSError):
                    worker.send(("cancel", request_id))

    async def context_window(self, model: str) -> int | None:
        """Asked of litellm in the worker; cached per model."""
        if model not in self._windows:
            worker = self.worker()
            request_id, answers = worker.open()
            try:
                worker.send(("window", request_id, model))
                kind, *rest = await answers.get()
            except OSError:
                return None
            finally:
                worker.done(request_id)
            if kind != "window":
                return None  # the worker died: unknown, and not cached
            self._windows[model] = rest[0]
        return self._windows[model]

    def close(self) -> None:
        """Shutdown: the worker ends with its socket."""
        with self._lock:
            self._closed = True
            worker, self._worker = self._worker, None
        if worker is not None:
            worker.close()

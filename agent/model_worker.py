"""The model worker: a child process that owns litellm and makes the app's model calls.

Why a process: importing litellm costs about 3.5 s of CPU and 140 MB (2,500 modules, with
the openai SDK's types), as much as gradio itself. In the server's own process that import
could only run after gradio's or beside it under one GIL, so the first answer after
`python app.py` waited for both in turn (2.67x a bare Gradio app's first answer, measured
with bench/startup.py). Started as the server process starts, this process imports litellm
on the machine's other core while the server imports gradio, and its per-chunk stream
bookkeeping stays off the server's event loop. Every model call still goes through
`litellm.acompletion` (`LiteLLMGateway`, which runs here unchanged).

Protocol: length-prefixed pickles over a private socket pair (`agent/model_process.py` is the
other end). The server sends `("config", secrets, offline_token_delay_s, tool_facts)` once, then
`("stream", id, ModelRequest)`, `("cancel", id)` and `("window", id, model)`; this process
answers `(id, "delta", text)`, `(id, "reply", ModelReply)`, `(id, "error", overflow,
message, status)` and `(id, "window", tokens)`. Both ends are this program's own code, so
pickle carries only its own dataclasses. End of file on the socket (the server closed it,
exited or was killed) ends this process; before it serves, at once, even in the middle of
litellm's import (`_read_until_closed`).

Run as `python -m agent.model_worker FD`.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
import pickle
import signal
import socket
import struct
import sys
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["FrameReader", "Inbox", "send_frame"]

_LENGTH = struct.Struct("!I")


def send_frame(sock: socket.socket, lock: threading.Lock, *messages: Any) -> None:
    """Messages in one write (so a reader gets them in one read); the lock keeps frames
    from different threads whole."""
    data = b"".join(_LENGTH.pack(len(body)) + body for body in (
        pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL) for message in messages))
    with lock:
        sock.sendall(data)


class FrameReader:
    """Reads frames off a socket, every whole frame one `recv` brings at once.

    Why: a reader thread needs the GIL for each `recv` it returns from, and while the other
    thread runs it waits up to the switch interval (5 ms) to get it. Under load (ten streams
    at once) frames pile up meanwhile; reading them one header and one body at a time made
    two waits per frame, and one hand-off to the event loop each (`ModelWorker._read`).
    """

    def __init__(self, sock: socket.socket, chunk_bytes: int = 1 << 18) -> None:
        self.sock = sock
        self._chunk = memoryview(bytearray(chunk_bytes))
        self._pending = bytearray()

    def frames(self) -> list[Any] | None:
        """The whole frames received so far, waiting for at least one; None at end of file
        (the other end is gone; a frame cut short by it is dropped)."""
        while not (frames := self._whole_frames()):
            try:
                size = self.sock.recv_into(self._chunk)
            except OSError:
                return None
            if not size:
                return None
            self._pending += self._chunk[:size]
        return frames

    def _whole_frames(self) -> list[Any]:
        frames, start, pending = [], 0, self._pending
        while len(pending) - start >= _LENGTH.size:
            (size,) = _LENGTH.unpack_from(pending, start)
            end = start + _LENGTH.size + size
            if end > len(pending):
                break
            frames.append(pickle.loads(pending[start + _LENGTH.size:end]))
            start = end
        if start:
            del pending[:start]
        return frames


class Inbox:
    """What the reader thread read, for the worker: held until the event loop is attached
    (the import of litellm runs meanwhile; `get` takes the config), then handed to the loop
    a whole read at a time, in one callback.

    Why: the loop took one message per round trip through an executor thread
    (`run_in_executor(None, queue.get)`), each trip two hand-offs of the GIL, which a thread
    waits up to the switch interval (5 ms) for while the loop streams other calls' words.
    Ten calls sent at once were taken one trip at a time: traced under ten streams, a call
    waited 2.6 ms (median; 22 ms p90, 44 ms at most) between the server's send and the
    worker's start of it; handed over a read at a time, 0.75 ms (2.5 ms p90, 5 ms at most).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ready = threading.Condition(self._lock)
        self._held: list[Any] = []  # None at the end: the server is gone
        self._loop: asyncio.AbstractEventLoop | None = None
        self._handler: Callable[[list[Any]], None] | None = None

    def put(self, messages: list[Any]) -> None:
        """From the reader thread: one read's messages, in order (`[None]` at end of file)."""
        with self._lock:
            if self._loop is None or self._handler is None:
                self._held += messages
                self._ready.notify_all()
                return
            loop, handler = self._loop, self._handler
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody reads
            loop.call_soon_threadsafe(handler, messages)

    def get(self) -> Any:
        """The next message before a loop is attached, waiting for it (None: end of file)."""
        with self._lock:
            while not self._held:
                self._ready.wait()
            return self._held.pop(0) if self._held[0] is not None else None

    @property
    def attached(self) -> bool:
        """Whether the event loop takes the messages: the worker serves."""
        with self._lock:
            return self._loop is not None

    def attach(self, handler: Callable[[list[Any]], None]) -> None:
        """From the running loop: `handler` gets what is held now, then every later read."""
        with self._lock:
            held, self._held = self._held, []
            self._loop, self._handler = asyncio.get_running_loop(), handler
        if held:
            handler(held)


class _Worker:
    """Serves the server's requests on one event loop, each stream in its own task."""

    def __init__(self, sock: socket.socket, inbox: Inbox) -> None:
        self.sock = sock
        self.inbox = inbox
        self.lock = threading.Lock()
        self.tasks: dict[int, asyncio.Task[None]] = {}
        self.gateway: Any = None

    def send(self, *messages: Any) -> None:
        # The server is gone: the inbox's end of file stops this process.
        with contextlib.suppress(OSError):
            send_frame(self.sock, self.lock, *messages)

    async def serve(self, secrets: list[str], offline_token_delay_s: float,
                    tool_facts: dict[str, Any]) -> None:
        from agent import long_lived
        from agent.model_gateway import LiteLLMGateway
        from agent.offline.catalog import TOOLS
        from agent.secrets import Scrubber

        TOOLS.install(tool_facts)  # before the offline model's first answer reads them

        self.gateway = LiteLLMGateway(offline_token_delay_s=offline_token_delay_s,
                                      scrubber=Scrubber(secrets))
        self.gateway.load()
        # litellm's first-call setup, paid here before the first person's turn.
        warm = asyncio.create_task(self.gateway.first_call())
        # Then litellm's objects out of the collector's full passes (agent/long_lived.py).
        warm.add_done_callback(lambda _: long_lived.freeze("model worker"))
        ended = asyncio.Event()

        def dispatch_all(messages: list[Any]) -> None:
            for message in messages:
                if message is None:
                    ended.set()
                    return
                self.dispatch(message)

        self.inbox.attach(dispatch_all)
        await ended.wait()
        warm.cancel()
        for task in list(self.tasks.values()):
            task.cancel()

    def dispatch(self, message: tuple[Any, ...]) -> None:
        kind, request_id = message[0], message[1]
        if kind == "stream":
            self.tasks[request_id] = asyncio.create_task(self.stream(request_id, message[2]))
        elif kind == "window":
            self.tasks[request_id] = asyncio.create_task(self.window(request_id, message[2]))
        elif kind == "cancel" and (task := self.tasks.get(request_id)) is not None:
            task.cancel()

    async def stream(self, request_id: int, request: Any) -> None:
        from agent.coalesce import TextBatcher
        from agent.errors import ContextOverflowError, ModelError
        from agent.model_gateway import TextDelta

        # Text goes out coalesced (`TextBatcher`): a frame, and a wake-up of the server's
        # event loop, per ~50 ms of words instead of per word; held text goes before the
        # reply or the error, so the server sees it first (and knows output began). The
        # last words go in one write with the reply: the server reads them together and
        # can publish them with the answer's end (`side_questions.views.LiveRequest`).
        text = TextBatcher(lambda words: self.send((request_id, "delta", words)))
        try:
            async for item in self.gateway.stream(request):
                if isinstance(item, TextDelta):
                    text.add(item.text)
                elif words := text.take():
                    self.send((request_id, "delta", words), (request_id, "reply", item))
                else:
                    self.send((request_id, "reply", item))
        except asyncio.CancelledError:
            pass  # the server stopped reading: nothing to answer
        except ModelError as exc:
            text.flush()
            self.send((request_id, "error", isinstance(exc, ContextOverflowError), str(exc),
                       exc.status_code))
        except Exception as exc:
            text.flush()
            self.send((request_id, "error", False, f"The model call failed "
                       f"({type(exc).__name__}).", None))
        finally:
            text.close()
            self.tasks.pop(request_id, None)

    async def window(self, request_id: int, model: str) -> None:
        try:
            tokens = await self.gateway.context_window(model)
        except Exception:
            tokens = None
        finally:
            self.tasks.pop(request_id, None)
        self.send((request_id, "window", tokens))


def _read_until_closed(sock: socket.socket, inbox: Inbox) -> None:
    """The reader thread, from the start, so the server's sends never wait on the import.

    At end of file before the worker serves, the process exits there and then: the server
    is gone (`python app.py` refused to start, or its settings did not want a worker), and
    the import of litellm it would otherwise finish first took 3-4 s of CPU (five refused
    starts at once: 42 s on a loaded CI machine) with the server's stdout and stderr still
    open: whoever read them to their end (a supervisor, a pipe, the start-up check's test)
    waited for it."""
    reader = FrameReader(sock)
    while (messages := reader.frames()) is not None:
        inbox.put(messages)
    if not inbox.attached:
        os._exit(0)  # nothing to flush or close: nothing was served
    inbox.put([None])


def main(argv: list[str]) -> int:
    # Ctrl-C in a terminal reaches the whole process group: the server shuts down and
    # closes the socket, which ends this process; no traceback of its own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sock = socket.socket(fileno=int(argv[0]))
    inbox = Inbox()

    threading.Thread(target=_read_until_closed, args=(sock, inbox), name="model-worker-reader",
                     daemon=True).start()
    from agent import litellm_import, long_lived
    from agent.settings import apply_offline_defaults

    litellm_import.install()  # its tokenizer's parsed JSON not kept (agent/litellm_import.py)
    long_lived.hold()  # no full collection until litellm is in and warm (long_lived.py)

    apply_offline_defaults()  # no cost-map download, no telemetry: before the import
    # The reason this process exists: import it now, at the process's own priority. It ran
    # at nice 19 once (the server's start-up first: HTTP 200 1.04x the bare app's against
    # 1.10x at normal priority), and beside two busy processes the first answer then waited
    # 306 s after the page's 200 (1.2 s at normal priority): a niced import starves.
    importlib.import_module("litellm.main")

    config = inbox.get()
    if config is None or config[0] != "config":
        return 0
    asyncio.run(_Worker(sock, inbox).serve(list(config[1]), float(config[2]), config[3]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The one door to language models: a thin `ModelGateway` interface and its litellm version.

litellm takes seconds to import, so it is imported on first use (or by `warm_up()` in a
background thread as soon as the server is listening), never on the start-up path; the
warm-up also makes one offline call, so litellm's first-call setup is paid before the first
person's turn too. Provider errors are translated here into `ModelError`/
`ContextOverflowError`, with credentials scrubbed from their text.

litellm's own token counting is switched off (`disable_token_counter`): the app takes usage
from the provider's stream (`include_usage`; a provider that sends none gets the budget's
estimate, `model_usage.estimated_usage`, as litellm's counter would have) and prices it
with one table lookup (`model_usage.price`), and litellm counted every prompt again with
tiktoken at the start of each call to estimate a cost nobody read (it also loaded a 40 MB
tokenizer on the first call).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from agent.errors import ContextOverflowError, ModelError
from agent.events import Usage
from agent.model_usage import estimated_usage, price, provider_usage
from agent.secrets import Scrubber

__all__ = [
    "LiteLLMGateway",
    "ModelGateway",
    "ModelReply",
    "ModelRequest",
    "TextDelta",
    "ToolCallRequest",
]


@dataclass
class ModelRequest:
    model: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = field(default_factory=list)
    temperature: float = 0.0
    max_tokens: int | None = None
    api_base: str | None = None
    api_key: str | None = field(default=None, repr=False)
    timeout_s: float = 120.0


@dataclass
class ToolCallRequest:
    id: str
    name: str
    arguments: dict[str, Any]
    raw_arguments: str = ""
    parse_error: str | None = None

    def as_message_part(self) -> dict[str, Any]:
        return {"id": self.id, "type": "function",
                "function": {"name": self.name,
                             "arguments": self.raw_arguments or json.dumps(self.arguments)}}


@dataclass
class TextDelta:
    text: str


@dataclass
class ModelReply:
    """A complete model reply; only this is ever stored or published to a snapshot."""

    content: str
    tool_calls: list[ToolCallRequest]
    usage: Usage
    finish_reason: str | None
    model: str


class ModelGateway(Protocol):
    def stream(self, request: ModelRequest) -> AsyncIterator[TextDelta | ModelReply]:
        """Yield text deltas as they arrive, then exactly one `ModelReply`."""
        ...

    async def context_window(self, model: str) -> int | None:
        """The model's input window in tokens as the provider library knows it, or None."""
        ...


class _ToolCallAccumulator:
    """Joins streamed tool-call fragments (by index) into whole calls."""

    def __init__(self) -> None:
        self._parts: dict[int, dict[str, str]] = {}

    def add(self, delta: Any) -> None:
        index = getattr(delta, "index", None) or 0
        part = self._parts.setdefault(index, {"id": "", "name": "", "arguments": ""})
        if getattr(delta, "id", None):
            part["id"] = delta.id
        function = getattr(delta, "function", None)
        if function is not None:
            if getattr(function, "name", None):
                part["name"] = function.name
            if getattr(function, "arguments", None):
                part["arguments"] += function.arguments

    def calls(self) -> list[ToolCallRequest]:
        result = []
        for index in sorted(self._parts):
            part = self._parts[index]
            raw = part["arguments"].strip()
            try:
                arguments = json.loads(raw) if raw else {}
                error = None if isinstance(arguments, dict) else "arguments must be an object"
            except ValueError as exc:
                arguments, error = {}, f"arguments are not valid JSON: {exc}"
            if not isinstance(arguments, dict):
                arguments = {}
            # Ids pair calls with results across the whole stored conversation, so a
            # provider that sends none gets a unique one, not a per-reply index.
            call_id = part["id"] or f"call_{uuid.uuid4().hex[:24]}"
            result.append(ToolCallRequest(id=call_id, name=part["name"],
                                          arguments=arguments, raw_arguments=raw,
                                          parse_error=error))
        return result


class LiteLLMGateway:
    """Streams completions through `litellm.acompletion` (any provider, plus the offline one)."""

    def __init__(self, *, offline_token_delay_s: float = 0.0,
                 scrubber: Scrubber | None = None) -> None:
        self._offline_token_delay_s = offline_token_delay_s
        self._scrubber = scrubber or Scrubber()
        self._lock = threading.Lock()
        self._litellm: Any = None
        self._windows: dict[str, int | None] = {}
        self._priced: set[str] = set()  # offline models entered in litellm's price table
        self._finishing: set[asyncio.Task[None]] = set()  # litellm's end-of-stream work

    def load(self) -> Any:
        """Import and set up litellm once (seconds); the module."""
        with self._lock:
            if self._litellm is None:
                from agent import litellm_import

                litellm_import.install()  # before the import (agent/litellm_import.py)
                import litellm

                from agent.offline.provider import OFFLINE_PROVIDER, OfflineLLM

                litellm.telemetry = False
                litellm.drop_params = True
                litellm.disable_token_counter = True  # see the module docstring
                handler = OfflineLLM(token_delay_s=self._offline_token_delay_s)
                litellm.custom_provider_map = [
                    entry for entry in litellm.custom_provider_map
                    if entry.get("provider") != OFFLINE_PROVIDER
                ] + [{"provider": OFFLINE_PROVIDER, "custom_handler": handler}]
                litellm.suppress_debug_info = True
                _defer_default_encoding()
                self._litellm = litellm
            return self._litellm

    def warm_up(self) -> threading.Thread:
        """`warm` in a daemon thread, so the first chat pays for neither."""
        thread = threading.Thread(target=self.warm, name="litellm-warm-up", daemon=True)
        thread.start()
        return thread

    def warm(self) -> None:
        """Import litellm and make one offline call: the first call imports and sets up
        more of litellm (~0.2 s), which would otherwise be the first person's wait."""
        self.load()
        with contextlib.suppress(Exception):  # a warm-up that fails costs only its time
            asyncio.run(self.first_call())

    async def first_call(self) -> None:
        """One offline call, read to its end."""
        from agent.settings import OFFLINE_MODEL

        request = ModelRequest(model=OFFLINE_MODEL,
                               messages=[{"role": "user", "content": "hello"}])
        async for _ in self.stream(request):
            pass

    async def _litellm_module(self) -> Any:
        if self._litellm is not None:
            return self._litellm
        return await asyncio.to_thread(self.load)

    async def context_window(self, model: str) -> int | None:
        """litellm's `max_input_tokens` for the model (None when it does not know the model:
        the offline one, a local server's own name). Asked right before a call that loads
        litellm anyway, so it costs no extra import; cached per model."""
        if model not in self._windows:
            litellm = await self._litellm_module()
            try:
                window = litellm.get_model_info(model).get("max_input_tokens")
            except Exception:  # "not mapped": unknown to litellm is not an error
                window = None
            self._windows[model] = int(window) if isinstance(window, int) and window else None
        return self._windows[model]

    def _translate(self, exc: Exception, request: ModelRequest) -> ModelError:
        litellm = self._litellm
        # A provider (or a proxy) may echo the request: the key, a prompt, a header.
        message = self._scrubber.scrub(f"{type(exc).__name__}: {exc}",
                                       extra=[request.api_key])[:2000]
        status = getattr(exc, "status_code", None)
        if litellm is not None and isinstance(exc, litellm.ContextWindowExceededError):
            return ContextOverflowError(message, status_code=status)
        lowered = message.lower()
        if "context length" in lowered or "context window" in lowered or (
            "maximum context" in lowered
        ):
            return ContextOverflowError(message, status_code=status)
        return ModelError(message, status_code=status if isinstance(status, int) else None)

    def _price_offline(self, litellm: Any, model: str) -> None:
        """Enter an offline model in litellm's price table as free: litellm prices every
        call (at its start and from the rebuilt stream at its end), and for a model it does
        not know it searched its whole table for a near name each time (measured: about a
        third of litellm's CPU per one-tool turn)."""
        if model.startswith("offline-agent/") and model not in self._priced:
            free = {key: 0.0 for key in ("input_cost_per_token", "output_cost_per_token",
                                         "cache_creation_input_token_cost",
                                         "cache_read_input_token_cost")}  # all: no warning
            litellm.register_model({model: {**free, "litellm_provider": "offline-agent",
                                            "mode": "chat"}})
            self._priced.add(model)

    def _finish_later(self, response: Any) -> None:
        """Let litellm finish a stream whose reply is complete, after the reply is handed
        on, in a task of its own. Where something reads litellm's end-of-stream work (a
        callback registered with litellm, litellm's cache: `_observed`), that work runs:
        rebuilding the whole response from its chunks, pricing it, the success callbacks,
        the close. Where nothing does (the app registers none), the stream is only closed:
        the rebuild alone took 16-28 ms of CPU for a 287-chunk answer, on the model
        worker's one event loop, where it held up every other stream's next word."""
        async def finish() -> None:
            with contextlib.suppress(Exception):
                if _observed(self._litellm):
                    async for _ in response:
                        pass
                else:
                    await response.aclose()

        task = asyncio.get_running_loop().create_task(finish(), name="litellm-stream-end")
        self._finishing.add(task)
        task.add_done_callback(self._finishing.discard)

    async def stream(self, request: ModelRequest) -> AsyncIterator[TextDelta | ModelReply]:
        """Text deltas, then the reply. The reply is handed on once it is complete: it has
        finished and its usage is known, from litellm's usage chunk or, earlier, from the
        provider's own usage chunk that litellm has read (`provider_usage`). litellm's
        remaining end-of-stream work (rebuilding the whole response, pricing it, the success
        callbacks, the close) sat between a call's last word and the next step of every run
        (the tool call, the run's end): 35-80 ms per call with the offline provider, whose
        usage comes before litellm's rebuild, and ~28 ms with an OpenAI-compatible server,
        whose usage comes after it (then the reply waits for the rebuild, not the rest).
        `_finish_later` runs that work afterwards."""
        litellm = await self._litellm_module()
        self._price_offline(litellm, request.model)
        kwargs: dict[str, Any] = {
            "model": request.model,
            "messages": request.messages,
            "stream": True,
            "stream_options": {"include_usage": True},
            "temperature": request.temperature,
            "timeout": request.timeout_s,
        }
        if request.tools:
            kwargs["tools"] = request.tools
        if request.max_tokens:
            kwargs["max_tokens"] = request.max_tokens
        if request.api_base:
            kwargs["api_base"] = request.api_base
        if request.api_key:
            kwargs["api_key"] = request.api_key
        content: list[str] = []
        calls = _ToolCallAccumulator()
        usage = Usage()
        finish_reason: str | None = None
        model_name = request.model
        try:
            response = await litellm.acompletion(**kwargs)
            async for chunk in response:
                if getattr(chunk, "model", None):
                    model_name = chunk.model
                chunk_usage = getattr(chunk, "usage", None)
                if chunk_usage:
                    usage = Usage(
                        prompt_tokens=getattr(chunk_usage, "prompt_tokens", 0) or 0,
                        completion_tokens=getattr(chunk_usage, "completion_tokens", 0) or 0,
                        total_tokens=getattr(chunk_usage, "total_tokens", 0) or 0,
                    )
                for choice in getattr(chunk, "choices", None) or []:
                    delta = choice.delta
                    if getattr(choice, "finish_reason", None):
                        finish_reason = choice.finish_reason
                    text = getattr(delta, "content", None)
                    if text:
                        content.append(text)
                        yield TextDelta(text)
                    for tool_delta in getattr(delta, "tool_calls", None) or []:
                        calls.add(tool_delta)
                if finish_reason is not None:  # complete once its usage is known too
                    reported = None if chunk_usage else provider_usage(response)
                    if chunk_usage or reported is not None:
                        usage = reported or usage
                        self._finish_later(response)
                        break
        except asyncio.CancelledError:
            raise
        except ModelError:
            raise
        except Exception as exc:  # provider errors, translated once at this boundary
            raise self._translate(exc, request) from None
        if not usage.total_tokens:
            usage = estimated_usage(request.messages, request.tools, "".join(content),
                                    calls.calls())
        usage = usage.model_copy(update={"cost_usd": price(self._litellm, request.model,
                                                            usage)})
        yield ModelReply(content="".join(content), tool_calls=calls.calls(), usage=usage,
                         finish_reason=finish_reason, model=request.model if
                         request.model.startswith("offline-agent/") else model_name)


def _observed(litellm: Any) -> bool:
    """Whether anything reads a finished stream's end-of-stream work: a callback registered
    with litellm (its callback manager's list of them all), litellm's response cache or its
    process-wide budget (`max_budget`, kept by the success handler)."""
    return bool(litellm.logging_callback_manager.get_all_callbacks()
                or litellm.cache is not None or litellm.max_budget)


class _LazyEncoding:
    """Stands in for litellm's default tokenizer (tiktoken's cl100k_base, ~40 MB resident
    and 0.1 s to load), which `litellm.main` hands to every custom provider's call whether
    it counts tokens or not: the offline provider never does, so it is loaded on first use
    (a real provider's handler that counts tokens), not on every process's first call."""

    def __init__(self) -> None:
        self._encoding: Any = None
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        with self._lock:
            if self._encoding is None:
                from litellm._lazy_imports import get_default_encoding

                self._encoding = get_default_encoding()
        return getattr(self._encoding, name)


def _defer_default_encoding() -> None:
    """Put `_LazyEncoding` where `litellm.main` looks for its encoding (a module
    attribute it otherwise loads on first access); a no-op if litellm loaded it already."""
    import litellm.main as main

    if "encoding" not in vars(main):
        main.encoding = _LazyEncoding()

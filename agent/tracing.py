"""Optional OpenTelemetry traces: a span per run (main and side), per model call and per tool
call, so an operator sees what a run did and how long each step took.

Off by default, and then OpenTelemetry is never imported: every helper here is a no-op
costing one `is None` check. `OTEL_EXPORTER_OTLP_ENDPOINT` set turns it on at start
(`configure_tracing`, OTLP over HTTP, the standard `OTEL_*` variables apply); tests call
`install` with their own provider.

Content is redacted by construction: spans carry names, ids, environments, token counts,
durations, outcomes and retry counts, never a message, a prompt, a tool argument or a
result. Only the run span is made current (in its task), so model and tool spans are its
children without being attached inside async generators, whose context can change
between one resumption and the next.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

__all__ = ["ToolSpan", "TracedGateway", "configure_tracing", "enabled", "install",
           "run_span"]

SERVICE_NAME = "superset-agent"
_tracer: Any = None  # an opentelemetry Tracer once tracing is on


def configure_tracing(environ: Mapping[str, str] = os.environ) -> bool:
    """Turn tracing on when `OTEL_EXPORTER_OTLP_ENDPOINT` is set; say whether it is on."""
    if not environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        return False
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        raise ValueError("OTEL_EXPORTER_OTLP_ENDPOINT is set but OpenTelemetry is not "
                         "installed: pip install -e '.[otel]'") from exc
    provider = TracerProvider(resource=Resource.create(
        {"service.name": environ.get("OTEL_SERVICE_NAME", SERVICE_NAME)}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    install(provider)
    return True


def install(provider: Any) -> None:
    """Trace with `provider` (an opentelemetry TracerProvider); None turns tracing off."""
    global _tracer
    _tracer = None if provider is None else provider.get_tracer(SERVICE_NAME)


def enabled() -> bool:
    return _tracer is not None


@contextlib.contextmanager
def run_span(name: str, **attributes: Any) -> Iterator[None]:
    """The span of a whole run, current for the task that drives it."""
    if _tracer is None:
        yield
        return
    with _tracer.start_as_current_span(name, attributes=_clean(attributes)):
        yield


class ToolSpan:
    """A tool call's span: started now, ended by `end` with its outcome."""

    def __init__(self, tool: str, env_id: str | None, risk: str) -> None:
        self._span = None if _tracer is None else _tracer.start_span(
            f"tool {tool}", attributes=_clean({"tool.name": tool, "tool.env": env_id,
                                               "tool.risk": risk}))
        self.retries = 0

    def end(self, outcome: str, duration_ms: int | None = None) -> None:
        if self._span is None:
            return
        self._span.set_attributes(_clean({"tool.outcome": outcome, "tool.retries": self.retries,
                                          "tool.duration_ms": duration_ms}))
        self._span.end()
        self._span = None


class TracedGateway:
    """A model gateway whose every call is a span (model, tokens, duration, outcome).

    Wraps whichever gateway the runtime has, so main runs, side answers and summaries are
    all covered by the one place they call the model."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:  # the rest of the gateway's surface
        return getattr(self.inner, name)

    async def stream(self, request: Any) -> AsyncIterator[Any]:
        from agent.model_gateway import ModelReply

        if _tracer is None:
            async for item in self.inner.stream(request):
                yield item
            return
        span = _tracer.start_span(f"model {request.model}", attributes=_clean(
            {"gen_ai.request.model": request.model, "model.tools": len(request.tools or [])}))
        started = time.perf_counter()
        outcome = "error"
        try:
            async for item in self.inner.stream(request):
                if isinstance(item, ModelReply):
                    outcome = "ok"
                    span.set_attributes(_clean({
                        "gen_ai.response.model": item.model,
                        "gen_ai.usage.input_tokens": item.usage.prompt_tokens,
                        "gen_ai.usage.output_tokens": item.usage.completion_tokens,
                        "model.tool_calls": len(item.tool_calls),
                        "model.finish_reason": item.finish_reason}))
                yield item
        except BaseException as exc:
            outcome = "cancelled" if not isinstance(exc, Exception) else type(exc).__name__
            raise
        finally:
            span.set_attributes({"model.outcome": outcome,
                                 "model.duration_ms": int((time.perf_counter() - started) * 1000)})
            span.end()


def _clean(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """OpenTelemetry takes str, bool, int and float values; None means "leave it out"."""
    return {key: value if isinstance(value, str | bool | int | float) else str(value)
            for key, value in attributes.items() if value is not None}

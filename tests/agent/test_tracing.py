"""Optional OpenTelemetry traces (issue 14, item 5): with an in-memory exporter, a one-tool
run is run → model → tool spans with durations and token counts and no content; a side
answer is a span with its model call; with tracing off nothing is recorded and
OpenTelemetry is not imported at start."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agent import tracing
from agent.settings import Settings
from runtime import build_runtime
from tests.fakes.runs import collect

ROOT = Path(__file__).resolve().parents[2]
QUESTION = "list the dashboards"


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracing.install(provider)
    yield memory
    tracing.install(None)
    provider.shutdown()


async def test_a_one_tool_run_is_run_model_and_tool_spans_without_content(
        settings: Settings, exporter: InMemorySpanExporter) -> None:
    rt = build_runtime(settings)
    try:
        identity, token = rt.issuer.mint_demo("editor")
        live = await rt.agent.start_turn(message=QUESTION, conv_id="traced", env_id="ss-dev",
                                         user_id=identity.user_id, user_jwt=token,
                                         uicontext_str=None)
        events = await collect(live)
        assert events[-1]["status"] == "completed"
        side = rt.side_questions
        asked = await side.submit(parent_id="traced", question="which tools did you use?",
                                  client_request_id="t-1", owner_id=identity.user_id)
        async for _ in side.follow(asked.request.id):
            pass
    finally:
        await rt.aclose()

    spans = exporter.get_finished_spans()
    (run,) = [s for s in spans if s.name == "agent.run"]
    models = [s for s in spans if s.name.startswith("model ") and s.parent is not None
              and s.parent.span_id == run.context.span_id]
    tools = [s for s in spans if s.name.startswith("tool ")]
    assert len(models) >= 2 and [s.name for s in tools] == ["tool list_dashboards"]
    (tool,) = tools
    assert tool.parent is not None and tool.parent.span_id == run.context.span_id
    assert tool.attributes["tool.env"] == "ss-dev" and tool.attributes["tool.outcome"] == "ok"
    assert tool.attributes["tool.retries"] == 0 and tool.end_time > tool.start_time
    assert run.attributes["run.id"] == live.run_id and run.attributes["user.id"] == "demo-editor"
    for model in models:
        assert model.attributes["gen_ai.usage.input_tokens"] > 0
        assert model.attributes["gen_ai.usage.output_tokens"] > 0
        assert model.attributes["model.duration_ms"] >= 0
        assert model.attributes["model.outcome"] == "ok"
    (side_span,) = [s for s in spans if s.name == "side_question"]
    assert any(s.parent is not None and s.parent.span_id == side_span.context.span_id
               for s in spans if s.name.startswith("model "))

    answer = next(e["content"] for e in events if e["type"] == "message")
    recorded = json.dumps([{**dict(s.attributes or {}), "name": s.name} for s in spans])
    for content in (QUESTION, "which tools did you use?", answer[:40]):
        assert content not in recorded  # names, numbers and outcomes only


def test_tracing_is_off_and_not_imported_without_an_endpoint() -> None:
    """The SDK, which only our tracing would import (Gradio's stack may import the API)."""
    probe = ("import sys, app; from agent import tracing; "
             "assert not tracing.configure_tracing({}); assert not tracing.enabled(); "
             "print(any(m.startswith('opentelemetry.sdk') for m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "False"


def test_an_endpoint_without_opentelemetry_installed_is_a_clear_error(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.http.trace_exporter",
                        None)  # as if the [otel] extra were not installed
    with pytest.raises(ValueError, match=r"pip install -e '\.\[otel\]'"):
        tracing.configure_tracing({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"})
    assert not tracing.enabled()

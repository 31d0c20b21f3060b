"""The numbers of SPEC §5 that only a clock can check: the read retry's real 1 s pause, and
the 20 s / 60 s tool timeouts — their defaults and that tool execution applies them.

Asserting `tool_retry.delay_s == 1.0` or a settings default alone lets the code that waits
or applies the value be broken unnoticed; these tests watch what actually happens.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.settings import EnvironmentConfig, Settings
from runtime import Runtime
from tests.agent.guardrails_support import call, confirm, pending_id, scripted_runtime, turn
from tests.fakes.openai_server import ScriptedOpenAIServer
from tests.fakes.runs import of_type
from tests.fakes.superset_server import ServedSuperset

DASHBOARD_PATH = "/api/v1/dashboard/1"
# Timing, not storage: one backend is enough (the `database_url` fixture takes the name).
pytestmark = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[ServedSuperset]:
    """The demo Superset over real HTTP, so the pause is measured where Superset sees it."""
    with ServedSuperset(tmp_path / "served.db") as superset:
        yield superset


@pytest.fixture
def loopback_rt(settings: Settings, server: ScriptedOpenAIServer, served: ServedSuperset
                ) -> Iterator[Runtime]:
    """A runtime whose `ss-dev` is the loopback Superset (service login), demo identities."""
    env = EnvironmentConfig(name="ss-dev", base_url=served.env_url("ss-dev"), tier="dev",
                            auth_mode="service", username="admin", password="admin")
    runtime = scripted_runtime(settings, server, superset_environments=[env],
                               auth_mode="demo")
    yield runtime
    runtime.close()


async def test_read_retry_waits_one_second_between_attempts(
    loopback_rt: Runtime, server: ScriptedOpenAIServer, served: ServedSuperset
) -> None:
    served.demo.set_faults("ss-dev", {"status": 502, "count": 1, "methods": ["GET"]})
    server.reply_tool_calls(call("get_dashboard", dashboard_id=1))
    server.reply_text("It is the Executive Summary.")
    mark = len(served.received)

    events = await turn(loopback_rt, "show dashboard 1", page="dashboard", object_id=1)

    assert [e["type"] for e in events if e["type"].startswith("tool_")] == [
        "tool_call", "tool_retry", "tool_result"]
    gets = [r for r in served.received[mark:] if r.method == "GET"]
    failed, retried = gets[0], gets[1]  # the fault answers the first GET only
    assert failed.path.endswith(DASHBOARD_PATH) and retried.path.endswith(DASHBOARD_PATH)
    gap = retried.at - failed.at
    assert 0.9 <= gap <= 4.0, f"measured {gap:.3f} s between the two attempts"


def test_tool_timeout_defaults_are_20_s_read_and_60_s_write(database_url: str,
                                                            tmp_path: Path) -> None:
    fields = Settings.model_fields
    assert fields["tool_timeout_read_s"].default == 20.0
    assert fields["tool_timeout_write_s"].default == 60.0
    built = Settings(database_url=database_url, data_dir=tmp_path)
    assert (built.tool_timeout_read_s, built.tool_timeout_write_s) == (20.0, 60.0)


async def test_tool_execution_applies_the_read_and_the_write_timeout(
    settings: Settings, server: ScriptedOpenAIServer
) -> None:
    """Two distinct small timeouts, Superset slower than both: a read must stop at the read
    timeout (and be retried once), a write at the write timeout, neither at the other's."""
    rt = scripted_runtime(settings, server, tool_timeout_read_s=0.3, tool_timeout_write_s=0.7)
    try:
        demo = rt.demo_superset
        slow = {"status": 502, "count": 0, "latency_ms": 4000}  # slow, never failing
        demo.set_faults("ss-dev", {**slow, "methods": ["GET"]})
        server.reply_tool_calls(call("get_dashboard", dashboard_id=1))
        server.reply_text("Superset is slow right now.")
        read = await turn(rt, "show dashboard 1", page="dashboard", object_id=1)

        errors = of_type(read, "tool_error")
        assert len(errors) == 1, [e["type"] for e in read]  # a 20 s timeout would succeed
        error = errors[0]
        assert "timed out after 0.3 s" in error["error"], error
        assert error["retry_exhausted"] is True and len(of_type(read, "tool_retry")) == 1
        # Two attempts of 0.3 s and the 1 s pause, well under one 4 s answer of Superset.
        assert 1500 <= error["duration_ms"] < 3900, error["duration_ms"]

        demo.set_faults("ss-dev", {**slow, "methods": ["PUT"]})  # the approval card reads
        server.reply_tool_calls(call("set_dashboard_published", dashboard_id=1,
                                     published=False))
        asked = await turn(rt, "unpublish dashboard 1", page="dashboard", object_id=1)
        server.reply_text("I cannot tell whether it changed; please check Superset.")
        resumed = await confirm(rt, pending_id(asked))

        (timeout,) = of_type(resumed, "tool_timeout")
        assert timeout["timeout_s"] == 0.7 and timeout["is_write_tool"] is True
        assert "0.7 s" in server.requests[-1].messages[-1]["content"]
    finally:
        rt.close()

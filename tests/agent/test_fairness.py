"""Fair shares per user (issue 10, item 3): runs at once, new runs a minute, tool calls per
model reply; one person cannot take every slot, and a refusal changes nothing."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator

import pytest

from agent.errors import RateLimited
from agent.fairness import UserRates
from agent.settings import Settings
from runtime import Runtime, build_runtime
from tests.fakes.openai_server import ScriptedCall, ScriptedOpenAIServer
from tests.fakes.runs import all_rows, collect, of_type, scripted_settings
from web.errors import http_status, to_http


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_bucket_allows_a_burst_then_refills_at_its_rate() -> None:
    clock = Clock()
    rates = UserRates(per_minute=6, burst=3, clock=clock)  # a token every 10 s

    assert [rates.take("ann") for _ in range(3)] == [0, 0, 0]
    assert rates.take("ann") == 10  # empty: the next token in 10 s
    assert rates.take("bob") == 0  # everyone has their own bucket
    clock.now += 10
    assert rates.take("ann") == 0 and rates.take("ann") == 10
    clock.now += 60
    assert [rates.take("ann") for _ in range(4)] == [0, 0, 0, 10]  # never above the burst


@pytest.fixture
def fair(settings: Settings, server: ScriptedOpenAIServer) -> Iterator[Runtime]:
    runtime = build_runtime(scripted_settings(settings, server.base_url).model_copy(
        update={"runs_max_per_user": 2, "runs_burst_per_user": 4,
                "runs_per_minute_per_user": 1.0, "agent_max_tool_calls_per_step": 3}))
    yield runtime
    runtime.close()


async def _start(rt: Runtime, role: str, conv_id: str, message: str = "hi"):  # type: ignore[no-untyped-def]
    identity, token = rt.issuer.mint_demo(role)
    return await rt.agent.start_turn(message=message, conv_id=conv_id,
                                     user_id=identity.user_id, user_jwt=token, env_id=None,
                                     uicontext_str=None)


async def test_one_person_gets_two_runs_at_once_and_others_are_unaffected(
    fair: Runtime, server: ScriptedOpenAIServer,
) -> None:
    held = [server.reply_text(f"slow {i}", deltas=3, hold_after=1) for i in range(2)]
    first = [await _start(fair, "editor", f"e{i}") for i in range(2)]
    for reply in held:
        assert await reply.until_reached()
    before = all_rows(fair.db)

    with pytest.raises(RateLimited) as caught:
        await _start(fair, "editor", "e-third")
    assert http_status(caught.value) == 429
    assert to_http(caught.value).headers["Retry-After"] == "2"
    assert "2 runs in progress" in str(caught.value)
    assert all_rows(fair.db) == before  # refused before anything was written

    server.reply_text("the viewer's answer")
    other = await collect(await _start(fair, "viewer", "v1"))
    assert other[-1]["status"] == "completed"
    for reply in held:
        reply.release.set()
    for live in first:
        await collect(live)
    server.reply_text("a new one once the others ended")
    assert (await collect(await _start(fair, "editor", "e-later")))[-1]["status"] == \
        "completed"


async def test_new_runs_come_from_a_bucket(fair: Runtime, server: ScriptedOpenAIServer
                                           ) -> None:
    began = time.monotonic()
    for i in range(4):  # the burst
        server.reply_text(f"answer {i}")
        await collect(await _start(fair, "admin", f"a{i}"))
    with pytest.raises(RateLimited) as caught:
        await _start(fair, "admin", "a-fifth")
    # One a minute: the next token is a minute after the first was taken, less what the
    # burst itself took (seconds on a loaded machine; the bucket's arithmetic is pinned
    # with a fake clock above).
    waited = caught.value.retry_after_s
    assert 60 - math.ceil(time.monotonic() - began) <= waited <= 60
    assert f"try again in {waited} s" in str(caught.value)


async def test_a_reply_with_too_many_tool_calls_runs_only_the_first_ones(
    fair: Runtime, server: ScriptedOpenAIServer,
) -> None:
    server.reply_tool_calls(*[ScriptedCall("show_capabilities", json.dumps({}))
                              for _ in range(5)])
    server.reply_text("done")

    events = await collect(await _start(fair, "viewer", "fanout"))

    assert len(of_type(events, "tool_result")) == 3
    skipped = of_type(events, "tool_error")
    assert len(skipped) == 2
    assert all(e["error"].startswith("Not run: too many calls in one step (at most 3)")
               for e in skipped)
    assert events[-1]["status"] == "completed"
    second = server.requests[-1].messages  # every call still has its answer for the model
    answered = [m for m in second if m.get("role") == "tool"]
    assert len(answered) == 5

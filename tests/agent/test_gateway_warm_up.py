"""The first turn's one-time costs are paid before it: the warm-up imports litellm and makes
one offline call, and no call loads litellm's 40 MB tokenizer (the app reads usage from the
stream; litellm counted every prompt again with it). Not timed: what is loaded is checked.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from agent.model_gateway import _LazyEncoding

ROOT = Path(__file__).resolve().parent.parent.parent

_CHILD = textwrap.dedent("""
    import asyncio, sys
    from agent.settings import apply_offline_defaults
    apply_offline_defaults()
    from agent.model_gateway import LiteLLMGateway, ModelReply, ModelRequest
    from agent.settings import OFFLINE_MODEL

    gateway = LiteLLMGateway()
    gateway.warm()
    assert "litellm" in sys.modules

    async def turn():
        request = ModelRequest(model=OFFLINE_MODEL, messages=[
            {"role": "user", "content": "which environments are there? " * 200}])
        return [item async for item in gateway.stream(request)][-1]

    reply = asyncio.run(turn())
    assert isinstance(reply, ModelReply) and reply.usage.prompt_tokens > 1000, reply.usage
    import litellm  # the offline model is in litellm's price table, as free
    assert litellm.get_model_info(OFFLINE_MODEL)["input_cost_per_token"] == 0.0
    assert reply.usage.cost_usd is None
    # litellm imports tiktoken itself; loading an encoding imports these
    loaded = sorted({"tiktoken.load", "tiktoken_ext.openai_public",
                     "litellm.litellm_core_utils.default_encoding"} & set(sys.modules))
    print("tokenizer modules:", loaded)
    assert not loaded
""")


def test_warm_up_and_calls_load_no_tokenizer_and_keep_usage() -> None:
    done = subprocess.run([sys.executable, "-c", _CHILD], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert "register_model" not in done.stderr  # the free entry is complete: no warning


def test_the_deferred_encoding_loads_when_a_provider_counts() -> None:
    encoding = _LazyEncoding()
    assert encoding.encode("hello world") == [15339, 1917]  # cl100k_base

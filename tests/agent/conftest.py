"""Fixtures of the agent tests: the scripted OpenAI-compatible server and a runtime on it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agent.settings import Settings
from runtime import Runtime, build_runtime
from tests.fakes.openai_server import ScriptedOpenAIServer
from tests.fakes.runs import scripted_settings


@pytest.fixture
def server(litellm_loaded: None) -> Iterator[ScriptedOpenAIServer]:
    """A real OpenAI-compatible HTTP server on loopback that replays scripted replies."""
    with ScriptedOpenAIServer() as scripted:
        yield scripted


@pytest.fixture
def scripted(settings: Settings, server: ScriptedOpenAIServer) -> Iterator[Runtime]:
    """The whole app runtime with litellm pointed at the scripted server."""
    runtime = build_runtime(scripted_settings(settings, server.base_url))
    yield runtime
    runtime.close()


@pytest.fixture
def rt(scripted: Runtime) -> Runtime:
    """Short name for `scripted`, used by the loop and guardrail tests."""
    return scripted

"""A new Gradio session costs no per-component work on the event loop (issue 16; not timed).

Measured before: making a session built a config copy of every component of the page (149,
about 35 ms on the event loop) only to throw it away, so every new tab or `gradio_client`
session stalled every stream on the process; with ten streams starting together, 0.35 s.
And Gradio's `import matplotlib` (twice per streamed update) searched every import path
when matplotlib is not installed.
"""

from __future__ import annotations

import importlib.util
import sys
from typing import Any

import gradio as gr
import pytest
from gradio.blocks import BlocksConfig

from web.gradio_sessions import LeanSessionState, skip_missing_matplotlib


@pytest.fixture
def blocks() -> gr.Blocks:
    with gr.Blocks() as demo:
        text = gr.Textbox()
        state = gr.State(1)
        out = gr.Chatbot()
        gr.Button().click(lambda t, s: ([], s), [text, state], [out, state])
    return demo


@pytest.fixture
def configs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every component config built (Gradio's per-component work for deep links)."""
    built: list[int] = []
    original = BlocksConfig.config_for_block

    def counting(self: Any, _id: int, *args: Any, **kwargs: Any) -> Any:
        built.append(_id)
        return original(self, _id, *args, **kwargs)

    monkeypatch.setattr(BlocksConfig, "config_for_block", counting)
    return built


def test_a_new_session_builds_no_component_config(blocks: gr.Blocks, configs: list[int]) -> None:
    session = LeanSessionState(blocks)
    assert configs == []
    assert session.config_values == {}
    assert set(session.blocks_config.blocks) == set(blocks.blocks)  # its own copy
    assert session.blocks_config is not blocks.default_config


def test_updates_and_states_are_kept_without_a_config_copy(
    blocks: gr.Blocks, configs: list[int]
) -> None:
    session = LeanSessionState(blocks)
    textbox = next(b for b in blocks.blocks.values() if isinstance(b, gr.Textbox))
    state = next(b for b in blocks.blocks.values() if isinstance(b, gr.State))
    updated = gr.Textbox(value="changed")
    session[textbox._id] = updated
    session[state._id] = {"n": 2}
    assert configs == []
    assert session[textbox._id] is updated
    assert blocks.default_config.blocks[textbox._id] is textbox  # the page is untouched
    assert session[state._id] == {"n": 2}
    assert [value for _, value, expired in session.state_components if not expired] == [{"n": 2}]


def test_a_missing_matplotlib_fails_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "matplotlib", raising=False)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    assert skip_missing_matplotlib() is True
    assert sys.modules["matplotlib"] is None
    with pytest.raises(ImportError):
        import matplotlib  # noqa: F401
    assert skip_missing_matplotlib() is True  # a second install changes nothing


def test_an_installed_matplotlib_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "matplotlib", raising=False)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object())
    assert skip_missing_matplotlib() is False
    assert "matplotlib" not in sys.modules

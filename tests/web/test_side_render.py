"""Pure rendering of the side-question panel, without launching Gradio."""

from __future__ import annotations

import pytest

from web.side_render import merge_item, parse_btw, render_side


@pytest.mark.parametrize(("text", "expected"), [
    ("/btw what is this?", (True, "what is this?")),
    ("  /BTW   spaced  ", (True, "spaced")),
    ("/btw", (True, "")),
    ("/btw\nmulti\nline", (True, "multi\nline")),
    ("/btwx no", (False, "")),
    ("tell me /btw later", (False, "")),
    (None, (False, "")),
])
def test_parse_btw(text: object, expected: tuple[bool, str]) -> None:
    assert parse_btw(text) == expected


def _item(ordinal: int, status: str = "completed", answer: str = "an answer",
          **extra: object) -> dict:
    return {"id": f"r{ordinal}", "ordinal": ordinal, "question": f"q{ordinal}",
            "answer": answer, "status": status, "error": None, **extra}


def test_history_renders_oldest_first_with_status_notes() -> None:
    items = [_item(4, "running", ""), _item(3, "failed", "", error="model down"),
             _item(2, "cancelled", "part"), _item(1)]
    messages = render_side(items)
    assert [m["content"] for m in messages if m["role"] == "user"] == [
        "<p>q1</p>", "<p>q2</p>", "<p>q3</p>", "<p>q4</p>"]
    answers = [m["content"] for m in messages if m["role"] == "assistant"]
    assert answers[0] == "<p>an answer</p>"
    assert answers[1].startswith("<p>part") and "Stopped" in answers[1]
    assert answers[2] == "<p>⚠ Failed: model down</p>"
    assert answers[3] == "<p>… thinking</p>"
    assert render_side([_item(1, "running", "partial")])[1]["content"] == "<p>partial ▌</p>"


def test_markup_stays_text() -> None:
    """Issue 10: the panel used to pass a question's `<b>`/`<img>` through as live HTML."""
    evil = "<img src=x onerror=alert(1)> <b>bold</b> ![p](http://127.0.0.1:9/pixel)"
    messages = render_side([_item(1, question=evil, answer=evil, status="failed",  # type: ignore[arg-type]
                                  error="<img src=y>")])
    for message in messages:
        assert "<img" not in message["content"] and "<b>" not in message["content"]
    assert messages[0]["content"].startswith("<p>&lt;img src=x onerror=alert(1)&gt;")
    assert "image not loaded: http://127.0.0.1:9/pixel" in messages[1]["content"]


def test_merge_item_replaces_or_prepends() -> None:
    items = [_item(2), _item(1)]
    updated = merge_item(items, _item(2, "completed", "new"))
    assert [i["answer"] for i in updated] == ["new", "an answer"]
    assert [i["ordinal"] for i in merge_item(items, _item(3))] == [3, 2, 1]

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
    assert [m["content"] for m in messages if m["role"] == "user"] == ["q1", "q2", "q3", "q4"]
    answers = [m["content"] for m in messages if m["role"] == "assistant"]
    assert answers[0] == "an answer"
    assert answers[1].startswith("part") and "Stopped" in answers[1]
    assert answers[2] == "⚠ Failed: model down"
    assert answers[3] == "… thinking"
    assert render_side([_item(1, "running", "partial")])[1]["content"] == "partial ▌"


def test_markup_stays_text() -> None:
    evil = "<img src=x onerror=alert(1)>"
    messages = render_side([_item(1, question=evil, answer=evil)])  # type: ignore[arg-type]
    assert messages[0]["content"] == evil  # plain content; the chatbot sanitises HTML


def test_merge_item_replaces_or_prepends() -> None:
    items = [_item(2), _item(1)]
    updated = merge_item(items, _item(2, "completed", "new"))
    assert [i["answer"] for i in updated] == ["new", "an answer"]
    assert [i["ordinal"] for i in merge_item(items, _item(3))] == [3, 2, 1]

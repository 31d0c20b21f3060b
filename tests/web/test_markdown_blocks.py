"""A growing answer renders its final blocks once, and exactly as a whole render would
(issue 16; not timed).

Measured before: every update of a streamed answer parsed the whole answer again, O(n²)
over the answer; the split at final blocks (web/markdown_blocks.py) must never change
what is shown, so every prefix of many texts is rendered both ways and compared.
"""

from __future__ import annotations

import itertools
import random
from functools import lru_cache

import pytest

from web.markdown_blocks import final_blocks_end
from web.text_policy import TextPolicy

BLOCKS = [
    "A paragraph with **bold**, `code` and a [link](https://superset.example/x).",
    "Two lines\nof one paragraph",
    "# A heading",
    "Setext heading\n===",
    "---",
    "- tight\n- list",
    "- loose\n\n- list",
    "1. one\n2. two",
    "3) three",
    "- item\n\n  continued in the item",
    "- outer\n  - inner\n\n    more inner",
    "> a quote\n> more",
    "> quote\n\nafter",
    "```python\ncode\n\nwith a blank line\n```",
    "~~~\ntilde fence\n\n~~~",
    "````\n```\ninner fence\n```\n````",
    "```open fence without end\n\nstill code",
    "``` not `a` fence ```",
    "    indented code\n\n    more code",
    "| a | b |\n|---|:-:|\n| 1 | 2 |\n| 3 | 4 |",
    "![image](https://elsewhere.example/i.png) and <b>html</b>",
    "[ref]\n\n[ref]: https://superset.example/r",
    "text\u00a0\n\u00a0\nafter a no-break-space line",
    "tab\tseparated\n\n\tindented by a tab",
    "*   star item",
    "+ plus item",
    "a line\r\nwith CRLF\r\n\r\nand more",
    "trailing spaces  \nhard break",
    "***",
    "2020. a year, not a list",
    "#hashtag",
    "   three spaces",
]


def _texts() -> list[str]:
    rng = random.Random(16)
    texts = list(BLOCKS)
    joins = ["\n", "\n\n", "\n\n\n", "\n \n"]
    for size in (2, 3, 5):
        for _ in range(120):
            parts = rng.sample(BLOCKS, size)
            text = parts[0]
            for part in parts[1:]:
                text += rng.choice(joins) + part
            texts.append(text)
    return texts


@pytest.fixture(scope="module")
def policy() -> TextPolicy:
    return TextPolicy(["https://superset.example"])


def test_every_prefix_renders_as_the_whole_text_does(policy: TextPolicy) -> None:
    checked = 0
    for text in _texts():
        cuts = (
            range(1, len(text) + 1)
            if len(text) < 120
            else itertools.chain(range(1, len(text) + 1, 7), [len(text)])
        )
        for cut in cuts:
            prefix = text[:cut]
            assert policy.markdown(prefix) == policy.render_whole(prefix), repr(prefix)
            checked += 1
    assert checked > 10_000


def test_only_blocks_a_blank_line_ended_are_final() -> None:
    assert final_blocks_end("one paragraph") == 0
    assert final_blocks_end("one\n\ntwo") == len("one\n\n")
    assert final_blocks_end("- a\n\n- b") == 0  # would join the list
    assert final_blocks_end("- a\n\n  b") == 0  # continues the item
    assert final_blocks_end("```\na\n\nb") == 0  # inside an open fence
    assert final_blocks_end("```\na\n\nb\n```\n\nc") == len("```\na\n\nb\n```\n\n")
    assert final_blocks_end("[x]\n\n[x]: /y") == 0  # a reference defined later


def test_a_streamed_answer_parses_each_final_block_once(monkeypatch: pytest.MonkeyPatch) -> None:
    fresh = TextPolicy()
    parsed: list[int] = []
    render = fresh.render_whole

    def counting(text: str) -> str:
        parsed.append(len(text))
        return render(text)

    monkeypatch.setattr(fresh, "render_whole", counting)
    fresh._final_blocks = lru_cache(maxsize=256)(counting)  # type: ignore[method-assign]
    answer = "\n\n".join(f"Paragraph {n}: " + "word " * 20 for n in range(30))
    words = answer.split(" ")
    prefixes = [" ".join(words[:n]) for n in range(1, len(words) + 1)]
    for prefix in prefixes:
        fresh.markdown(prefix)
    whole_each_time = sum(len(prefix) for prefix in prefixes)
    assert sum(parsed) < whole_each_time / 10  # was all of it: O(n²) over the answer

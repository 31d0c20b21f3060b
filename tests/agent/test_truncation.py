"""Property tests of structured truncation (SPEC §5): never over the limit, counts right,
structure kept as promised."""

from __future__ import annotations

import json
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from agent.truncation import ITEMS_SHOWN, SHORT_SCALAR, TEXT_SUFFIX, more_items, truncate

LIMITS = st.integers(min_value=200, max_value=6000)
scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**12, 10**12),
                    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=300))
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(st.lists(children, max_size=12),
                               st.dictionaries(st.text(max_size=20), children, max_size=8)),
    max_leaves=60,
)
records = st.fixed_dictionaries({
    "id": st.integers(1, 10**6),
    "title": st.text(min_size=0, max_size=400),
    "owners": st.lists(st.text(max_size=30), max_size=5),
})


@settings(max_examples=120, deadline=None)
@given(value=json_values, limit=LIMITS)
def test_output_never_exceeds_limit_and_short_output_is_untouched(value, limit):
    text, truncated = truncate(value, limit)
    assert len(text) <= limit
    original = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if len(original) <= limit:
        assert (text, truncated) == (original, False)
    else:
        assert truncated


@settings(max_examples=100, deadline=None)
@given(items=st.lists(records, min_size=1, max_size=300), limit=LIMITS)
def test_array_becomes_found_x_items_with_first_five_and_the_rest_counted(items, limit):
    text, truncated = truncate(items, limit)
    assert len(text) <= limit
    if not truncated:
        return
    lines = text.split("\n")
    assert lines[0] == f"Found {len(items)} items:"
    shown = min(len(items), ITEMS_SHOWN)
    assert len([line for line in lines if line.startswith("- ")]) == shown
    assert all(line.startswith("- ") for line in lines[1:1 + shown])
    if len(items) > ITEMS_SHOWN:
        assert lines[-1] == f"... and ({len(items) - ITEMS_SHOWN}) more items."
        assert len(lines) == shown + 2
    else:
        assert len(lines) == shown + 1
    # each shown line is that item's own rendering, in order
    for line, item in zip(lines[1:1 + shown], items[:shown], strict=True):
        assert line.startswith("- {")
        first_key = next(iter(item))
        assert line.startswith(f'- {{"{first_key}": ')


@settings(max_examples=100, deadline=None)
@given(
    data=st.dictionaries(st.from_regex(r"[a-z_]{1,12}", fullmatch=True), json_values,
                         min_size=1, max_size=12),
    big=st.lists(records, min_size=20, max_size=200),
    limit=LIMITS,
)
def test_object_keeps_every_key_and_stays_json(data, big, limit):
    value = {**data, "items": big}
    text, truncated = truncate(value, limit)
    assert len(text) <= limit
    if not truncated:
        return
    sampled = json.loads(text)
    if len(json.dumps({key: "…" for key in value}, ensure_ascii=False)) <= limit:
        assert list(sampled) == list(value)  # all keys, in order
    else:
        assert any("more keys" in key for key in sampled)

    def short(v):
        return (v is None or isinstance(v, bool | int | float)) and \
            len(json.dumps(v)) <= SHORT_SCALAR
    skeleton = {k: v if short(v) else "…" for k, v in value.items()}
    if len(json.dumps(skeleton, ensure_ascii=False)) <= limit:
        for key, original in value.items():
            if short(original):
                assert sampled[key] == original


def test_tool_result_shape_keeps_count_and_marks_the_cut_list():
    rows = [{"id": i, "title": f"Dashboard number {i}", "slug": f"dash-{i}"} for i in range(300)]
    value = {"env": "ss-dev", "count": 300, "page": 0, "dashboards": rows}
    text, truncated = truncate(value, 4000)
    sampled = json.loads(text)
    assert truncated and len(text) <= 4000
    assert sampled["count"] == 300 and sampled["env"] == "ss-dev"
    assert sampled["dashboards"][0] == rows[0]
    shown = len(sampled["dashboards"]) - 1
    assert sampled["dashboards"][-1] == more_items(300 - shown)


sentences = st.lists(
    st.from_regex(r"[A-Z][a-z]{1,10}( [a-z]{1,10}){1,12}[.!?]", fullmatch=True),
    min_size=1, max_size=400,
)


@settings(max_examples=100, deadline=None)
@given(parts=sentences, limit=LIMITS)
def test_text_is_cut_at_a_sentence_boundary(parts, limit):
    text = " ".join(parts)
    out, truncated = truncate(text, limit)
    assert len(out) <= limit
    if len(text) <= limit:
        assert out == text and not truncated
        return
    assert truncated and out.endswith(TEXT_SUFFIX)
    kept = out[: -len(TEXT_SUFFIX)]
    assert text.startswith(kept)
    # sentences here are at most ~140 chars, so a boundary always exists in the window
    assert re.search(r"[.!?]$", kept)


def test_text_without_any_boundary_is_still_cut_within_the_limit():
    out, truncated = truncate("x" * 10_000, 4000)
    assert truncated and len(out) <= 4000 and out.endswith(TEXT_SUFFIX)


def test_json_text_is_truncated_by_structure_too():
    items = [{"id": i, "name": "n" * 50} for i in range(100)]
    out, truncated = truncate(json.dumps(items), 4000)
    assert truncated and out.startswith("Found 100 items:\n- ")
    assert out.endswith("... and (95) more items.")


def test_huge_key_sets_still_fit():
    value = {f"key_{i:05d}_" + "k" * 30: i for i in range(2000)}
    out, truncated = truncate(value, 4000)
    assert truncated and len(out) <= 4000
    parsed = json.loads(out)
    assert any("more keys" in key for key in parsed)

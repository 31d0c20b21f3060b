"""`parse_uicontext` never raises and explains what it dropped; through the service, a bad
context gives a `warning` event and the run still completes (SPEC §2, §3)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.uicontext import MAX_CONTEXT_BYTES, UIContext, parse_uicontext
from runtime import Runtime
from tests.fakes.runs import collect, of_type

XSS_NAME = "<img src=x onerror=alert(1)>"


def test_a_valid_context_is_kept() -> None:
    raw = json.dumps({"objectType": "dashboard", "objectId": 42, "objectName": "Sales",
                      "envId": "ss-dev", "route": "/dashboards/42"})

    context, warnings = parse_uicontext(raw)

    assert warnings == []
    assert context == UIContext(objectType="dashboard", objectId=42, objectName="Sales",
                                envId="ss-dev", route="/dashboards/42")


def test_a_dict_is_accepted_like_its_json() -> None:
    context, warnings = parse_uicontext({"objectType": "Dataset", "objectId": "7"})

    assert warnings == []
    assert context is not None
    assert (context.objectType, context.objectId) == ("dataset", 7)


@pytest.mark.parametrize("raw", [None, "", "   ", "{}"])
def test_nothing_is_no_context_and_no_warning(raw: Any) -> None:
    assert parse_uicontext(raw) == (None, [])


@pytest.mark.parametrize(("raw", "expected"), [
    ("not json", "not valid JSON"),
    ("{'objectType': 'dashboard'}", "not valid JSON"),
    ("[1, 2, 3]", "expected a JSON object"),
    ('"dashboard"', "expected a JSON object"),
    ("42", "expected a JSON object"),
    ("null", "expected a JSON object"),
    (["objectType"], "expected a JSON object"),
    (42, "expected a JSON object"),
    pytest.param("x" * (1024 * 1024), f"larger than {MAX_CONTEXT_BYTES} bytes", id="1MB"),
    pytest.param({"objectName": "x" * 5000}, f"larger than {MAX_CONTEXT_BYTES} bytes",
                 id="big-dict"),
    # 4 KB of "[" nests deeper than Python's stack; it used to raise RecursionError
    pytest.param("[" * 4000, "not valid JSON", id="deep-nesting"),
])
def test_unusable_input_is_dropped_with_a_warning(raw: Any, expected: str) -> None:
    context, warnings = parse_uicontext(raw)

    assert context is None
    assert len(warnings) == 1 and expected in warnings[0]


def test_a_circular_dict_is_dropped() -> None:
    data: dict[str, Any] = {"objectType": "dashboard"}
    data["self"] = data

    context, warnings = parse_uicontext(data)

    assert context is None and warnings


@pytest.mark.parametrize(("data", "expected_warning", "kept"), [
    ({"objectType": "chart", "objectName": "A"}, "objectType must be", {"objectName": "A"}),
    ({"objectType": ["dashboard"], "route": "/x"}, "objectType must be", {"route": "/x"}),
    ({"objectType": "dashboard", "objectId": -3}, "positive integer",
     {"objectType": "dashboard"}),
    ({"objectType": "dashboard", "objectId": 1.5}, "positive integer",
     {"objectType": "dashboard"}),
    ({"objectType": "dashboard", "objectId": True}, "positive integer",
     {"objectType": "dashboard"}),
    ({"objectType": "dashboard", "objectId": 2**40}, "positive integer",
     {"objectType": "dashboard"}),
    ({"objectId": 5, "envId": "prod"}, "without an objectType", {"envId": "prod"}),
    ({"objectName": {"x": 1}, "envId": "prod"}, "objectName must be", {"envId": "prod"}),
    ({"envId": "../../etc", "route": "/a"}, "envId must be", {"route": "/a"}),
    ({"envId": "prod", "route": "javascript:alert(1)"}, "route must be", {"envId": "prod"}),
    ({"envId": "prod", "evil": 1, "__proto__": {}}, "unknown keys __proto__, evil",
     {"envId": "prod"}),
])
def test_bad_fields_are_dropped_and_the_rest_kept(
    data: dict[str, Any], expected_warning: str, kept: dict[str, Any]
) -> None:
    context, warnings = parse_uicontext(json.dumps(data))

    assert any(expected_warning in w for w in warnings), warnings
    assert context is not None
    assert context.model_dump(exclude_none=True) == kept


def test_names_keep_html_as_text_but_lose_control_characters() -> None:
    context, warnings = parse_uicontext({"objectType": "dashboard", "objectId": 1,
                                         "objectName": f" {XSS_NAME}\u0000\u202e\n "})

    assert warnings == []
    assert context is not None and context.objectName == XSS_NAME


def test_long_names_are_cut_with_a_warning() -> None:
    context, warnings = parse_uicontext({"objectType": "dataset", "objectName": "n" * 300})

    assert context is not None and context.objectName == "n" * 200
    assert any("cut to 200" in w for w in warnings)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=12,
)
context_like = st.fixed_dictionaries({}, optional={
    "objectType": json_values | st.sampled_from(["dashboard", "dataset", "migration"]),
    "objectId": json_values, "objectName": json_values, "envId": json_values,
    "route": json_values, "extra": json_values,
})


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300) | context_like.map(json.dumps) | json_values.map(json.dumps))
def test_any_string_gives_a_valid_context_or_none(raw: str) -> None:
    context, warnings = parse_uicontext(raw)

    assert context is None or not context.is_empty()
    assert all(isinstance(w, str) and len(w) < 400 for w in warnings)
    if context is not None:
        UIContext.model_validate(context.model_dump())  # every kept field is valid


# through the service -------------------------------------------------------------------------

MALFORMED: dict[str, Any] = {
    "not-json": "{objectType: dashboard",
    "a-list": '["dashboard", 42]',
    "one-megabyte": json.dumps({"objectName": "x" * (1024 * 1024)}),
    "wrong-types": json.dumps({"objectType": 3, "objectId": "forty-two", "envId": ["prod"],
                               "route": 7}),
    "deep": "[" * 5000,
}


async def test_malformed_context_warns_and_the_run_completes(runtime: Runtime) -> None:
    identity, token = runtime.issuer.mint_demo("viewer")
    for label, raw in MALFORMED.items():
        live = await runtime.agent.start_turn(message="what can you do?", conv_id=label,
                                              user_id=identity.user_id, user_jwt=token,
                                              env_id="ss-dev", uicontext_str=raw)
        events = await collect(live)

        assert events[0]["type"] == "run_started", label
        assert events[0]["context"] is None, label
        assert of_type(events, "warning"), label
        assert events[-1]["status"] == "completed", (label, events[-1])


async def test_html_name_travels_as_text_and_the_run_completes(runtime: Runtime) -> None:
    identity, token = runtime.issuer.mint_demo("viewer")
    raw = json.dumps({"objectType": "dashboard", "objectId": 42, "objectName": XSS_NAME,
                      "envId": "ss-dev", "route": "/dashboards/42"})

    live = await runtime.agent.start_turn(message="what can you do?", conv_id="xss",
                                          user_id=identity.user_id, user_jwt=token,
                                          env_id=None, uicontext_str=raw)
    events = await collect(live)

    assert events[0]["context"]["objectName"] == XSS_NAME
    assert events[0]["env_id"] == "ss-dev"  # from the context, as no env_id was submitted
    assert events[-1]["status"] == "completed"


async def test_a_six_argument_caller_has_no_context(runtime: Runtime) -> None:
    identity, token = runtime.issuer.mint_demo("viewer")

    live = await runtime.agent.start_turn(message="what can you do?", conv_id="six",
                                          user_id=identity.user_id, user_jwt=token,
                                          env_id="staging", uicontext_str=None)
    events = await collect(live)

    assert events[0]["context"] is None
    assert (events[0]["env_id"], events[0]["env_tier"]) == ("staging", "staging")
    assert not of_type(events, "warning")
    assert events[-1]["status"] == "completed"


async def test_a_bad_env_id_is_ignored_with_a_warning(runtime: Runtime) -> None:
    identity, token = runtime.issuer.mint_demo("viewer")

    live = await runtime.agent.start_turn(message="what can you do?", conv_id="badenv",
                                          user_id=identity.user_id, user_jwt=token,
                                          env_id="<script>", uicontext_str=None)
    events = await collect(live)

    assert events[0]["env_id"] is None
    assert any("env_id ignored" in w["message"] for w in of_type(events, "warning"))
    assert events[-1]["status"] == "completed"

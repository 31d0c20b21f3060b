"""Properties of the offline model over generated input: it never crashes, only calls offered
tools, always with arguments the real tool schema accepts, and never calls a tool after
results or in side mode, whatever the text says."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.offline.brain import decide
from agent.tools.catalog import all_tools
from side_questions.prompt import side_messages
from tests.agent.offline_support import after_call, context, messages_for, tools_for

_SPECS = {spec.name: spec for spec in all_tools()}
_WORDS = ["list", "show", "delete", "rename", "it", "to", "dashboard", "dataset", "charts",
          "3", "#2", "staging", "prod", "ss-dev", "from", "promote", "compare", "between",
          "and", "publish", "unpublish", "cache", "timeout", "600", "rows", "export", "who",
          "uses", "'Q3'", "\"x\"", "what", "can", "you", "do", "environments", "refresh",
          "columns", "about", "sales", "in", "history", "would", "happen", "if", "owners",
          "slug", "description", "next", "page", "?", "!", "<context>{}</context>", "🙂"]
_TEXT = st.one_of(st.lists(st.sampled_from(_WORDS), max_size=14).map(" ".join),
                  st.text(max_size=200))
_PAGE = st.sampled_from([None, "dashboard", "dataset", "migration"])
_ROLE = st.sampled_from(["viewer", "editor", "admin"])
_SETTINGS = settings(max_examples=300, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(text=_TEXT, page=_PAGE, role=_ROLE, object_id=st.one_of(st.none(), st.integers(1, 99)))
def test_calls_are_offered_and_valid_for_the_real_schema(text: str, page: str | None, role: str,
                                                         object_id: int | None) -> None:
    tools = tools_for(role, page)
    decision = decide(messages_for(text, context(page, object_id, role=role)), tools)
    offered = {tool["function"]["name"] for tool in tools}
    assert decision.text or decision.tool_calls
    for name, arguments in decision.tool_calls:
        assert name in offered
        _SPECS[name].args_schema.model_validate(json.loads(arguments))


@_SETTINGS
@given(result=st.one_of(st.text(max_size=300), st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=30)),
    lambda inner: st.one_of(st.lists(inner, max_size=6),
                            st.dictionaries(st.text(max_size=12), inner, max_size=6)),
    max_leaves=30)), tool=st.sampled_from(sorted(_SPECS)))
def test_any_result_gets_an_answer_and_no_call(result: object, tool: str) -> None:
    ctx = context("dashboard", 3, role="admin")
    messages = after_call(messages_for("go", ctx), [(tool, {"dashboard_id": 3}, result)])
    decision = decide(messages, tools_for("admin", "dashboard"))
    assert decision.tool_calls == [] and decision.text


@_SETTINGS
@given(question=_TEXT, result=st.text(max_size=200))
def test_side_questions_never_call_tools(question: str, result: str) -> None:
    ctx = context("dashboard", 3, role="admin")
    main = after_call([{"role": "user", "content": "list the dashboards"}],
                      [("list_dashboards", {}, result)])
    messages = side_messages(system_prompt=messages_for("", ctx)[0]["content"],
                             context_messages=main, replay=[], question=question,
                             side_summary=None)
    decision = decide(messages, tools_for("admin", "dashboard"))
    assert decision.tool_calls == [] and decision.text

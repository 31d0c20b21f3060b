"""Side questions (`/btw`) answered by the offline model from the snapshot only (S1-S3).

Requests are built with the side-question service's own `side_messages`, around a main
transcript made of real prompts and truncated tool results.
"""

from __future__ import annotations

from typing import Any

from agent.offline.brain import decide
from agent.prompts import build_system_prompt
from side_questions.prompt import main_summary_message, side_messages
from tests.agent.offline_support import after_call, context, tools_for

LISTED = {"env": "ss-dev", "count": 3, "page": 0, "page_size": 25, "dashboards": [
    {"id": 1, "title": "Sales"}, {"id": 2, "title": "Marketing"}, {"id": 3, "title": "Ops"}]}
DATASET = {"env": "ss-dev", "id": 2, "table_name": "orders", "schema": "public",
           "columns": [{"name": f"c{i}", "type": "INT"} for i in range(12)],
           "metrics": [{"name": "count", "expression": "COUNT(*)"}]}


def _main(ctx: dict[str, Any], text: str, call: str, args: dict[str, Any], result: Any,
          answer: str) -> list[dict[str, Any]]:
    messages = after_call([{"role": "user", "content": text}], [(call, args, result)])
    return [*messages, {"role": "assistant", "content": answer}]


def ask(ctx: dict[str, Any], main: list[dict[str, Any]], question: str,
        replay: list[dict[str, Any]] | None = None, summary: str | None = None) -> str:
    messages = side_messages(system_prompt=build_system_prompt(ctx), context_messages=main,
                             replay=replay or [], question=question, side_summary=summary)
    decision = decide(messages, tools_for(ctx.get("role") or "viewer", ctx.get("objectType")))
    assert decision.tool_calls == []  # side questions never call tools
    return decision.text


def test_s1_which_tool_names_the_tool_and_environment() -> None:
    ctx = context("dashboard", 3)
    main = _main(ctx, "list the dashboards", "list_dashboards", {}, LISTED,
                 "Found 3 dashboards in ss-dev.")
    for question in ("which tool did you just use?", "what did you just do?",
                     "what tools have you called?"):
        text = ask(ctx, main, question)
        assert "list_dashboards" in text and "ss-dev" in text
        assert "3 items" in text


def test_s1_an_explicit_environment_argument_is_reported() -> None:
    ctx = context(None, None, env="ss-dev")
    main = _main(ctx, "list datasets in staging", "list_datasets", {"env_id": "staging"},
                 {"env": "staging", "count": 0, "datasets": []}, "No datasets in staging.")
    assert "list_datasets in staging" in ask(ctx, main, "which tool did you use?")


def test_s2_what_am_i_looking_at_is_the_page_and_its_environment() -> None:
    ctx = context("dashboard", 3, env="prod", name="Sales")
    for question in ("what am I looking at?", "which page is this?", "where am I?"):
        text = ask(ctx, [], question)
        assert text == "You are looking at dashboard #3 'Sales' in prod (prod tier)."


def test_s2_without_a_page() -> None:
    text = ask(context(None, None, env="staging"), [], "what am I looking at?")
    assert "without a page context" in text and "staging" in text


def test_s3_a_count_comes_from_the_last_result() -> None:
    ctx = context("dataset", 2)
    main = _main(ctx, "describe this dataset", "get_dataset", {"dataset_id": 2}, DATASET,
                 "Dataset #2 'orders'.")
    text = ask(ctx, main, "how many columns did it have?")
    assert "12 columns" in text and "Dataset #2 'orders'" in text


def test_s3_a_truncated_result_still_gives_the_full_count() -> None:
    big = {**DATASET, "columns": [{"name": f"column_{i}", "type": "VARCHAR(255)",
                                   "description": "x" * 40} for i in range(300)]}
    ctx = context("dataset", 2)
    main = _main(ctx, "describe this dataset", "get_dataset", {"dataset_id": 2}, big,
                 "Dataset #2 'orders'.")
    assert "300 columns" in ask(ctx, main, "how many columns does it have?")


def test_follow_ups_use_earlier_side_exchanges_and_the_same_snapshot() -> None:
    ctx = context("dataset", 2)
    main = _main(ctx, "describe this dataset", "get_dataset", {"dataset_id": 2}, DATASET,
                 "Dataset #2 'orders' has 12 columns.")
    first = ask(ctx, main, "which tool did you use?")
    replay = [{"role": "user", "content": "which tool did you use?"},
              {"role": "assistant", "content": first}]
    assert "1 metric " in ask(ctx, main, "and how many metrics?", replay)
    assert "ss-dev" in ask(ctx, main, "in which environment was that?", replay)
    assert "Dataset #2 'orders' has 12 columns." in ask(ctx, main, "what did you answer?", replay)


def test_other_side_questions() -> None:
    ctx = context("dashboard", 3, role="editor")
    main = _main(ctx, "tell me about this dashboard", "get_dashboard", {"dashboard_id": 3},
                 {"env": "ss-dev", "id": 3, "title": "Sales", "slug": "sales"},
                 "Dashboard #3 'Sales'.")
    assert ask(ctx, main, "what is my role?").startswith("Your role is editor.")
    assert "tell me about this dashboard" in ask(ctx, main, "what did I ask?")
    assert "'Sales'" in ask(ctx, main, "what's its slug?")
    recap = ask(ctx, main, "anything interesting?")
    assert "dashboard #3" in recap and "get_dashboard" in recap
    assert "not used any tool" in ask(ctx, [], "which tool did you use?")


def test_a_side_question_never_calls_a_tool_even_when_asked_to() -> None:
    ctx = context("dashboard", 3, role="admin")
    text = ask(ctx, [], "delete this dashboard now")
    assert "dashboard #3" in text


def test_a_summarised_main_context_is_read_too() -> None:
    ctx = context("dashboard", 3)
    main = [main_summary_message("The user listed dashboards in ss-dev."),
            *_main(ctx, "list the dashboards", "list_dashboards", {}, LISTED, "Found 3.")]
    assert "list_dashboards" in ask(ctx, main, "which tool did you use?")

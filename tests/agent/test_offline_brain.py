"""The offline model's choice of tool and arguments for every row of SCENARIOS.md 1-27.

Each row is checked with the utterance of the table and a few close paraphrases, on the
page and with the role of the row, against the tool schemas the app really offers there.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent.offline.brain import decide
from agent.offline.intents import CHAT_PAGE_SIZE
from tests.agent.offline_support import (
    after_call,
    context,
    messages_for,
    only_call,
    run,
    tools_for,
)

# (row, page, object id, role, utterances, tool, arguments)
ROWS: list[tuple[int, str | None, int | None, str, list[str], str, dict[str, Any]]] = [
    (1, None, None, "viewer", ["what can you do?", "What else can you do for me?", "help",
                               "which tools do you have?"], "show_capabilities", {}),
    (2, None, None, "viewer", ["which environments are there?", "list the environments",
                               "what envs do you know?", "show me all environments"],
     "list_environments", {}),
    (3, "dashboard", 3, "viewer", ["list the dashboards", "show me all dashboards",
                                   "what dashboards are there?",
                                   "how many dashboards do we have?"], "list_dashboards", {}),
    (4, "dashboard", 3, "viewer", ["tell me about this dashboard", "describe it",
                                   "give me the details of this dashboard",
                                   "who owns this dashboard?", "is it published?"],
     "get_dashboard", {"dashboard_id": 3}),
    (5, "dashboard", 3, "viewer", ["which charts are on it?",
                                   "what charts does this dashboard have?", "list its charts",
                                   "show the charts", "what's on this dashboard?"],
     "get_dashboard_charts", {"dashboard_id": 3}),
    (6, "dashboard", 3, "viewer", ["what datasets does it use?",
                                   "which datasets are behind this dashboard?",
                                   "what tables feed it?",
                                   "list the datasets this dashboard uses"],
     "get_dashboard_datasets", {"dashboard_id": 3}),
    (7, "dashboard", None, "viewer", ["find dashboards about sales",
                                      "search for dashboards named sales",
                                      "any dashboards with sales in the title?",
                                      "show me sales dashboards", "dashboards matching 'sales'"],
     "list_dashboards", {"search": "sales"}),
    (8, "dashboard", 3, "editor", ['rename it to "Revenue 2026"',
                                   "rename this dashboard to Revenue 2026",
                                   "change the title to 'Revenue 2026'",
                                   "call it “Revenue 2026”"],
     "update_dashboard", {"dashboard_id": 3, "title": "Revenue 2026"}),
    (9, "dashboard", 3, "editor", ["publish it", "publish this dashboard", "make it public",
                                   "please publish dashboard 3"],
     "set_dashboard_published", {"dashboard_id": 3, "published": True}),
    (9, "dashboard", 3, "editor", ["unpublish it", "make it a draft again",
                                   "set it back to draft"],
     "set_dashboard_published", {"dashboard_id": 3, "published": False}),
    (10, "dashboard", 3, "admin", ["delete this dashboard", "remove it",
                                   "please delete dashboard 3", "get rid of this dashboard"],
     "delete_dashboard", {"dashboard_id": 3}),
    (12, "dashboard", 3, "viewer", ["export it", "export this dashboard",
                                    "download it as a bundle", "give me a zip of dashboard 3"],
     "export_dashboard", {"dashboard_id": 3}),
    (13, "dataset", 2, "viewer", ["describe this dataset", "tell me about it",
                                  "what columns does it have?",
                                  "show the schema of this dataset"],
     "get_dataset", {"dataset_id": 2}),
    (14, "dataset", 2, "viewer", ["who uses this dataset?", "which charts use it?",
                                  "where is this dataset used?", "what depends on it?",
                                  "which dashboards use this dataset?"],
     "get_dataset_usage", {"dataset_id": 2}),
    (15, "dataset", 2, "viewer", ["show me a few rows", "preview it", "show some sample data",
                                  "let me peek at the data"], "preview_dataset", {"dataset_id": 2}),
    (15, "dataset", 2, "viewer", ["first 5 rows please", "show me 5 rows"],
     "preview_dataset", {"dataset_id": 2, "limit": 5}),
    (16, "dataset", 2, "editor", ["refresh its columns", "refresh this dataset",
                                  "sync the columns", "re-sync the columns from the database"],
     "refresh_dataset_columns", {"dataset_id": 2}),
    (17, "dataset", 2, "editor", ["set the cache timeout to 600",
                                  "change cache timeout to 600 seconds",
                                  "cache it for 10 minutes", "cache_timeout=600"],
     "update_dataset", {"dataset_id": 2, "cache_timeout": 600}),
    (18, "dataset", None, "viewer", ["list datasets in staging",
                                     "show me the datasets on staging",
                                     "which datasets exist in the staging environment?"],
     "list_datasets", {"env_id": "staging"}),
    (19, "migration", None, "viewer", ["compare dashboard 3 between ss-dev and prod",
                                       "diff dashboard 3 ss-dev vs prod",
                                       "how does dashboard 3 differ between ss-dev and prod?",
                                       "is dashboard 3 in sync between ss-dev and prod?"],
     "compare_environments", {"dashboard_id": 3, "source_env": "ss-dev", "target_env": "prod"}),
    (20, "migration", None, "viewer", ["what would happen if I promote dashboard 3 to staging?",
                                       "dry run: migrate dashboard 3 to staging",
                                       "plan the promotion of dashboard 3 to staging",
                                       "what would change if dashboard 3 were promoted to "
                                       "staging?"],
     "plan_migration", {"dashboard_id": 3, "source_env": "ss-dev", "target_env": "staging"}),
    (21, "migration", None, "editor", ["promote dashboard 3 from ss-dev to staging",
                                       "migrate dashboard 3 to staging",
                                       "copy dashboard 3 from ss-dev into staging",
                                       "deploy dashboard #3 to staging"],
     "migrate_dashboard", {"dashboard_id": 3, "source_env": "ss-dev", "target_env": "staging"}),
    (22, "migration", None, "admin", ["promote dashboard 3 to prod",
                                      "promote dashboard 3 to production",
                                      "push dashboard 3 from ss-dev to prod"],
     "migrate_dashboard", {"dashboard_id": 3, "source_env": "ss-dev", "target_env": "prod"}),
    (23, "migration", None, "viewer", ["what has been migrated lately?",
                                       "show the migration history", "recent migrations",
                                       "what did we promote recently?"], "migration_history", {}),
    (24, None, None, "viewer", ["list all charts", "show me the charts", "which charts exist?",
                                "how many charts are there?"], "list_charts", {}),
]


def listing(tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """A listing asks for a chat-sized page (CHAT_PAGE_SIZE rows; "next page" goes on)."""
    return {**args, "page_size": CHAT_PAGE_SIZE} if tool in LISTINGS else args


LISTINGS = ("list_dashboards", "list_datasets", "list_charts")
CASES = [pytest.param(page, oid, role, text, tool, args, id=f"row{row}-{text[:40]}")
         for row, page, oid, role, texts, tool, args in ROWS for text in texts]


@pytest.mark.parametrize(("page", "object_id", "role", "text", "tool", "args"), CASES)
def test_scenario_rows_pick_the_offered_tool_with_its_arguments(
        page: str | None, object_id: int | None, role: str, text: str, tool: str,
        args: dict[str, Any]) -> None:
    decision = run(text, page, object_id, role=role)
    assert only_call(decision) == (tool, listing(tool, args))
    offered = {t["function"]["name"]: t["function"]["parameters"] for t in tools_for(role, page)}
    assert tool in offered
    assert set(args) <= set(offered[tool].get("properties", {}))


@pytest.mark.parametrize("tool", ["update_dashboard", "set_dashboard_published",
                                  "delete_dashboard", "migrate_dashboard"])
def test_changes_say_what_will_happen_before_the_call(tool: str) -> None:
    text = {"update_dashboard": "rename it to 'Q3'", "set_dashboard_published": "publish it",
            "delete_dashboard": "delete it", "migrate_dashboard": "promote dashboard 3 to prod"}
    page = "migration" if tool == "migrate_dashboard" else "dashboard"
    decision = run(text[tool], page, 3, role="admin")
    assert only_call(decision)[0] == tool
    assert "approve" in decision.text


@pytest.mark.parametrize("text", ["delete this dashboard", "remove it",
                                  "please delete dashboard 3"])
def test_row11_a_viewer_asking_to_delete_gets_a_plain_refusal_and_no_call(text: str) -> None:
    decision = run(text, "dashboard", 3, role="viewer")
    assert decision.tool_calls == []
    assert "viewer" in decision.text and "does not allow" in decision.text
    assert "admin" in decision.text


@pytest.mark.parametrize(("role", "page", "text", "needed"), [
    ("editor", "dashboard", "delete this dashboard", "admin"),
    ("viewer", "dashboard", "rename it to 'X'", "editor"),
    ("viewer", "dataset", "refresh its columns", "editor"),
    ("editor", "dataset", "delete this dataset", "admin"),
    ("viewer", "migration", "promote dashboard 3 to staging", "editor"),
])
def test_a_write_the_role_does_not_allow_is_refused_by_role(role: str, page: str, text: str,
                                                            needed: str) -> None:
    decision = run(text, page, 3, role=role)
    assert decision.tool_calls == []
    assert f"({role})" in decision.text and needed in decision.text


@pytest.mark.parametrize("text", ["list datasets", "show all datasets",
                                  "which datasets exist in ss-dev?"])
def test_row25_list_datasets_on_a_dashboard_page_names_the_page_that_offers_it(text: str) -> None:
    decision = run(text, "dashboard", 3)
    assert decision.tool_calls == []
    assert "dataset page" in decision.text
    assert "what datasets does it use?" in decision.text  # what this page can do instead


def test_a_tool_of_another_page_is_explained_not_called() -> None:
    decision = run("promote it to staging", "dashboard", 3, role="admin")
    assert decision.tool_calls == []
    assert "migration page" in decision.text


@pytest.mark.parametrize("text", ["", "   ", "\n\t  "])
def test_row26_an_empty_message_gets_a_prompt_and_no_tool(text: str) -> None:
    decision = run(text, "dashboard", 3)
    assert decision.tool_calls == []
    assert "Please" in decision.text


def test_row27_a_20000_character_message_is_read_in_part_and_said_so() -> None:
    decision = run("list the dashboards " + "blah " * 4000)
    assert "20,0" in decision.text and "first 4,000" in decision.text
    assert only_call(decision) == ("list_dashboards", listing("list_dashboards", {}))
    noise = run("x" * 20000)
    assert noise.tool_calls == [] and "couldn't find a request" in noise.text


def test_an_unknown_request_says_what_it_can_do() -> None:
    decision = run("blorp the frobnicator", "dataset", 2)
    assert decision.tool_calls == []
    assert "preview dataset rows" in decision.text and "what can you do?" in decision.text


def test_a_greeting_is_answered_without_a_tool() -> None:
    decision = run("hello!")
    assert decision.tool_calls == [] and "Hello" in decision.text


@pytest.mark.parametrize(("text", "env"), [
    ("list dashboards in prod", "prod"),
    ("list published dashboards in prod", "prod"),
    ("list dashboards in production", "prod"),
    ("show the dashboards on staging", "staging"),
    ("list dashboards in analytics-eu", "analytics-eu"),
    ("list dashboards in the qa2 environment", "qa2"),
])
def test_an_environment_in_the_message_becomes_env_id(text: str, env: str) -> None:
    published = {"published": True} if "published" in text else {}
    assert only_call(run(text, None, None, env="ss-dev")) == (
        "list_dashboards", listing("list_dashboards", {"env_id": env, **published}))


@pytest.mark.parametrize("text", ["find dashboards in the sales area",
                                  "rename it to prod-report"])
def test_ordinary_words_are_not_taken_for_environments(text: str) -> None:
    name, args = only_call(run(text, "dashboard", 3, role="editor"))
    assert "env_id" not in args, (name, args)


def test_the_message_beats_the_page_for_ids_and_environments() -> None:
    assert only_call(run("tell me about dashboard 7 in prod", "dashboard", 3)) == (
        "get_dashboard", {"dashboard_id": 7, "env_id": "prod"})


def test_it_refers_to_the_object_of_the_previous_call() -> None:
    history = after_call(messages_for("show dashboard 5")[1:], [
        ("get_dashboard", {"dashboard_id": 5}, {"id": 5, "title": "Sales"})])
    history.append({"role": "assistant", "content": "Dashboard #5 'Sales'."})
    assert only_call(run("which charts are on it?", history=history)) == (
        "get_dashboard_charts", {"dashboard_id": 5})


def test_next_page_repeats_the_last_list_with_the_next_page() -> None:
    history = after_call(messages_for("find dashboards about sales")[1:], [
        ("list_dashboards", {"search": "sales"}, {"count": 60, "dashboards": []})])
    assert only_call(run("next page", "dashboard", history=history)) == (
        "list_dashboards", {"search": "sales", "page": 1})


def test_a_name_without_an_id_is_looked_up_by_listing() -> None:
    assert only_call(run("tell me about the Sales dashboard")) == (
        "list_dashboards", {"search": "Sales"})
    decision = run("tell me about the dashboard")
    assert decision.tool_calls == [] and "Which dashboard?" in decision.text


def test_a_migration_without_a_target_asks_for_it() -> None:
    decision = run("promote dashboard 3", "migration", role="editor")
    assert decision.tool_calls == [] and "environments" in decision.text


def test_only_arguments_in_the_offered_schema_are_filled() -> None:
    tools = [{"type": "function", "function": {
        "name": "list_dashboards", "description": "List dashboards.",
        "parameters": {"type": "object", "properties": {"search": {"type": "string"}}}}}]
    decision = decide(messages_for("find dashboards about sales in staging"), tools)
    assert only_call(decision) == ("list_dashboards", {"search": "sales"})


def test_a_required_argument_it_cannot_fill_is_asked_for() -> None:
    tools = [{"type": "function", "function": {
        "name": "list_dashboards", "description": "List dashboards.",
        "parameters": {"type": "object", "properties": {"owner": {"type": "integer"}},
                       "required": ["owner"]}}}]
    decision = decide(messages_for("list the dashboards"), tools)
    assert decision.tool_calls == [] and "owner" in decision.text


def test_with_no_tools_offered_nothing_is_called() -> None:
    decision = decide(messages_for("what can you do?"), [])
    assert decision.tool_calls == []
    assert decision.text


def test_decisions_are_deterministic() -> None:
    messages = messages_for("compare dashboard 3 between ss-dev and prod",
                            context("migration", role="admin"))
    tools = tools_for("admin", "migration")
    first, second = decide(messages, tools), decide(messages, tools)
    assert first == second
    assert json.loads(first.tool_calls[0][1]) == {"dashboard_id": 3, "source_env": "ss-dev",
                                                  "target_env": "prod"}


@pytest.mark.parametrize(("text", "noun"), [
    ("create a new dashboard called Marketing", "dashboard"),
    ("create dashboard Marketing", "dashboard"),
    ("make a new chart", "chart"),
    ("can you build me a dataset from orders?", "dataset"),
    ("add a chart to dashboard 3", "chart"),
    ("start a new dashboard for the sales team", "dashboard"),
])
def test_a_request_to_create_something_is_refused_plainly_never_searched(
        text: str, noun: str) -> None:
    """Issue 13, item 6: no tool creates objects; once "create a new dashboard called
    Marketing" silently ran a search for "Marketing"."""
    decision = run(text, "dashboard", 3, role="admin")
    assert decision.tool_calls == []
    assert decision.text.startswith(f"I can't create a {noun}: no tool here does that")
    assert "The nearest I can do:" in decision.text


def test_a_publish_request_is_not_taken_for_a_creation() -> None:
    assert only_call(run("make it a draft", "dashboard", 3, role="admin"))[0] == (
        "set_dashboard_published")


@pytest.mark.parametrize(("text", "published"), [
    ("which dashboards are published?", True),
    ("list the published dashboards", True),
    ("show me unpublished dashboards", False),
    ("list the draft dashboards", False),
])
def test_row29_the_published_filter_is_applied_not_ignored(text: str, published: bool) -> None:
    """Issue 13, item 6: "which dashboards are published?" listed drafts too."""
    assert only_call(run(text, "dashboard")) == (
        "list_dashboards", listing("list_dashboards", {"published": published}))

"""The offline model on SCENARIOS.md rows 28-40 (issue 13), three or more phrasings each,
and its multi-step plans: names resolved by a search, compound and conditional requests,
each next call coming only from the person's words and structured result fields."""

from __future__ import annotations

from typing import Any

import pytest

from agent.offline.brain import decide
from tests.agent.offline_support import after_call, context, messages_for, only_call, run, tools_for

LISTED = {"env": "ss-dev", "count": 13, "page": 0, "page_size": 10, "dashboards": [
    {"id": i, "title": f"Board {i}", "published": True} for i in range(1, 11)]}
SALES_TWO = {"env": "ss-dev", "count": 2, "page": 0, "page_size": 25, "dashboards": [
    {"id": 3, "title": "Sales Overview", "published": False},
    {"id": 5, "title": "Regional Sales", "published": True}]}
ONE = {"env": "ss-dev", "count": 1, "page": 0, "page_size": 25, "dashboards": [
    {"id": 2, "title": "Marketing Funnel", "published": True}]}
ORDERS = {"env": "ss-dev", "count": 1, "page": 0, "page_size": 25, "datasets": [
    {"id": 2, "table_name": "orders", "schema": "public"}]}


def _listed(text: str) -> list[dict[str, Any]]:
    return after_call(messages_for("list the dashboards")[1:],
                      [("list_dashboards", {"page_size": 10}, LISTED)])


@pytest.mark.parametrize("text", ["next page", "show more", "more please", "and the next ones?",
                                  "keep going"])
def test_row28_next_page_continues_the_listing_with_the_same_page_size(text: str) -> None:
    assert only_call(run(text, "dashboard", history=_listed(text))) == (
        "list_dashboards", {"page_size": 10, "page": 1})


@pytest.mark.parametrize(("text", "published"), [
    ("which dashboards are published?", True), ("only the live dashboards please", True),
    ("show me the public dashboards", True), ("which dashboards are drafts?", False),
    ("list unpublished dashboards", False)])
def test_row29_the_published_filter_is_applied(text: str, published: bool) -> None:
    name, args = only_call(run(text, "dashboard"))
    assert (name, args.get("published")) == ("list_dashboards", published)


@pytest.mark.parametrize(("text", "name"), [
    ('rename the sales dashboard to "Q4"', "sales"),
    ("change the title of the marketing dashboard to Q4", "marketing"),
    ("call the finance dashboard 'Q4'", "finance"),
    ("please retitle the dashboard called Marketing Funnel to Q4", "Marketing Funnel")])
def test_row30_a_named_dashboard_is_searched_first(text: str, name: str) -> None:
    name_called, args = only_call(run(text, "dashboard", role="editor"))
    assert (name_called, args["search"].lower()) == ("list_dashboards", name.lower())


def _rename_after_search(result: Any, text: str = 'rename the sales dashboard to "Q4"'
                         ) -> tuple[list[dict[str, Any]], Any]:
    ctx = context("dashboard", role="editor")
    messages = messages_for(text, ctx)
    first = only_call(decide(messages, tools_for("editor", "dashboard")))
    messages = after_call(messages, [(first[0], first[1], result)])
    return messages, decide(messages, tools_for("editor", "dashboard"))


def test_row30_a_single_match_gets_the_rename_several_get_a_question() -> None:
    _, decision = _rename_after_search(ONE)
    assert only_call(decision) == ("update_dashboard", {"dashboard_id": 2, "title": "Q4"})
    assert "approve" in decision.text

    messages, decision = _rename_after_search(SALES_TWO)
    assert decision.tool_calls == []
    assert "#3 'Sales Overview'" in decision.text and "#5 'Regional Sales'" in decision.text
    assert "Which one" in decision.text
    messages += [{"role": "assistant", "content": decision.text}]
    for reply, chosen in (("the first one", 3), ("#5", 5), ("Regional Sales", 5)):
        picked = decide([*messages, {"role": "user", "content": reply}],
                        tools_for("editor", "dashboard"))
        assert only_call(picked) == ("update_dashboard", {"dashboard_id": chosen, "title": "Q4"})


def test_row30_no_match_says_so_and_calls_nothing() -> None:
    _, decision = _rename_after_search({"env": "ss-dev", "count": 0, "dashboards": []})
    assert decision.tool_calls == [] and "No dashboard matches 'sales'" in decision.text


@pytest.mark.parametrize("text", ['rename it to "Q4" and publish it',
                                  "call it 'Q4' and then make it public",
                                  "change the title to Q4, then publish",
                                  "rename this dashboard to 'Q4'. Publish it too."])
def test_row31_rename_then_publish_one_approval_each_in_order(text: str) -> None:
    tools = tools_for("editor", "dashboard")
    messages = messages_for(text, context("dashboard", 3, role="editor"))
    first = only_call(decide(messages, tools))
    assert first == ("update_dashboard", {"dashboard_id": 3, "title": "Q4"})
    messages = after_call(messages, [(*first, {"env": "ss-dev", "updated": 3,
                                               "changed": ["dashboard_title"]})])
    second = decide(messages, tools)
    assert only_call(second) == ("set_dashboard_published", {"dashboard_id": 3,
                                                             "published": True})
    assert second.text.startswith("Done: dashboard #3") and "publish dashboard #3" in second.text
    messages = after_call(messages, [(*only_call(second), {"dashboard_id": 3,
                                                           "published": True})])
    final = decide(messages, tools)
    assert final.tool_calls == [] and "is now published" in final.text


def test_row31_a_declined_first_change_stops_the_plan() -> None:
    tools = tools_for("editor", "dashboard")
    messages = messages_for('rename it to "Q4" and publish it', context("dashboard", 3,
                                                                        role="editor"))
    first = only_call(decide(messages, tools))
    messages = after_call(messages, [(*first, "Declined: the person denied this call. "
                                      "Nothing was executed.")])
    decision = decide(messages, tools)
    assert decision.tool_calls == [] and "publish" in decision.text.lower()
    assert "stopped" in decision.text


@pytest.mark.parametrize(("text", "noun"), [
    ("create a new dashboard called Marketing", "dashboard"),
    ("I need a new dashboard for marketing", "dashboard"),
    ("can you set up a dashboard called Marketing?", "dashboard"),
    ("create a dataset", "dataset")])
def test_row32_creating_is_refused_plainly_and_nothing_runs(text: str, noun: str) -> None:
    decision = run(text, "dashboard", role="admin")
    assert decision.tool_calls == [] and f"I can't create a {noun}" in decision.text
    assert "The nearest I can do" in decision.text


@pytest.mark.parametrize("text", ["delete chart 9", "remove chart #9 please",
                                  "I want chart 9 gone", "rename chart 9 to X"])
def test_row33_chart_changes_are_refused_plainly(text: str) -> None:
    decision = run(text, None, role="admin")
    assert decision.tool_calls == [] and "no tool here does that" in decision.text


@pytest.mark.parametrize("text", ["show me dashboards 11 to 13", "dashboards 11-13 please",
                                  "tell me about dashboards 11 through 13",
                                  "details of dashboards 11, 12 and 13"])
def test_row34_a_range_is_every_dashboard_in_it(text: str) -> None:
    decision = run(text, "dashboard")
    assert [(n, a) for n, a in map(lambda c: (c[0], c[1]), decision.tool_calls)] == [
        ("get_dashboard", f'{{"dashboard_id": {i}}}') for i in (11, 12, 13)]


@pytest.mark.parametrize(("text", "seconds"), [
    ("cache it for half an hour", 1800), ("keep it cached for 30 minutes", 1800),
    ("set the cache timeout to an hour", 3600), ("cache it for ten minutes", 600),
    ("cache for 1.5 hours", 5400), ("turn off the cache", 0)])
def test_row35_durations_with_units_become_seconds(text: str, seconds: int) -> None:
    assert only_call(run(text, "dataset", 2, role="editor")) == (
        "update_dataset", {"dataset_id": 2, "cache_timeout": seconds})


@pytest.mark.parametrize("text", [
    "what's the difference between staging and prod for dashboard 3?",
    "is dashboard 3 the same in staging and production?",
    "how does dashboard 3 in staging compare with prod",
    "staging vs prod for dashboard 3"])
def test_row36_a_difference_question_is_a_comparison_never_a_write(text: str) -> None:
    assert only_call(run(text, "migration", role="admin")) == (
        "compare_environments", {"dashboard_id": 3, "source_env": "staging",
                                 "target_env": "prod"})


_COMPARED = {"differs": True, "source_env": "ss-dev", "target_env": "prod",
             "dashboard": {"title": "Sales Overview", "source_id": 3, "target_id": 3},
             "counts": {"missing": 2, "different": 1, "same": 5}, "objects": []}


@pytest.mark.parametrize("text", [
    "compare dashboard 3 across ss-dev and prod and promote it if they differ",
    "check whether dashboard 3 differs between ss-dev and prod and if so promote it",
    "if dashboard 3 is out of sync between ss-dev and prod, migrate it"])
def test_row37_compare_then_promote_only_if_they_differ(text: str) -> None:
    tools = tools_for("admin", "migration")
    messages = messages_for(text, context("migration", role="admin"))
    first = only_call(decide(messages, tools))
    envs = {"dashboard_id": 3, "source_env": "ss-dev", "target_env": "prod"}
    assert first == ("compare_environments", envs)
    different = decide(after_call(messages, [(*first, _COMPARED)]), tools)
    assert only_call(different) == ("migrate_dashboard", envs)
    same = decide(after_call(messages, [(*first, {**_COMPARED, "differs": False, "counts": {
        "missing": 0, "different": 0, "same": 8}})]), tools)
    assert same.tool_calls == [] and "nothing to promote" in same.text


@pytest.mark.parametrize("text", ["what changed in this dashboard recently?",
                                  "who changed this dashboard lately?",
                                  "show me the change history of this dashboard",
                                  "what happened to this dashboard recently?"])
def test_row38_recent_changes_of_the_page_dashboard(text: str) -> None:
    assert only_call(run(text, "dashboard", 3)) == (
        "recent_changes", {"object_type": "dashboard", "object_id": 3})


@pytest.mark.parametrize("text", ["list charts that use the orders dataset",
                                  "which charts are built on the orders dataset?",
                                  "what uses the orders dataset"])
def test_row39_the_orders_dataset_is_resolved_then_its_usage_read(text: str) -> None:
    tools = tools_for("viewer", "dataset")
    messages = messages_for(text, context("dataset"))
    first = only_call(decide(messages, tools))
    assert first == ("list_datasets", {"search": "orders"})
    second = decide(after_call(messages, [(*first, ORDERS)]), tools)
    assert only_call(second) == ("get_dataset_usage", {"dataset_id": 2})


@pytest.mark.parametrize("text", ["good morning!", "hey", "hi there", "thanks, that's all",
                                  "cheers, that's it", "ok thanks!", "bye"])
def test_row40_openers_and_closers_get_a_short_reply_and_no_tool(text: str) -> None:
    decision = run(text, "dashboard", 3)
    assert decision.tool_calls == [] and len(decision.text) < 160
    assert not decision.text.startswith("I'm not sure")


def test_it_refers_to_the_single_object_a_listing_returned() -> None:
    history = after_call(messages_for("find the marketing dashboards")[1:],
                         [("list_dashboards", {"search": "marketing"}, ONE)])
    assert only_call(run("publish that one", "dashboard", role="editor",
                         history=history)) == (
        "set_dashboard_published", {"dashboard_id": 2, "published": True})


def test_a_missing_slot_is_asked_for_then_the_answer_fills_it() -> None:
    tools = tools_for("editor", "migration")
    messages = messages_for("promote dashboard 3", context("migration", role="editor"))
    question = decide(messages, tools)
    assert question.tool_calls == [] and "Between which environments?" in question.text
    messages += [{"role": "assistant", "content": question.text},
                 {"role": "user", "content": "to staging"}]
    assert only_call(decide(messages, tools)) == (
        "migrate_dashboard", {"dashboard_id": 3, "source_env": "ss-dev",
                              "target_env": "staging"})


@pytest.mark.parametrize(("text", "what"), [
    ("list the dashboards owned by alice", "owner"),
    ("which dashboards were changed since Monday?", "date"),
    ("show the charts sorted by name", "sort order"),
    ("list published dashboards tagged finance", "tag")])
def test_a_filter_the_tools_lack_is_said_not_silently_dropped(text: str, what: str) -> None:
    """Issue 13, item 6: the listing runs with the filters the tool has, and the answer
    says which asked-for filter it could not apply."""
    page = None if "charts" in text else "dashboard"
    tools = tools_for("viewer", page)
    messages = messages_for(text, context(page))
    name, args = only_call(decide(messages, tools))
    assert name.startswith("list_") and "search" not in args
    listed = {"env": "ss-dev", "count": 0, name.removeprefix("list_"): []}
    answer = decide(after_call(messages, [(name, args, listed)]), tools)
    assert answer.tool_calls == [] and f"cannot filter by {what}" in answer.text


def test_a_range_of_deletions_is_one_approval_per_dashboard() -> None:
    decision = run("delete dashboards 11 to 13", "dashboard", role="admin")
    assert only_call(decision) == ("delete_dashboard", {"dashboard_id": 11})


def test_a_name_on_a_page_that_cannot_search_asks_for_the_id() -> None:
    decision = run("promote the sales dashboard to staging", "migration", role="editor")
    assert decision.tool_calls == []
    assert "can't look up a dashboard by name on this page" in decision.text

"""SCENARIOS rows 30, 31, 37 and 39 through the whole stack: the agent service running the
offline model, real storage (SQLite and PostgreSQL) and the bundled demo Superset, with each
approval decided through the service and Superset's state checked after it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from runtime import Runtime
from tests.agent.guardrails_support import confirm, dashboard, pending_id, turn
from tests.fakes.runs import of_type


@pytest.fixture(autouse=True, scope="module")
def _litellm_imported() -> Iterator[None]:
    """The first turn would import litellm (9 s quiet, up to 50 s on a loaded machine)
    inside the run's deadline; import it before any run starts."""
    import agent.offline.provider  # noqa: F401

    yield


def _calls(events: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    return [(e["tool"], e["args"]) for e in of_type(events, "tool_call")]


def _card(events: list[dict[str, Any]]) -> dict[str, Any]:
    (card,) = of_type(events, "confirm_required")
    assert events[-1]["status"] == "awaiting_confirmation"
    return card


def _answer(events: list[dict[str, Any]]) -> str:
    return of_type(events, "message")[-1]["content"]


async def test_row30_a_named_dashboard_is_found_then_renamed_after_approval(
        runtime: Runtime) -> None:
    events = await turn(runtime, 'rename the marketing dashboard to "Q4"', role="editor",
                        page="dashboard")
    assert _calls(events) == [("list_dashboards", {"search": "marketing"}),
                              ("update_dashboard", {"dashboard_id": 2, "title": "Q4"})]
    card = _card(events)
    assert dashboard(runtime, "ss-dev", 2)["dashboard_title"] == "Marketing Funnel"

    resumed = await confirm(runtime, card["confirmation_id"], role="editor")
    assert resumed[-1]["status"] == "completed"
    assert dashboard(runtime, "ss-dev", 2)["dashboard_title"] == "Q4"
    assert _answer(resumed).startswith("Done: dashboard #2")


async def test_row30_several_matches_are_asked_about_and_the_reply_picks_one(
        runtime: Runtime) -> None:
    events = await turn(runtime, 'rename the sales dashboard to "Q4"', role="editor",
                        page="dashboard", conv_id="conv-sales")
    assert _calls(events) == [("list_dashboards", {"search": "sales"})]
    assert events[-1]["status"] == "completed"
    assert "#3 'Sales Overview'" in _answer(events) and "#5 'Regional Sales'" in _answer(events)

    events = await turn(runtime, "the second one", role="editor", page="dashboard",
                        conv_id="conv-sales")
    card = _card(events)
    assert (card["tool"], card["args"]) == ("update_dashboard",
                                            {"dashboard_id": 5, "title": "Q4"})
    await confirm(runtime, card["confirmation_id"], role="editor", conv_id="conv-sales")
    assert dashboard(runtime, "ss-dev", 5)["dashboard_title"] == "Q4"
    assert dashboard(runtime, "ss-dev", 3)["dashboard_title"] == "Sales Overview"


async def test_row31_rename_then_publish_each_with_its_own_approval_in_order(
        runtime: Runtime) -> None:
    events = await turn(runtime, 'rename it to "Q4" and publish it', role="editor",
                        page="dashboard", object_id=3)
    first = _card(events)
    assert (first["tool"], first["args"]) == ("update_dashboard",
                                              {"dashboard_id": 3, "title": "Q4"})
    assert dashboard(runtime, "ss-dev", 3)["published"] is False

    after_rename = await confirm(runtime, first["confirmation_id"], role="editor")
    assert dashboard(runtime, "ss-dev", 3)["dashboard_title"] == "Q4"
    assert dashboard(runtime, "ss-dev", 3)["published"] is False  # not before its approval
    second = _card(after_rename)
    assert (second["tool"], second["args"]) == ("set_dashboard_published",
                                                {"dashboard_id": 3, "published": True})

    done = await confirm(runtime, pending_id(after_rename), role="editor")
    assert done[-1]["status"] == "completed"
    assert dashboard(runtime, "ss-dev", 3)["published"] is True
    assert "is now published" in _answer(done)


async def test_row31_denying_the_rename_publishes_nothing(runtime: Runtime) -> None:
    events = await turn(runtime, 'rename it to "Q4" and publish it', role="editor",
                        page="dashboard", object_id=3)
    denied = await confirm(runtime, pending_id(events), "deny", role="editor")
    assert denied[-1]["status"] == "completed" and of_type(denied, "confirm_required") == []
    assert dashboard(runtime, "ss-dev", 3)["dashboard_title"] == "Sales Overview"
    assert dashboard(runtime, "ss-dev", 3)["published"] is False


def _in_staging(runtime: Runtime, title: str) -> list[dict[str, Any]]:
    return [d for d in runtime.demo_superset.store.all("staging", "dashboard")
            if d["dashboard_title"] == title]


async def test_row37_compare_then_promote_only_because_they_differ(runtime: Runtime) -> None:
    ask = "compare dashboard 3 across ss-dev and staging and promote it if they differ"
    events = await turn(runtime, ask, role="editor", page="migration")
    pair = {"dashboard_id": 3, "source_env": "ss-dev", "target_env": "staging"}
    assert _calls(events) == [("compare_environments", pair), ("migrate_dashboard", pair)]
    card = _card(events)
    assert _in_staging(runtime, "Sales Overview") == []

    resumed = await confirm(runtime, card["confirmation_id"], role="editor")
    assert resumed[-1]["status"] == "completed"
    assert len(_in_staging(runtime, "Sales Overview")) == 1

    again = await turn(runtime, ask, role="editor", page="migration", conv_id="conv-again")
    assert _calls(again) == [("compare_environments", pair)]  # the same now: no promotion
    assert again[-1]["status"] == "completed" and "nothing to promote" in _answer(again)


async def test_row39_the_orders_dataset_is_resolved_then_its_usage_read(
        runtime: Runtime) -> None:
    events = await turn(runtime, "list charts that use the orders dataset", role="viewer",
                        page="dataset")
    assert _calls(events) == [("list_datasets", {"search": "orders"}),
                              ("get_dataset_usage", {"dataset_id": 2})]
    assert events[-1]["status"] == "completed"
    answer = _answer(events)
    assert answer.startswith("Dataset #2") and "Orders per day" in answer

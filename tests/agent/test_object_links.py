"""Links from answers to Superset objects (issue 11, item 5): built by the server from the
run's own results and the configured base URL, only for objects the answer names."""

from __future__ import annotations

import json

from sqlmodel import select

from agent.object_links import MAX_LINKS, FoundObject, link_objects, objects_in
from runtime import Runtime
from storage.models import Message
from tests.agent.test_passthrough import passthrough_runtime, rt, served, sign_in, turn  # noqa: F401
from tests.fakes.runs import of_type
from web.render import render_history, render_run
from web.text_policy import TextPolicy

BASE = {"ss-dev": "https://bi.example.com/"}


def test_results_name_their_objects_with_the_environment_they_say() -> None:
    listed = {"env": "prod", "count": 2, "dashboards": [
        {"id": 5, "title": "Sales"}, {"id": "6", "title": "bad id"}, {"title": "no id"}]}
    assert objects_in("list_dashboards", listed, "ss-dev") == [
        FoundObject("dashboard", 5, "Sales", "prod")]
    one = {"id": 3, "table_name": "orders", "charts": [{"id": 9, "name": "Revenue"}]}
    assert objects_in("get_dataset", one, "ss-dev") == [
        FoundObject("dataset", 3, "orders", "ss-dev"), FoundObject("chart", 9, "Revenue", "ss-dev")]
    assert objects_in("list_dashboards", "not a dict", None) == []


def test_only_named_objects_in_an_environment_with_a_base_url_get_links() -> None:
    found = [FoundObject("dashboard", 5, "Sales Overview", "ss-dev"),
             FoundObject("chart", 9, "Revenue", "ss-dev"),
             FoundObject("dataset", 3, "orders", "ss-dev"),
             FoundObject("dashboard", 7, "Not Mentioned", "ss-dev"),
             FoundObject("dashboard", 8, "Churn", "prod"),  # prod has no base URL here
             FoundObject("dashboard", 5, "Sales Overview", "ss-dev")]  # a duplicate
    answer = "The orders dataset feeds Revenue on **sales overview**; Churn is in prod."
    links = link_objects(answer, found, BASE)
    assert [(link["title"], link["url"]) for link in links] == [
        ("orders", "https://bi.example.com/explore/?datasource_type=table&datasource_id=3"),
        ("Revenue", "https://bi.example.com/explore/?slice_id=9"),
        ("Sales Overview", "https://bi.example.com/superset/dashboard/5/")]


def test_links_are_bounded_and_short_titles_never_match_by_chance() -> None:
    many = [FoundObject("chart", n, f"Chart number {n:03}", "ss-dev") for n in range(60)]
    text = " ".join(item.title for item in many)
    assert len(link_objects(text, many, BASE)) == MAX_LINKS
    assert link_objects("a QA team", [FoundObject("chart", 1, "QA", "ss-dev")], BASE) == []


def test_the_links_line_escapes_titles_and_survives_the_link_policy() -> None:
    policy = TextPolicy(BASE.values())
    links = [{"title": "Sales](javascript:alert(1))",
              "url": BASE["ss-dev"] + "superset/dashboard/5/"}]
    chat = render_run([{"type": "token", "text": "See Sales."},
                       {"type": "message", "content": "See Sales.", "links": links}], "hi", policy)
    html = chat[-1]["content"]
    assert 'href="https://bi.example.com/superset/dashboard/5/"' in html
    assert "javascript:" not in html.split("href=")[1].split(">")[0]


async def test_a_listing_answer_links_each_dashboard_and_keeps_them_after_reload(
        rt: Runtime) -> None:  # noqa: F811
    alpha = await sign_in(rt, "alpha")
    events = await turn(rt, alpha, "list the dashboards", "c-links")
    (message,) = of_type(events, "message")
    base = rt.settings.superset_environments[0].base_url.rstrip("/")
    assert message["links"], "a listing names every dashboard it shows"
    for link in message["links"]:
        assert link["url"] == f"{base}/superset/dashboard/{link['id']}/"
        assert link["title"] in message["content"]
    with rt.db.session() as session:
        stored = list(session.exec(select(Message).where(Message.conversation_id == "c-links")
                                   .order_by(Message.seq)))  # type: ignore[arg-type]
    stored = [row for row in stored if row.role == "assistant" and row.content]
    assert stored[-1].meta["links"] == message["links"]
    assert stored[-1].meta["run"]["duration_s"] >= 0 and "usage" in stored[-1].meta["run"]
    chat = render_history(stored, TextPolicy([base]))
    assert f'href="{base}/superset/dashboard/{message["links"][0]["id"]}/"' in chat[-2]["content"]
    assert "tokens" in chat[-1]["content"]  # the run's footnote follows the answer
    assert json.dumps(message["links"])  # plain data for programs (the done event's run)

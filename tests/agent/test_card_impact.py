"""The approval card says what a change does (issue 15, phase 4): before → after for every
update (read when the card is made) and the blast radius of deletes and migrations (the
charts, dashboards and datasets they touch). Real demo Superset, SQLite and PostgreSQL."""

from __future__ import annotations

from runtime import Runtime
from tests.agent.guardrails_support import dashboard, dataset
from tests.agent.undo_support import propose
from tests.fakes.openai_server import ScriptedOpenAIServer
from web.approval_card import confirmation_card


def _rows(card: dict) -> dict[str, tuple[int, str]]:
    return {row["kind"]: (row["count"], row["effect"]) for row in card["impact"]}


async def test_a_dashboard_delete_lists_what_stays(rt: Runtime, server: ScriptedOpenAIServer
                                                   ) -> None:
    card = await propose(rt, server, "delete_dashboard", dashboard_id=1)
    charts = len(dashboard(rt, "ss-dev", 1)["chart_ids"])  # type: ignore[index]
    rows = _rows(card)
    assert rows["dashboards"] == (1, "deleted")
    assert rows["charts"] == (charts, "kept, no longer on it")
    assert rows["datasets"][1] == "kept" and rows["datasets"][0] >= 1
    html = confirmation_card(card)
    assert "What it touches:" in html and f"{charts} charts</strong> — kept" in html


async def test_a_dataset_delete_lists_what_breaks(rt: Runtime, server: ScriptedOpenAIServer
                                                  ) -> None:
    card = await propose(rt, server, "delete_dataset", dataset_id=2)
    rows = _rows(card)
    assert rows["datasets"] == (1, "deleted")
    assert rows["charts"][1] == "stop working" and rows["charts"][0] >= 1
    assert rows["dashboards"][1] == "show broken charts"
    assert card["impact"][0]["names"] == ["orders"]


async def test_a_migration_lists_what_it_overwrites_and_creates(
    rt: Runtime, server: ScriptedOpenAIServer
) -> None:
    card = await propose(rt, server, "migrate_dashboard", dashboard_id=1,
                         source_env="ss-dev", target_env="staging")
    rows = _rows(card)
    assert rows["dashboards"] == (1, "overwritten in staging")
    assert all(effect.endswith("in staging") for _, effect in rows.values())
    new = await propose(rt, server, "migrate_dashboard", dashboard_id=13,
                        source_env="ss-dev", target_env="staging", conv_id="conv-2")
    assert _rows(new)["dashboards"] == (1, "created in staging")


async def test_updates_show_owners_and_columns_before_and_after(
    rt: Runtime, server: ScriptedOpenAIServer
) -> None:
    owners = sorted(dashboard(rt, "ss-dev", 1)["owners"])  # type: ignore[index]
    card = await propose(rt, server, "update_dashboard", dashboard_id=1, owners=[2])
    assert card["changes"] == [{"field": "owners", "before": owners, "after": [2]}]
    assert card["impact"] == []
    columns = len(dataset(rt, "ss-dev", 2)["columns"])  # type: ignore[index]
    card = await propose(rt, server, "refresh_dataset_columns", dataset_id=2,
                         conv_id="conv-3")
    assert card["changes"] == [{"field": "columns", "before": columns,
                                "after": "re-read from its table"}]

"""A held-out set of everyday requests for the offline model, one or more per SCENARIOS row.

Written before the intent table was rebuilt (issue 13) and never tuned against: the way
people write (indirect, casual, typos of tone rather than of spelling), at least three
per row of SCENARIOS.md 1-40. Each case names the tool and the arguments a good model
would pick for its first step, or `None` with a pattern the reply must match when the
right answer is to call nothing. `tests/agent/test_offline_heldout.py` keeps the routing
accuracy from falling; `python tests/agent/offline_measure.py [--code CHECKOUT]` prints it
for this checkout or another one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["CASES", "LISTED", "Case"]

# A listing already shown in the conversation (for "next page" and "that one").
LISTED = ("list_dashboards", {"page_size": 10},
          {"env": "ss-dev", "count": 13, "page": 0, "page_size": 10, "dashboards": [
              {"id": i, "title": f"Board {i}", "published": True} for i in range(1, 11)]})


@dataclass(frozen=True)
class Case:
    row: int
    page: str | None
    object_id: int | None
    role: str
    text: str
    tool: str | None  # None: the right reply calls nothing
    args: dict[str, Any] = field(default_factory=dict)  # must be among the call's arguments
    says: str = ""  # a regular expression the reply must match when `tool` is None
    after: tuple[str, dict[str, Any], Any] | None = None  # an earlier call and its result


_D, _S, _M = "dashboard", "dataset", "migration"
_SAME = {"dashboard_id": 3, "source_env": "staging", "target_env": "prod"}

CASES: list[Case] = [
    # 1 what can you do
    Case(1, None, None, "viewer", "hey, what are you able to help me with?", "show_capabilities"),
    Case(1, None, None, "viewer", "what sort of things can I ask you", "show_capabilities"),
    Case(1, _D, 3, "editor", "not sure where to start, what are my options here?",
         "show_capabilities"),
    Case(1, None, None, "admin", "how can you help me", "show_capabilities"),
    # 2 environments
    Case(2, None, None, "viewer", "what environments do we have", "list_environments"),
    Case(2, None, None, "viewer", "which superset instances can you talk to?",
         "list_environments"),
    Case(2, None, None, "viewer", "remind me of the envs again", "list_environments"),
    # 3 list dashboards
    Case(3, _D, 3, "viewer", "what dashboards do we have?", "list_dashboards"),
    Case(3, _D, None, "viewer", "can I see all the dashboards", "list_dashboards"),
    Case(3, _D, None, "viewer", "give me a list of dashboards please", "list_dashboards"),
    Case(3, _D, 3, "viewer", "show dashboards", "list_dashboards"),
    # 4 get dashboard
    Case(4, _D, 3, "viewer", "what's this dashboard about?", "get_dashboard", {"dashboard_id": 3}),
    Case(4, _D, 3, "viewer", "give me an overview of this one", "get_dashboard",
         {"dashboard_id": 3}),
    Case(4, _D, 3, "viewer", "who is the owner of this dashboard?", "get_dashboard",
         {"dashboard_id": 3}),
    Case(4, _D, 3, "viewer", "when was this last modified?", "get_dashboard",
         {"dashboard_id": 3}),
    # 5 charts on it
    Case(5, _D, 3, "viewer", "what charts are in here?", "get_dashboard_charts",
         {"dashboard_id": 3}),
    Case(5, _D, 3, "viewer", "how many charts does it have", "get_dashboard_charts",
         {"dashboard_id": 3}),
    Case(5, _D, 3, "viewer", "list the visualisations on this dashboard", "get_dashboard_charts",
         {"dashboard_id": 3}),
    # 6 datasets it uses
    Case(6, _D, 3, "viewer", "where does this dashboard get its data from?",
         "get_dashboard_datasets", {"dashboard_id": 3}),
    Case(6, _D, 3, "viewer", "which tables is this built on?", "get_dashboard_datasets",
         {"dashboard_id": 3}),
    Case(6, _D, 3, "viewer", "what data sources power it", "get_dashboard_datasets",
         {"dashboard_id": 3}),
    # 7 search
    Case(7, _D, None, "viewer", "are there any dashboards about sales?", "list_dashboards",
         {"search": "sales"}),
    Case(7, _D, None, "viewer", "look for sales dashboards", "list_dashboards",
         {"search": "sales"}),
    Case(7, _D, None, "viewer", "I need the dashboards with sales in the name", "list_dashboards",
         {"search": "sales"}),
    # 8 rename
    Case(8, _D, 3, "editor", "can you change its name to Revenue 2026", "update_dashboard",
         {"dashboard_id": 3, "title": "Revenue 2026"}),
    Case(8, _D, 3, "editor", "the title should be \"Revenue 2026\"", "update_dashboard",
         {"dashboard_id": 3, "title": "Revenue 2026"}),
    Case(8, _D, 3, "editor", "let's call this one 'Revenue 2026'", "update_dashboard",
         {"dashboard_id": 3, "title": "Revenue 2026"}),
    Case(8, _D, 3, "editor", "I'd like to retitle this dashboard as Revenue 2026",
         "update_dashboard", {"dashboard_id": 3, "title": "Revenue 2026"}),
    # 9 publish
    Case(9, _D, 3, "editor", "make this visible to everyone", "set_dashboard_published",
         {"dashboard_id": 3, "published": True}),
    Case(9, _D, 3, "editor", "ok let's make it live", "set_dashboard_published",
         {"dashboard_id": 3, "published": True}),
    Case(9, _D, 3, "editor", "can you publish this one for me", "set_dashboard_published",
         {"dashboard_id": 3, "published": True}),
    Case(9, _D, 3, "editor", "take it back to draft", "set_dashboard_published",
         {"dashboard_id": 3, "published": False}),
    # 10 delete (admin)
    Case(10, _D, 3, "admin", "I want it gone", "delete_dashboard", {"dashboard_id": 3}),
    Case(10, _D, 3, "admin", "we don't need this dashboard anymore, delete it",
         "delete_dashboard", {"dashboard_id": 3}),
    Case(10, _D, 3, "admin", "please remove this dashboard", "delete_dashboard",
         {"dashboard_id": 3}),
    Case(10, _D, 3, "admin", "trash this one", "delete_dashboard", {"dashboard_id": 3}),
    # 11 delete (viewer): refused by role
    Case(11, _D, 3, "viewer", "I want it gone", None, says=r"viewer.*does not allow"),
    Case(11, _D, 3, "viewer", "please remove this dashboard", None, says=r"does not allow"),
    Case(11, _D, 3, "viewer", "get rid of this dashboard", None, says=r"does not allow"),
    # 12 export
    Case(12, _D, 3, "viewer", "can I get a copy of this as a zip?", "export_dashboard",
         {"dashboard_id": 3}),
    Case(12, _D, 3, "viewer", "download this dashboard", "export_dashboard", {"dashboard_id": 3}),
    Case(12, _D, 3, "viewer", "back it up", "export_dashboard", {"dashboard_id": 3}),
    # 13 describe dataset
    Case(13, _S, 2, "viewer", "what's in this dataset?", "get_dataset", {"dataset_id": 2}),
    Case(13, _S, 2, "viewer", "what fields does this have", "get_dataset", {"dataset_id": 2}),
    Case(13, _S, 2, "viewer", "give me the details of this table", "get_dataset",
         {"dataset_id": 2}),
    # 14 usage
    Case(14, _S, 2, "viewer", "what would break if I changed this dataset?", "get_dataset_usage",
         {"dataset_id": 2}),
    Case(14, _S, 2, "viewer", "is anything using this?", "get_dataset_usage", {"dataset_id": 2}),
    Case(14, _S, 2, "viewer", "which dashboards rely on this data", "get_dataset_usage",
         {"dataset_id": 2}),
    # 15 preview
    Case(15, _S, 2, "viewer", "what does the data look like?", "preview_dataset",
         {"dataset_id": 2}),
    Case(15, _S, 2, "viewer", "can I see some example records", "preview_dataset",
         {"dataset_id": 2}),
    Case(15, _S, 2, "viewer", "show me the top 3 rows", "preview_dataset",
         {"dataset_id": 2, "limit": 3}),
    # 16 refresh columns
    Case(16, _S, 2, "editor", "the table got new columns, can you pick them up?",
         "refresh_dataset_columns", {"dataset_id": 2}),
    Case(16, _S, 2, "editor", "resync the columns please", "refresh_dataset_columns",
         {"dataset_id": 2}),
    Case(16, _S, 2, "editor", "reload the schema of this dataset", "refresh_dataset_columns",
         {"dataset_id": 2}),
    # 17 cache timeout
    Case(17, _S, 2, "editor", "cache this for ten minutes", "update_dataset",
         {"dataset_id": 2, "cache_timeout": 600}),
    Case(17, _S, 2, "editor", "set caching to 600 seconds", "update_dataset",
         {"dataset_id": 2, "cache_timeout": 600}),
    Case(17, _S, 2, "editor", "change the cache timeout to 10 min", "update_dataset",
         {"dataset_id": 2, "cache_timeout": 600}),
    # 18 list datasets with env
    Case(18, _S, None, "viewer", "what datasets are there in staging?", "list_datasets",
         {"env_id": "staging"}),
    Case(18, _S, None, "viewer", "staging datasets please", "list_datasets",
         {"env_id": "staging"}),
    Case(18, _S, None, "viewer", "show me the tables on the staging environment",
         "list_datasets", {"env_id": "staging"}),
    # 19 compare
    Case(19, _M, None, "viewer", "is dashboard 3 the same in staging and prod?",
         "compare_environments", _SAME),
    Case(19, _M, None, "viewer", "does dashboard 3 match between ss-dev and prod",
         "compare_environments", {"dashboard_id": 3, "source_env": "ss-dev",
                                  "target_env": "prod"}),
    Case(19, _M, None, "viewer", "check if dashboard 3 drifted between dev and production",
         "compare_environments", {"dashboard_id": 3, "source_env": "ss-dev",
                                  "target_env": "prod"}),
    # 20 plan
    Case(20, _M, None, "viewer", "before I promote dashboard 3 to staging, what would it do?",
         "plan_migration", {"dashboard_id": 3, "target_env": "staging"}),
    Case(20, _M, None, "viewer", "do a dry run of moving dashboard 3 to staging",
         "plan_migration", {"dashboard_id": 3, "target_env": "staging"}),
    Case(20, _M, None, "viewer", "what would be overwritten if dashboard 3 went to staging?",
         "plan_migration", {"dashboard_id": 3, "target_env": "staging"}),
    # 21 promote (editor)
    Case(21, _M, None, "editor", "ship dashboard 3 to staging", "migrate_dashboard",
         {"dashboard_id": 3, "source_env": "ss-dev", "target_env": "staging"}),
    Case(21, _M, None, "editor", "please move dashboard 3 from dev to staging",
         "migrate_dashboard", {"dashboard_id": 3, "source_env": "ss-dev",
                               "target_env": "staging"}),
    Case(21, _M, None, "editor", "can you get dashboard 3 into staging", "migrate_dashboard",
         {"dashboard_id": 3, "target_env": "staging"}),
    # 22 promote to prod (admin)
    Case(22, _M, None, "admin", "release dashboard 3 to production", "migrate_dashboard",
         {"dashboard_id": 3, "target_env": "prod"}),
    Case(22, _M, None, "admin", "dashboard 3 is ready, push it to prod", "migrate_dashboard",
         {"dashboard_id": 3, "target_env": "prod"}),
    Case(22, _M, None, "admin", "go ahead and deploy dashboard 3 to prod", "migrate_dashboard",
         {"dashboard_id": 3, "target_env": "prod"}),
    # 23 migration history
    Case(23, _M, None, "viewer", "what's been promoted recently?", "migration_history"),
    Case(23, _M, None, "viewer", "show me past migrations", "migration_history"),
    Case(23, _M, None, "viewer", "any deployments lately?", "migration_history"),
    # 24 list charts
    Case(24, None, None, "viewer", "what charts exist", "list_charts"),
    Case(24, None, None, "viewer", "give me every chart", "list_charts"),
    Case(24, None, None, "viewer", "list the charts please", "list_charts"),
    # 25 list datasets on a dashboard page: not offered here
    Case(25, _D, 3, "viewer", "show me all the datasets", None, says=r"dataset page"),
    Case(25, _D, 3, "viewer", "what datasets exist?", None, says=r"dataset page"),
    Case(25, _D, 3, "viewer", "list every dataset in ss-dev", None, says=r"dataset page"),
    # 26 empty
    Case(26, None, None, "viewer", "", None, says=r"Please"),
    Case(26, _D, 3, "viewer", "    ", None, says=r"Please"),
    Case(26, None, None, "viewer", "\n", None, says=r"Please"),
    # 27 a very long message
    Case(27, None, None, "viewer", "list the dashboards " + "please " * 3000, "list_dashboards"),
    Case(27, None, None, "viewer", "z" * 20000, None, says=r"first 4,000"),
    Case(27, _D, 3, "viewer", "tell me about this dashboard. " * 700, "get_dashboard",
         {"dashboard_id": 3}),
    # 28 next page after a listing
    Case(28, _D, None, "viewer", "more please", "list_dashboards", {"page": 1, "page_size": 10},
         after=LISTED),
    Case(28, _D, None, "viewer", "show me the rest", "list_dashboards", {"page": 1},
         after=LISTED),
    Case(28, _D, None, "viewer", "and the next ones?", "list_dashboards", {"page": 1},
         after=LISTED),
    # 29 published filter
    Case(29, _D, None, "viewer", "which ones are live?", "list_dashboards", {"published": True}),
    Case(29, _D, None, "viewer", "show me only the published dashboards", "list_dashboards",
         {"published": True}),
    Case(29, _D, None, "viewer", "which dashboards are still drafts?", "list_dashboards",
         {"published": False}),
    # 30 rename by name: a search first
    Case(30, _D, None, "editor", "rename the sales dashboard to \"Q4\"", "list_dashboards",
         {"search": "sales"}),
    Case(30, _D, None, "editor", "change the title of the marketing dashboard to Q4",
         "list_dashboards", {"search": "marketing"}),
    Case(30, _D, None, "editor", "can you call the finance dashboard 'Q4' instead",
         "list_dashboards", {"search": "finance"}),
    # 31 compound: rename then publish
    Case(31, _D, 3, "editor", "rename it to \"Q4\" and publish it", "update_dashboard",
         {"dashboard_id": 3, "title": "Q4"}),
    Case(31, _D, 3, "editor", "call it 'Q4' and then make it public", "update_dashboard",
         {"dashboard_id": 3, "title": "Q4"}),
    Case(31, _D, 3, "editor", "change the title to Q4, then publish", "update_dashboard",
         {"dashboard_id": 3, "title": "Q4"}),
    # 32 create a dashboard: no tool
    Case(32, _D, None, "viewer", "I need a new dashboard for marketing", None,
         says=r"can't create a dashboard"),
    Case(32, _D, None, "admin", "can you set up a dashboard called Marketing?", None,
         says=r"can't create a dashboard"),
    Case(32, _D, None, "editor", "build me a marketing dashboard", None,
         says=r"can't create a dashboard"),
    # 33 delete a chart: no tool
    Case(33, None, None, "admin", "remove chart 9", None, says=r"can't delete a chart"),
    Case(33, None, None, "admin", "get rid of chart #9 please", None,
         says=r"can't delete a chart"),
    Case(33, None, None, "admin", "I want chart 9 deleted", None, says=r"can't delete a chart"),
    # 34 a range of dashboards
    Case(34, _D, None, "viewer", "show me dashboards 11 to 13", "get_dashboard",
         {"dashboard_id": 11}),
    Case(34, _D, None, "viewer", "details for dashboards 11-13", "get_dashboard",
         {"dashboard_id": 11}),
    Case(34, _D, None, "viewer", "tell me about dashboards 11 through 13", "get_dashboard",
         {"dashboard_id": 11}),
    # 35 cache for half an hour
    Case(35, _S, 2, "editor", "cache it for half an hour", "update_dataset",
         {"dataset_id": 2, "cache_timeout": 1800}),
    Case(35, _S, 2, "editor", "keep results cached for 30 minutes", "update_dataset",
         {"dataset_id": 2, "cache_timeout": 1800}),
    Case(35, _S, 2, "editor", "set the cache to 30 mins", "update_dataset",
         {"dataset_id": 2, "cache_timeout": 1800}),
    # 36 difference staging vs prod
    Case(36, _M, None, "viewer", "how is dashboard 3 different in staging compared to prod?",
         "compare_environments", _SAME),
    Case(36, _M, None, "viewer", "what differs for dashboard 3 between staging and prod",
         "compare_environments", _SAME),
    Case(36, _M, None, "viewer", "staging vs prod for dashboard 3, what's changed?",
         "compare_environments", _SAME),
    # 37 compare, then promote if they differ
    Case(37, _M, None, "editor", "check whether dashboard 3 differs between ss-dev and prod "
         "and if so promote it", "compare_environments",
         {"dashboard_id": 3, "source_env": "ss-dev", "target_env": "prod"}),
    Case(37, _M, None, "admin", "compare dashboard 3 in ss-dev and prod; if they're not the "
         "same, push it to prod", "compare_environments",
         {"dashboard_id": 3, "source_env": "ss-dev", "target_env": "prod"}),
    Case(37, _M, None, "editor", "if dashboard 3 is out of sync between ss-dev and staging, "
         "migrate it", "compare_environments",
         {"dashboard_id": 3, "source_env": "ss-dev", "target_env": "staging"}),
    # 38 what changed recently
    Case(38, _D, 3, "viewer", "has anyone touched this dashboard lately?", "recent_changes",
         {"object_id": 3}),
    Case(38, _D, 3, "viewer", "what's been done to this dashboard recently", "recent_changes",
         {"object_id": 3}),
    Case(38, _D, 3, "viewer", "show me the change history of this one", "recent_changes",
         {"object_id": 3}),
    # 39 charts using the orders dataset: resolve the name first
    Case(39, _S, None, "viewer", "which charts are built on the orders dataset?",
         "list_datasets", {"search": "orders"}),
    Case(39, _S, None, "viewer", "what uses the orders dataset", "list_datasets",
         {"search": "orders"}),
    Case(39, _S, None, "viewer", "where is the orders table used?", "list_datasets",
         {"search": "orders"}),
    # 40 openers and closers
    Case(40, None, None, "viewer", "hey", None, says=r"^(?!I'm not sure)"),
    Case(40, _D, 3, "viewer", "cheers, that's it", None, says=r"^(?!I'm not sure)"),
    Case(40, None, None, "viewer", "morning :)", None, says=r"^(?!I'm not sure)"),
    Case(40, _D, 3, "editor", "perfect, thanks for the help!", None, says=r"^(?!I'm not sure)"),
    Case(40, None, None, "viewer", "that's all for now, bye", None, says=r"^(?!I'm not sure)"),
]

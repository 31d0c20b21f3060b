"""Bundle reading on a real Superset 6.1 export, the import plan, and the object diff."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.errors import ToolFailure
from agent.superset.bundle import read_bundle
from agent.superset.compare import compare_bundles, diff_objects, import_plan

REFERENCE = Path(__file__).resolve().parent.parent / "superset_demo" / (
    "superset-6.1.0-dashboard-export-example.zip")
DASHBOARD = "7a89b066-44bc-4889-b32a-e735e08e1ba7"
DATASET = "80b0ac96-9b2f-42f8-9560-d426f7a623ae"
DATABASE = "9ab7c7e9-b8ae-4501-9d61-0e426d911f0a"


@pytest.fixture
def bundle():
    if not REFERENCE.exists():
        pytest.skip("reference export not available")
    return read_bundle(REFERENCE.read_bytes())


def test_reads_a_real_export(bundle):
    assert bundle.counts() == {"dashboards": 1, "charts": 2, "datasets": 1, "databases": 1}
    assert bundle.metadata["type"] == "Dashboard"
    dash = bundle.of_kind("dashboard")[0]
    assert (dash.uuid, dash.name) == (DASHBOARD, "Sales Overview (edited)")
    assert {c.config["dataset_uuid"] for c in bundle.of_kind("chart")} == {DATASET}
    assert bundle.of_kind("dataset")[0].summary()["database_uuid"] == DATABASE
    assert "metadata.yaml" in bundle.files  # the export's root folder is stripped
    assert not any(f.startswith("dashboard_export_") for f in bundle.files)


def test_garbage_is_not_a_bundle():
    with pytest.raises(ToolFailure, match="not a valid ZIP"):
        read_bundle(b"<html>login</html>")


def test_plan_predicts_create_overwrite_and_reuse(bundle):
    empty = {"dashboard": {}, "chart": {}, "dataset": {}, "database": {}}
    plan = import_plan(bundle, empty)
    assert plan["counts"] == {"create": 5, "overwrite": 0, "reuse": 0}
    existing = {"dashboard": {DASHBOARD: {"id": 7}}, "chart": {}, "dataset": {DATASET: {"id": 3}},
                "database": {DATABASE: {"id": 1}}}
    plan = import_plan(bundle, existing)
    assert plan["overwrite"] == [{"kind": "dashboard", "uuid": DASHBOARD,
                                  "name": "Sales Overview (edited)", "target_id": 7}]
    assert {o["kind"] for o in plan["reuse"]} == {"dataset", "database"}
    assert {o["kind"] for o in plan["create"]} == {"chart"}


def test_masked_database_password_is_flagged(bundle):
    db = bundle.of_kind("database")[0]
    db.config["sqlalchemy_uri"] = "postgresql://u:XXXXXXXXXX@h/db"
    plan = import_plan(bundle, {"dashboard": {}, "chart": {}, "dataset": {}, "database": {}})
    assert any("password" in w for w in plan["warnings"])


def test_diff_ignores_local_ids_layout_keys_and_empty_values(bundle):
    dash = bundle.of_kind("dashboard")[0].config
    twin = {**dash, "metadata": {**dash["metadata"], "native_filter_configuration": []},
            "position": {("CHART-NEW" + k[-3:] if k.startswith("CHART-") else k):
                         ({**v, "id": "CHART-NEW", "meta": {**v["meta"], "chartId": 99}}
                          if k.startswith("CHART-") else v)
                         for k, v in dash["position"].items()}}
    assert diff_objects(dash, twin) == []
    changed = {**twin, "dashboard_title": "Other", "published": False}
    assert {d["field"] for d in diff_objects(dash, changed)} == {"dashboard_title",
                                                                  "published"}


def test_compare_marks_missing_same_and_different(bundle):
    index = {"dashboard": {DASHBOARD: {"id": 1, "dashboard_title": "Sales Overview (edited)"}},
             "chart": {}, "dataset": {DATASET: {"id": 2, "table_name": "sales_v2"}},
             "database": {DATABASE: {"id": 3, "database_name": "sales"}}}
    result = compare_bundles(bundle, None, index)
    status = {o["kind"]: o["status"] for o in result["objects"]}
    assert status == {"dashboard": "same", "chart": "missing", "dataset": "different",
                      "database": "same"}
    assert result["counts"] == {"missing": 2, "different": 1, "same": 2}

"""Kept export bundles: owner only, bounded by count, bytes and age (issue 11, item 7)."""

from __future__ import annotations

import time

from agent.exports import ExportStore


def test_only_the_exporter_gets_the_bundle() -> None:
    store = ExportStore()
    export_id = store.keep(owner_id="alice", env="ss-dev", dashboard_id=3, data=b"PK..")
    assert export_id is not None
    kept = store.get(export_id, "alice")
    assert kept is not None and kept.data == b"PK.." and kept.filename == "dashboard-3-ss-dev.zip"
    assert store.get(export_id, "bob") is None
    assert store.get("0" * 32, "alice") is None


def test_bounds_by_count_bytes_and_age() -> None:
    store = ExportStore(max_items=2, max_bytes=10, ttl_s=60)
    first = store.keep(owner_id="a", env="e", dashboard_id=1, data=b"1234")
    second = store.keep(owner_id="a", env="e", dashboard_id=2, data=b"1234")
    third = store.keep(owner_id="a", env="e", dashboard_id=3, data=b"1234")
    assert store.get(first, "a") is None  # the oldest went
    assert store.get(second, "a") and store.get(third, "a")
    assert store.keep(owner_id="a", env="e", dashboard_id=4, data=b"x" * 11) is None
    aged = ExportStore(ttl_s=0.01)
    old = aged.keep(owner_id="a", env="e", dashboard_id=1, data=b"1")
    time.sleep(0.02)
    assert aged.get(old, "a") is None


def test_a_filename_never_carries_a_path() -> None:
    store = ExportStore()
    export_id = store.keep(owner_id="a", env="../../etc", dashboard_id=1, data=b"1")
    assert "/" not in store.get(export_id, "a").filename

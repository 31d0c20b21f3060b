"""Deterministic demo rows for dataset previews (`POST /chart/data`), derived from columns.

Rows are generated, not stored: the same dataset always yields the same rows, so previews
are stable across restarts and resets without bloating the demo database.
"""

from __future__ import annotations

import random
from datetime import date, datetime, timedelta
from typing import Any

__all__ = ["demo_rows"]

_VOCAB = {
    "region": ["EMEA", "AMER", "APAC", "LATAM"],
    "product": ["Widget", "Gadget", "Gizmo", "Doohickey"],
    "channel": ["web", "store", "partner", "email"],
    "status": ["shipped", "pending", "cancelled", "returned"],
    "country": ["DE", "US", "FR", "JP", "BR", "IN"],
    "segment": ["SMB", "Mid-market", "Enterprise"],
    "device": ["desktop", "mobile", "tablet"],
    "priority": ["low", "normal", "high", "urgent"],
    "team": ["Tier 1", "Tier 2", "Billing"],
    "warehouse": ["Hamburg", "Reno", "Osaka"],
    "department": ["Engineering", "Sales", "Finance", "Support"],
    "location": ["Berlin", "Austin", "Singapore"],
    "level": ["L1", "L2", "L3", "L4"],
    "carrier": ["DHL", "UPS", "FedEx"],
    "account": ["Revenue", "COGS", "Payroll", "Marketing"],
    "cost_center": ["CC-100", "CC-200", "CC-300"],
    "feature": ["dashboards", "alerts", "sql_lab", "reports"],
    "plan": ["free", "team", "enterprise"],
}
_EPOCH = datetime(2026, 1, 1, 8, 0, 0)


def _value(rng: random.Random, name: str, col_type: str, index: int) -> Any:
    if name in _VOCAB:
        return rng.choice(_VOCAB[name])
    if col_type == "INTEGER":
        return index + 1 if name.endswith("id") else rng.randint(0, 500)
    if col_type == "NUMERIC":
        return round(rng.uniform(5, 2500), 2)
    if col_type == "BOOLEAN":
        return rng.random() < 0.2
    if col_type == "TIMESTAMP":
        return (_EPOCH + timedelta(hours=7 * index)).isoformat()
    if col_type == "DATE":
        return (date(2026, 1, 1) + timedelta(days=index)).isoformat()
    return f"{name}-{rng.randint(1000, 9999)}"


def demo_rows(dataset: dict[str, Any], limit: int,
              columns: list[str] | None = None) -> list[dict[str, Any]]:
    """The first `limit` rows of a dataset's table, optionally only some columns."""
    rng = random.Random(f"{dataset['uuid']}:{dataset['table_name']}")
    wanted = [c for c in dataset["columns"] if not columns or c["column_name"] in columns]
    rows = []
    for index in range(max(0, min(limit, 1000))):
        row = {}
        for col in dataset["columns"]:
            value = _value(rng, col["column_name"], str(col.get("type") or ""), index)
            if col in wanted:
                row[col["column_name"]] = value
        rows.append(row)
    return rows

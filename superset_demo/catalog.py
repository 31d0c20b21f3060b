"""The demo world: users, databases, datasets, charts and dashboards every environment draws from.

Objects have the same id and uuid in every environment that has them (uuids are uuid5 of a
stable key), so migration by uuid and "dashboard 3" mean the same thing everywhere. Which
environment has what, and in which version, is decided in `seed.py`.
"""

from __future__ import annotations

import uuid

__all__ = [
    "CHARTS",
    "DASHBOARDS",
    "DATABASES",
    "DATASETS",
    "USERS",
    "stable_uuid",
]

_NAMESPACE = uuid.UUID("5f1d7c1e-3b0a-4c51-9d35-2c8e6f0a7b11")


def stable_uuid(kind: str, key: str | int) -> str:
    """The same uuid for the same object in every environment and on every machine."""
    return str(uuid.uuid5(_NAMESPACE, f"{kind}:{key}"))


# id, username, first, last, role, password
USERS: list[tuple[int, str, str, str, str, str]] = [
    (1, "admin", "Ada", "Admin", "Admin", "admin"),
    (2, "alpha", "Alan", "Alpha", "Alpha", "alpha"),
    (3, "gamma", "Grace", "Gamma", "Gamma", "gamma"),
    (4, "alice", "Alice", "Analyst", "Alpha", "alice"),
    (5, "bob", "Bob", "Builder", "Alpha", "bob"),
]

# id, name, backend, sqlalchemy_uri (password masked as Superset returns it)
DATABASES: list[tuple[int, str, str, str]] = [
    (1, "examples", "postgresql", "postgresql://examples:XXXXXXXXXX@examples-db:5432/examples"),
    (2, "analytics_warehouse", "postgresql",
     "postgresql://analytics:XXXXXXXXXX@warehouse:5432/analytics"),
]

# column spec: "name:TYPE" with a trailing "*" marking the temporal column
DATASETS: list[dict[str, object]] = [
    {"id": 1, "table": "sales", "db": 1, "desc": "Sales fact table, one row per sale",
     "cols": "id:INTEGER sold_at:TIMESTAMP* product:VARCHAR region:VARCHAR amount:NUMERIC"},
    {"id": 2, "table": "orders", "db": 1, "desc": "Customer orders with status and totals",
     "cols": "order_id:INTEGER ordered_at:TIMESTAMP* customer_id:INTEGER status:VARCHAR "
             "channel:VARCHAR total:NUMERIC"},
    {"id": 3, "table": "customers", "db": 1, "desc": "Customer master data",
     "cols": "customer_id:INTEGER signed_up_at:TIMESTAMP* country:VARCHAR segment:VARCHAR "
             "lifetime_value:NUMERIC"},
    {"id": 4, "table": "marketing_campaigns", "db": 2, "desc": "Campaign spend and conversions",
     "cols": "campaign_id:INTEGER started_at:TIMESTAMP* channel:VARCHAR spend:NUMERIC "
             "clicks:INTEGER conversions:INTEGER"},
    {"id": 5, "table": "web_sessions", "db": 2, "desc": "Website sessions from the clickstream",
     "cols": "session_id:VARCHAR started_at:TIMESTAMP* country:VARCHAR device:VARCHAR "
             "pages:INTEGER bounced:BOOLEAN"},
    {"id": 6, "table": "support_tickets", "db": 2, "desc": "Support desk tickets",
     "cols": "ticket_id:INTEGER opened_at:TIMESTAMP* priority:VARCHAR team:VARCHAR "
             "status:VARCHAR resolution_hours:NUMERIC"},
    {"id": 7, "table": "inventory", "db": 1, "desc": "Daily stock levels per warehouse",
     "cols": "snapshot_date:DATE* warehouse:VARCHAR product:VARCHAR on_hand:INTEGER "
             "reorder_point:INTEGER"},
    {"id": 8, "table": "employees", "db": 2, "desc": "HR headcount snapshot",
     "cols": "employee_id:INTEGER hired_at:DATE* department:VARCHAR location:VARCHAR "
             "level:VARCHAR"},
    {"id": 9, "table": "shipments", "db": 1, "desc": "Outbound shipments and delivery times",
     "cols": "shipment_id:INTEGER shipped_at:TIMESTAMP* carrier:VARCHAR region:VARCHAR "
             "delivery_days:NUMERIC late:BOOLEAN"},
    {"id": 10, "table": "finance_ledger", "db": 2, "desc": "General ledger postings",
     "cols": "entry_id:INTEGER posted_at:DATE* account:VARCHAR cost_center:VARCHAR "
             "amount:NUMERIC"},
    {"id": 11, "table": "product_events", "db": 2, "desc": "Product analytics events (beta)",
     "cols": "event_id:VARCHAR happened_at:TIMESTAMP* feature:VARCHAR user_id:INTEGER "
             "plan:VARCHAR"},
]

# id, slice_name, viz_type, dataset id, groupby column (None for single-number charts)
CHARTS: list[tuple[int, str, str, int, str | None]] = [
    (1, "Revenue this quarter", "big_number_total", 1, None),
    (2, "Orders per day", "echarts_timeseries_line", 2, None),
    (3, "Active customers", "big_number_total", 3, None),
    (4, "Ticket backlog", "big_number_total", 6, None),
    (5, "Campaign spend by channel", "echarts_timeseries_bar", 4, "channel"),
    (6, "Clicks to conversions", "funnel", 4, "channel"),
    (7, "Cost per conversion", "table", 4, "channel"),
    (8, "Sessions by device", "pie", 5, "device"),
    (9, "Sales count", "big_number_total", 1, None),
    (10, "Sales by region", "table", 1, "region"),
    (11, "Sales by product", "echarts_timeseries_bar", 1, "product"),
    (12, "Daily sales trend", "echarts_timeseries_line", 1, None),
    (13, "Customers by segment", "pie", 3, "segment"),
    (14, "Churned customers", "big_number_total", 3, None),
    (15, "Lifetime value by country", "table", 3, "country"),
    (16, "Repeat order rate", "echarts_timeseries_line", 2, None),
    (17, "Sales by region map", "country_map", 1, "region"),
    (18, "Regional revenue share", "pie", 1, "region"),
    (19, "Orders by channel", "echarts_timeseries_bar", 2, "channel"),
    (20, "Top regions", "table", 9, "region"),
    (21, "Sessions per day", "echarts_timeseries_line", 5, None),
    (22, "Bounce rate", "big_number_total", 5, None),
    (23, "Sessions by country", "world_map", 5, "country"),
    (24, "Pages per session", "histogram_v2", 5, None),
    (25, "Open tickets by priority", "echarts_timeseries_bar", 6, "priority"),
    (26, "Resolution time", "box_plot", 6, "team"),
    (27, "Tickets by team", "table", 6, "team"),
    (28, "SLA breaches", "big_number_total", 6, None),
    (29, "Stock on hand", "table", 7, "warehouse"),
    (30, "Below reorder point", "big_number_total", 7, None),
    (31, "Stock trend", "echarts_timeseries_line", 7, None),
    (32, "Stock by product", "echarts_timeseries_bar", 7, "product"),
    (33, "Headcount", "big_number_total", 8, None),
    (34, "Headcount by department", "echarts_timeseries_bar", 8, "department"),
    (35, "Hires per month", "echarts_timeseries_line", 8, None),
    (36, "Employees by location", "pie", 8, "location"),
    (37, "Shipments per day", "echarts_timeseries_line", 9, None),
    (38, "Late deliveries", "big_number_total", 9, None),
    (39, "Delivery days by carrier", "box_plot", 9, "carrier"),
    (40, "Shipments by region", "table", 9, "region"),
    (41, "Revenue vs cost", "echarts_timeseries_line", 10, None),
    (42, "Spend by cost center", "echarts_timeseries_bar", 10, "cost_center"),
    (43, "Ledger by account", "table", 10, "account"),
    (44, "Net income", "big_number_total", 10, None),
    (45, "Orders per customer", "histogram_v2", 2, None),
    (46, "Order status mix", "pie", 2, "status"),
    (47, "Average order value", "big_number_total", 2, None),
    (48, "Orders by status", "table", 2, "status"),
    # Only in ss-dev: work in progress on dashboard 3 and the experimental dashboard 13.
    (49, "Sales margin by product", "table", 1, "product"),
    (50, "Sales forecast", "echarts_timeseries_line", 1, None),
    (51, "Feature adoption", "echarts_timeseries_bar", 11, "feature"),
    (52, "Events by plan", "pie", 11, "plan"),
]

# id, title, slug, owners, chart ids (as in ss-dev)
DASHBOARDS: list[tuple[int, str, str, list[int], list[int]]] = [
    (1, "Executive Summary", "executive-summary", [1], [1, 2, 3, 4]),
    (2, "Marketing Funnel", "marketing-funnel", [4], [5, 6, 7, 8]),
    (3, "Sales Overview", "sales-overview", [2, 4], [9, 10, 11, 12, 49, 50]),
    (4, "Customer Retention", "customer-retention", [4], [13, 14, 15, 16]),
    (5, "Regional Sales", "regional-sales", [2], [17, 18, 19, 20]),
    (6, "Web Traffic", "web-traffic", [5], [21, 22, 23, 24]),
    (7, "Support Operations", "support-operations", [5], [25, 26, 27, 28]),
    (8, "Inventory Health", "inventory-health", [2], [29, 30, 31, 32]),
    (9, "HR Headcount", "hr-headcount", [1], [33, 34, 35, 36]),
    (10, "Logistics and Delivery", "logistics-delivery", [5], [37, 38, 39, 40]),
    (11, "Finance P&L", "finance-pnl", [1, 4], [41, 42, 43, 44]),
    (12, "Order Analytics", "order-analytics", [4], [45, 46, 47, 48]),
    (13, "Experimental Cohorts", "experimental-cohorts", [2], [51, 52]),
]

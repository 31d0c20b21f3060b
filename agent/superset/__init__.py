"""Access to Superset: the async REST client, auth, Rison queries, bundles, per-env clients."""

from agent.superset.auth import BearerAuth, ServiceAuth
from agent.superset.bundle import Bundle, BundleObject, read_bundle
from agent.superset.client import SupersetClient
from agent.superset.clients import SupersetClients
from agent.superset.rison import Filter, list_query

__all__ = [
    "BearerAuth",
    "Bundle",
    "BundleObject",
    "Filter",
    "ServiceAuth",
    "SupersetClient",
    "SupersetClients",
    "list_query",
    "read_bundle",
]

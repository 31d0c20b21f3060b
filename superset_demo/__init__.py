"""A bundled Superset-compatible REST server with seeded demo environments (SPEC §8)."""

from superset_demo.faults import FaultSpec
from superset_demo.server import DEMO_HOST, DemoSuperset

__all__ = ["DEMO_HOST", "DemoSuperset", "FaultSpec"]

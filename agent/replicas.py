"""Replica identity and recovery timings, shared by main runs (`agent.run_leases`) and side
questions (`side_questions.recovery`): one process's instance id is `<replica>|<pid>.<random>`,
and both kinds of work go stale after the same proportions of one setting.
"""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass

__all__ = ["MAX_SWEEP_INTERVAL_S", "REPLICA_SEPARATOR", "RecoveryTimings",
           "default_replica_name", "new_instance_id"]

MAX_SWEEP_INTERVAL_S = 15.0


REPLICA_SEPARATOR = "|"


def default_replica_name(port: int) -> str:
    return f"{socket.gethostname()[:48]}:{port}"


def new_instance_id(replica: str | None = None) -> str:
    """`<replica>|<pid>.<random>`: the replica part is stable across restarts of the same
    replica, the rest is unique per process start."""
    replica = replica or default_replica_name(0)
    return f"{replica}{REPLICA_SEPARATOR}{os.getpid()}.{uuid.uuid4().hex[:12]}"


@dataclass(frozen=True)
class RecoveryTimings:
    """Derived from one setting so they stay in proportion: several heartbeats fit in the
    stale window (a slow write or a busy loop does not end a live answer), and a sweep
    runs at least twice per window."""

    stale_after_s: float

    @property
    def heartbeat_s(self) -> float:
        return self.stale_after_s / 4

    @property
    def sweep_s(self) -> float:
        return min(self.stale_after_s / 2, MAX_SWEEP_INTERVAL_S)

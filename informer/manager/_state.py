"""The lifecycle of a ``Manager``."""

from __future__ import annotations

import enum

__all__ = ["ManagerState"]


class ManagerState(enum.Enum):
    """Where a ``Manager`` stands. A manager runs once (build a new one to run again)."""

    NEW = "new"
    STARTING = "starting"  # serving probes, informers syncing
    RUNNING = "running"  # informers synced; controllers running (or campaigning for the Lease)
    STOPPING = "stopping"  # the graceful stop (see the module docstring)
    STOPPED = "stopped"

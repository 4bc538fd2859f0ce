"""volumes controller (work in progress)."""

from __future__ import annotations

from setpoint.runtime import Manager
from setpoint.workloads.settings import WorkloadSettings


def install(manager: Manager, settings: WorkloadSettings) -> None:
    """Add nothing yet."""

"""The embedded cluster's scheduler: kube-scheduler's default profile over the HTTP API.

``install(manager, settings)`` adds it to a workloads manager. The parts: resource
arithmetic (:mod:`.resources`), the scheduler cache with assumed pods (:mod:`.cache`), the
filters (:mod:`.predicates`, :mod:`.affinity`), scoring (:mod:`.scoring`), the decision and
its explanation (:mod:`.algorithm`, :mod:`.messages`), requeueing on cluster events
(:mod:`.queue`) and the controller itself (:mod:`.scheduler`).
"""

from __future__ import annotations

from setpoint.runtime import Manager
from setpoint.workloads.scheduler.algorithm import Decision, schedule
from setpoint.workloads.scheduler.scheduler import Scheduler
from setpoint.workloads.settings import WorkloadSettings

__all__ = ["Decision", "Scheduler", "install", "schedule"]


def install(manager: Manager, settings: WorkloadSettings) -> Scheduler:
    """Add the default scheduler to ``manager``; returns it (tests read its cache)."""
    scheduler = Scheduler(manager)
    scheduler.install(manager)
    return scheduler

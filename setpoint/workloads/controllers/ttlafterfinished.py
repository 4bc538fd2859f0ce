"""The TTL-after-finished controller: delete a finished Job ``ttlSecondsAfterFinished``
after it finished.

A port of ``pkg/controller/ttlafterfinished`` (``processJob``, ``processTTL``,
``jobFinishTime``): a Job with the field whose ``Complete`` or ``Failed`` condition is True
expires that many seconds after the condition's ``lastTransitionTime``; until then it is
looked at again when it expires; once expired it is read afresh (the TTL may have changed)
and deleted with foreground propagation and its uid as precondition, so its pods go first.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from setpoint.client import ConflictError, Kind, NotFoundError
from setpoint.runtime import Controller, Manager, Request, Result
from setpoint.runtime._objects import meta, object_key
from setpoint.workloads.settings import WorkloadSettings

JOB = Kind("batch/v1", "Job")


def seconds_left(job: Mapping[str, Any], now: dt.datetime) -> float | None:
    """``processTTL``'s ``timeLeft``: seconds until the Job expires (<= 0: expired), or
    None when it needs no clean-up (no TTL, not finished, being deleted)."""
    ttl = (job.get("spec") or {}).get("ttlSecondsAfterFinished")
    if ttl is None or meta(job).get("deletionTimestamp"):
        return None
    for condition in (job.get("status") or {}).get("conditions") or []:
        if condition.get("type") in ("Complete", "Failed") and condition.get("status") == "True":
            finished = condition.get("lastTransitionTime")
            if not finished:
                return None  # Go: "unable to find the time when the Job finished"
            at = dt.datetime.fromisoformat(str(finished).replace("Z", "+00:00"))
            return (at + dt.timedelta(seconds=int(ttl)) - now).total_seconds()
    return None


class TTLAfterFinishedReconciler:
    """Processes one Job per request (``processJob``)."""

    def __init__(self, manager: Manager) -> None:
        self.manager = manager

    async def reconcile(self, request: Request) -> Result:
        cached = self.manager.cache.store_for(JOB).get(
            object_key(request.namespace, request.name))
        if cached is None:
            return Result()
        left = seconds_left(cached, dt.datetime.now(dt.UTC))
        if left is None:
            return Result()
        if left > 0:
            return Result(requeue_after=left)
        try:
            fresh = await self.manager.client.get(JOB, request.name, namespace=request.namespace)
        except NotFoundError:
            return Result()
        left = seconds_left(fresh, dt.datetime.now(dt.UTC))
        if left is None:
            return Result()
        if left > 0:
            return Result(requeue_after=left)
        try:
            await self.manager.client.delete(JOB, request.name, namespace=request.namespace,
                                             propagation_policy="Foreground",
                                             uid=str(meta(fresh).get("uid")))
        except (NotFoundError, ConflictError):
            return Result()  # gone, or replaced by a Job the next event brings
        return Result()


def install(manager: Manager, settings: WorkloadSettings) -> None:
    """Add the TTL-after-finished controller."""
    manager.add(Controller.for_(JOB, name="ttl-after-finished")
                .reconciler(TTLAfterFinishedReconciler(manager)))

"""What the workloads benchmark watches for: Deployments that have converged, and a census
of the pods (by template version, terminating, unschedulable) with its peaks."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from bench.workload_objects import REPLICAS, version_of

Obj = dict[str, Any]


def available(deployment: Obj) -> bool:
    """All replicas available, as the Deployment's status reports (the Ready phase's end)."""
    status = deployment.get("status") or {}
    return status.get("availableReplicas") == REPLICAS


def rolled_out(generation: int) -> Callable[[Obj], bool]:
    """The rollout's end for one Deployment: the controller has seen template generation
    ``generation`` and every replica is updated and available, with none left over."""

    def check(deployment: Obj) -> bool:
        meta, status = deployment["metadata"], deployment.get("status") or {}
        return (meta.get("generation", 0) >= generation
                and status.get("observedGeneration", 0) >= meta.get("generation", 0)
                and status.get("replicas") == status.get("updatedReplicas")
                == status.get("availableReplicas") == REPLICAS)

    return check


class Converged:
    """Which Deployments meet the current target; ``done`` is set (and ``done_at`` stamped)
    when all ``expected`` of them do."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.target: Callable[[Obj], bool] = available
        self.names: set[str] = set()
        self.done = asyncio.Event()
        self.done_at = 0.0

    def retarget(self, target: Callable[[Obj], bool], current: dict[str, Obj]) -> None:
        """Wait for ``target`` from now on, judging the objects already seen by it."""
        self.target = target
        self.done = asyncio.Event()
        self.names = {name for name, obj in current.items() if target(obj)}
        self._check()

    def on_event(self, kind: str, deployment: Obj) -> None:
        name = deployment["metadata"]["name"]
        if kind != "DELETED" and self.target(deployment):
            self.names.add(name)
        else:
            self.names.discard(name)
        self._check()

    def _check(self) -> None:
        if len(self.names) >= self.expected and not self.done.is_set():
            self.done_at = time.perf_counter()
            self.done.set()


def _unschedulable(pod: Obj) -> bool:
    for cond in (pod.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "PodScheduled":
            return bool(cond.get("status") == "False" and cond.get("reason") == "Unschedulable")
    return False


def _ready(pod: Obj) -> bool:
    for cond in (pod.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "Ready":
            return bool(cond.get("status") == "True")
    return False


class PodCensus:
    """Live counts of the pods: ``pods``, ``terminating``, ``unschedulable``, and per
    template version ``v<N>`` and ``ready v<N>``; ``peaks`` keeps each count's maximum since
    :meth:`reset_peaks`. ``gone`` is set once no pod of ``old_version`` is left."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.peaks: Counter[str] = Counter()
        self._seen: dict[str, tuple[str, ...]] = {}
        self._thresholds: list[tuple[str, int]] = []
        self.old_version: str | None = None
        self.gone = asyncio.Event()
        self.gone_at = 0.0
        self.reached_at: dict[tuple[str, int], float] = {}
        self._reached: dict[tuple[str, int], asyncio.Event] = {}

    def stamp_when(self, key: str, count: int) -> None:
        """Record in ``reached_at[(key, count)]`` when count ``key`` first reaches ``count``."""
        self.reached_at.pop((key, count), None)
        self._thresholds.append((key, count))
        self._reached[(key, count)] = asyncio.Event()

    def reached(self, key: str, count: int) -> asyncio.Event:
        """Set once ``reached_at[(key, count)]`` is (the pod watch may lag behind the
        Deployments' watch: at 10,000 pods their convergence came first)."""
        return self._reached[(key, count)]

    def reset_peaks(self) -> None:
        self.peaks = Counter(self.counts)

    def wait_gone(self, version: str) -> None:
        """Set ``gone`` once no pod of template ``version`` exists (terminating or not)."""
        self.old_version = version
        self.gone = asyncio.Event()
        self._check()

    def on_event(self, kind: str, pod: Obj) -> None:
        name = pod["metadata"]["name"]
        for key in self._seen.pop(name, ()):
            self.counts[key] -= 1
        if kind != "DELETED":
            version = version_of(pod)
            keys = ["pods", f"v{version}"]
            if pod["metadata"].get("deletionTimestamp"):
                keys.append("terminating")
            elif _unschedulable(pod):
                keys.append("unschedulable")
            if _ready(pod):
                keys.append(f"ready v{version}")
            self._seen[name] = tuple(keys)
            for key in keys:
                self.counts[key] += 1
                if self.counts[key] > self.peaks[key]:
                    self.peaks[key] = self.counts[key]
        self._check()

    def _check(self) -> None:
        for key, count in self._thresholds:
            if self.counts[key] >= count and (key, count) not in self.reached_at:
                self.reached_at[(key, count)] = time.perf_counter()
                self._reached[(key, count)].set()
        if (self.old_version is not None and not self.gone.is_set()
                and self.counts[f"v{self.old_version}"] == 0):
            self.gone_at = time.perf_counter()
            self.gone.set()

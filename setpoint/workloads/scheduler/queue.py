"""Which pending pods to try again when the cluster changes (kube-scheduler's queueing hints).

A pod that fits nowhere waits here with the plugins that rejected it. Cluster events that
could make it fit move it back to the scheduling queue: any node added or changed in what
the scheduler reads (not a mere heartbeat); an assigned pod deleted or finished for pods
rejected for lack of room, ports or by anti-affinity; an assigned pod added or relabelled
for pods rejected by inter-pod affinity. Nothing polls; as a safety net, as kube-scheduler
flushes its unschedulable pods after five minutes, the scheduler retries each of them after
:data:`FLUSH_AFTER` seconds.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from setpoint.machinery.objects import Obj
from setpoint.runtime import Handler, Request

FLUSH_AFTER = 300.0

FREED_BY_POD_REMOVAL = frozenset({"NodeResourcesFit", "NodePorts", "InterPodAffinity"})
HELPED_BY_POD_ARRIVAL = frozenset({"InterPodAffinity"})
ALL_PLUGINS: frozenset[str] = frozenset()  # empty set means "any plugin"


INITIAL_BACKOFF = 1.0
MAX_BACKOFF = 10.0


class UnschedulablePods:
    """Pods that fit nowhere, by ``namespace/name``, with the plugins that rejected them.

    Like kube-scheduler's backoff queue, a pod that failed ``n`` times in a row is not tried
    again for ``min(1 s * 2^(n-1), 10 s)``, whatever events arrive meanwhile: one freed
    slot must not wake every waiting pod at once.

    As kube-scheduler's ``movePodsToActiveOrBackoffQueue`` moves a pod out of
    ``unschedulablePods`` once (pkg/scheduler/backend/queue/scheduling_queue.go), an event
    wakes a waiting pod once: until its next scheduling cycle has run (it fails again:
    :meth:`add`; or it leaves: :meth:`remove`), further events pass it by. Each event then
    costs what it wakes, not every waiting pod again: with 10,000 pods a rollout deletes
    thousands of pods while hundreds wait.
    """

    def __init__(self) -> None:
        self._pods: dict[str, tuple[frozenset[str], float]] = {}
        self._attempts: dict[str, int] = {}
        self._waiting: dict[str, frozenset[str]] = {}
        """The pods no event has woken since their last failed cycle, with their
        rejectors."""

    def __repr__(self) -> str:
        return f"UnschedulablePods({len(self._pods)}, waiting={len(self._waiting)})"

    def __len__(self) -> int:
        return len(self._pods)

    def __contains__(self, key: object) -> bool:
        return key in self._pods

    def add(self, key: str, plugins: Iterable[str]) -> None:
        rejectors = frozenset(plugins)
        self._pods[key] = (rejectors, time.monotonic())
        self._attempts[key] = self._attempts.get(key, 0) + 1
        self._waiting[key] = rejectors

    def remove(self, key: str) -> None:
        self._pods.pop(key, None)
        self._attempts.pop(key, None)
        self._waiting.pop(key, None)

    def backoff_left(self, key: str) -> float:
        """Seconds until ``key`` may be tried again (0: now)."""
        entry = self._pods.get(key)
        if entry is None:
            return 0.0
        attempts = self._attempts.get(key, 1)
        backoff: float = min(INITIAL_BACKOFF * 2 ** (attempts - 1), MAX_BACKOFF)
        return max(0.0, entry[1] + backoff - time.monotonic())

    def queue_of(self, key: str) -> str:
        """Where kube-scheduler's ``PriorityQueue`` would hold a pending pod: in
        ``unschedulable`` until an event wakes it, then in ``backoff`` until its backoff
        ends, else in ``active`` (pods never tried included)."""
        if key in self._waiting:
            return "unschedulable"
        return "backoff" if self.backoff_left(key) > 0 else "active"

    def affected(self, plugins: frozenset[str]) -> list[Request]:
        """Requests for the waiting pods rejected by one of ``plugins`` (all when empty),
        each woken once: the scheduler tries it when its backoff ends."""
        woken = [key for key, rejectors in self._waiting.items()
                 if not plugins or not rejectors or rejectors & plugins]
        out = []
        for key in woken:
            del self._waiting[key]
            namespace, _, name = key.partition("/")
            out.append(Request(namespace, name))
        return out


class RequeueUnschedulable(Handler):
    """An event handler that requeues the unschedulable pods an event may help."""

    def __init__(self, pods: UnschedulablePods, plugins: frozenset[str] = ALL_PLUGINS) -> None:
        self.pods = pods
        self.plugins = plugins

    def __repr__(self) -> str:
        return f"RequeueUnschedulable(plugins={sorted(self.plugins) or 'all'})"

    def requests(self, obj: Obj) -> Iterable[Request]:
        return self.pods.affected(self.plugins)

    def update_requests(self, old: Obj, new: Obj) -> Iterable[Request]:
        return self.pods.affected(self.plugins)


# -- which events matter -------------------------------------------------------------------

def _node_view(node: Mapping[str, Any]) -> tuple[Any, ...]:
    """What the scheduler reads of a node (heartbeats excluded)."""
    metadata = node.get("metadata") or {}
    spec = node.get("spec") or {}
    status = node.get("status") or {}
    conditions = tuple((c.get("type"), c.get("status"))
                       for c in status.get("conditions") or ())
    return (metadata.get("labels"), spec.get("unschedulable"), spec.get("taints"),
            status.get("allocatable"), conditions)


def node_changed(old: Obj, new: Obj) -> bool:
    return _node_view(old) != _node_view(new)


def assigned(pod: Mapping[str, Any]) -> bool:
    return bool((pod.get("spec") or {}).get("nodeName"))


def _terminal(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def assigned_pod_freed(old: Obj, new: Obj) -> bool:
    """An assigned pod stopped counting (finished), or its requests shrank."""
    if not assigned(old):
        return False
    if _terminal(new) and not _terminal(old):
        return True
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    return old_spec.get("containers") != new_spec.get("containers")


def assigned_pod_arrived(old: Obj, new: Obj) -> bool:
    """A pod got bound, or an assigned pod's labels changed."""
    if not assigned(new):
        return False
    if not assigned(old):
        return True
    return (old.get("metadata") or {}).get("labels") != (new.get("metadata") or {}).get("labels")

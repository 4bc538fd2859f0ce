"""The scheduler's own view of the cluster: nodes with the pods on them, assumed pods included.

As kube-scheduler's cache, it is fed by the informers (assigned, non-terminal pods; nodes)
and by the scheduler itself: a pod is *assumed* on its node the moment a node is chosen,
before the binding is sent, so the next scheduling cycle already counts it. The binding's
watch event later confirms the assumption; a failed binding forgets it. Scheduling cycles
run on the event loop without awaiting between reading this cache and assuming, so two pods
can never both take the last slot of a node.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from setpoint.machinery.objects import Obj
from setpoint.workloads.scheduler.resources import (
    Resources,
    host_ports,
    pod_non_zero_requests,
    pod_requests,
)
from setpoint.workloads.scheduler.terms import AffinityTerm, required_terms


def pod_key(pod: Mapping[str, Any]) -> str:
    m = pod.get("metadata") or {}
    return f"{m.get('namespace', '')}/{m.get('name', '')}"


def is_terminal(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def pod_priority(pod: Mapping[str, Any]) -> int:
    return int((pod.get("spec") or {}).get("priority") or 0)


def controller_uid(pod: Mapping[str, Any]) -> str | None:
    """The uid of the pod's controller owner (ReplicaSet, StatefulSet, Job …)."""
    for ref in (pod.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return str(ref.get("uid"))
    return None


def _same_inputs(old: Obj, new: Obj) -> bool:
    """Whether :meth:`PodInfo.of` would compute the same of ``new`` as of ``old`` (the same
    pod): it reads the spec and the owner references."""
    return old.get("spec") == new.get("spec") and \
        (old.get("metadata") or {}).get("ownerReferences") == \
        (new.get("metadata") or {}).get("ownerReferences")


@dataclass
class PodInfo:
    """A pod on a node, with what the scheduler computes from it once."""

    pod: Obj
    key: str
    requests: Resources
    non_zero: Resources
    ports: list[tuple[str, str, int]]
    anti_affinity: list[AffinityTerm]
    """Its required anti-affinity terms (other pods must keep out of their topology)."""
    owner: str | None
    assumed: bool = False
    priority: int = 0
    """``spec.priority`` (admission resolves it from the PriorityClass; unset is 0)."""

    @classmethod
    def of(cls, pod: Obj, *, assumed: bool = False) -> PodInfo:
        return cls(pod, pod_key(pod), pod_requests(pod), pod_non_zero_requests(pod),
                   host_ports(pod), required_terms(pod, "podAntiAffinity"),
                   controller_uid(pod), assumed, pod_priority(pod))

    @property
    def labels(self) -> Mapping[str, str]:
        return (self.pod.get("metadata") or {}).get("labels") or {}

    @property
    def namespace(self) -> str:
        return str((self.pod.get("metadata") or {}).get("namespace") or "")


@dataclass
class NodeInfo:
    """A node and the pods the scheduler counts on it (``framework.NodeInfo``)."""

    name: str
    node: Obj | None = None
    allocatable: Resources = field(default_factory=Resources)
    pods: dict[str, PodInfo] = field(default_factory=dict)
    requested: Resources = field(default_factory=Resources)
    non_zero_requested: Resources = field(default_factory=Resources)
    pods_with_required_anti_affinity: dict[str, PodInfo] = field(default_factory=dict)
    owners: Counter[str] = field(default_factory=Counter)
    """Pods on the node per controller uid (for spreading)."""
    priorities: Counter[int] = field(default_factory=Counter)
    """Pods on the node per priority: a cluster has few distinct priorities, so the lowest
    is found without reading every pod."""
    _lowest: float | None = field(default=None, repr=False, compare=False)
    """The smallest key of ``priorities``, until a priority comes or goes."""

    labels: Mapping[str, str] = field(default_factory=dict)
    spec: Mapping[str, Any] = field(default_factory=dict)
    taints: tuple[Mapping[str, Any], ...] = ()
    """The node's labels, spec and taints, read once per change of the node: every
    scheduling cycle asks them of every node."""

    def set_node(self, node: Obj | None) -> None:
        self.node = node
        allocatable = ((node or {}).get("status") or {}).get("allocatable") or {}
        self.allocatable = Resources.from_list(allocatable)
        self.labels = ((node or {}).get("metadata") or {}).get("labels") or {}
        self.spec = (node or {}).get("spec") or {}
        self.taints = tuple(self.spec.get("taints") or ())

    def lowest_priority(self) -> float:
        """The lowest priority among the node's pods (infinite when it has none).
        Preemption asks this of every node in every failed cycle, and in a rollout every
        node changes between two cycles: it costs the distinct priorities, not the pods."""
        if self._lowest is None:
            self._lowest = min(self.priorities, default=float("inf"))
        return self._lowest

    def add_pod(self, info: PodInfo) -> None:
        self.pods[info.key] = info
        self.priorities[info.priority] += 1
        if self.priorities[info.priority] == 1:
            self._lowest = None
        self.requested.add(info.requests)
        self.non_zero_requested.add(info.non_zero)
        if info.anti_affinity:
            self.pods_with_required_anti_affinity[info.key] = info
        if info.owner:
            self.owners[info.owner] += 1

    def remove_pod(self, key: str) -> PodInfo | None:
        info = self.pods.pop(key, None)
        if info is not None:
            self.priorities[info.priority] -= 1
            if self.priorities[info.priority] <= 0:
                del self.priorities[info.priority]
                self._lowest = None
            self.requested.subtract(info.requests)
            self.non_zero_requested.subtract(info.non_zero)
            self.pods_with_required_anti_affinity.pop(key, None)
            if info.owner:
                self.owners[info.owner] -= 1
                if self.owners[info.owner] <= 0:
                    del self.owners[info.owner]
        return info

    def used_ports(self) -> Iterator[tuple[str, str, int]]:
        for info in self.pods.values():
            yield from info.ports


class SchedulerCache:
    """Nodes and the assigned pods on them, plus the pods this scheduler assumed."""

    def __init__(self) -> None:
        self._nodes: dict[str, NodeInfo] = {}
        self._pod_node: dict[str, str] = {}
        self._existing: list[NodeInfo] | None = None
        """The existing nodes by name, kept until a node comes or goes."""

    def __repr__(self) -> str:
        assumed = sum(1 for n in self._nodes.values() for p in n.pods.values() if p.assumed)
        return f"SchedulerCache(nodes={self.node_count()}, pods={len(self._pod_node)}, " \
               f"assumed={assumed})"

    # -- nodes -----------------------------------------------------------------------------

    def _info(self, name: str) -> NodeInfo:
        info = self._nodes.get(name)
        if info is None:
            info = self._nodes[name] = NodeInfo(name)
        return info

    def set_node(self, node: Obj) -> None:
        """Add or update a node."""
        name = str((node.get("metadata") or {}).get("name") or "")
        info = self._info(name)
        if info.node is None:
            self._existing = None
        info.set_node(node)

    def remove_node(self, name: str) -> None:
        """Forget a node; its pods are kept (as kube-scheduler's ghost node) until they go."""
        info = self._nodes.get(name)
        if info is None:
            return
        self._existing = None
        if info.pods:
            info.set_node(None)
        else:
            del self._nodes[name]

    def node_infos(self) -> list[NodeInfo]:
        """The nodes that exist, by name (the same list until a node comes or goes: read
        it, do not change it)."""
        if self._existing is None:
            self._existing = sorted((n for n in self._nodes.values() if n.node is not None),
                                    key=lambda n: n.name)
        return self._existing

    def node_count(self) -> int:
        return sum(1 for n in self._nodes.values() if n.node is not None)

    def get(self, name: str) -> NodeInfo | None:
        return self._nodes.get(name)

    # -- pods ------------------------------------------------------------------------------

    def node_of(self, key: str) -> str | None:
        return self._pod_node.get(key)

    def is_assumed(self, key: str) -> bool:
        node = self._pod_node.get(key)
        if node is None:
            return False
        info = self._nodes[node].pods.get(key)
        return info is not None and info.assumed

    def assume(self, pod: Obj, node_name: str) -> None:
        """Count ``pod`` on ``node_name`` before its binding is confirmed."""
        key = pod_key(pod)
        self.remove_pod(key)
        bound = {**pod, "spec": {**(pod.get("spec") or {}), "nodeName": node_name}}
        self._info(node_name).add_pod(PodInfo.of(bound, assumed=True))
        self._pod_node[key] = node_name

    def forget(self, key: str) -> None:
        """Drop an assumption whose binding failed (confirmed pods stay)."""
        if self.is_assumed(key):
            self.remove_pod(key)

    def observe_pod(self, pod: Obj) -> None:
        """Apply what the informer says about ``pod`` (added or updated)."""
        key = pod_key(pod)
        node_name = (pod.get("spec") or {}).get("nodeName")
        if not node_name:
            return  # unbound: an assumption (if any) waits for its binding to be seen
        if is_terminal(pod):
            self.remove_pod(key)
            return
        current = self._pod_node.get(key)
        if current is not None:
            existing = self._nodes[current].pods.get(key)
            if existing is not None and current == node_name and not existing.assumed:
                if existing.pod is pod:
                    return
                if _same_inputs(existing.pod, pod):
                    # most updates are the kubelet's status writes: what was computed from
                    # the pod (requests, ports, terms, owner, priority) stays as it was
                    existing.pod = pod
                    return
            self._nodes[current].remove_pod(key)
            self._drop_empty_ghost(current)
        self._info(node_name).add_pod(PodInfo.of(pod))
        self._pod_node[key] = node_name

    def remove_pod(self, key: str) -> None:
        """The pod is gone (deleted, terminal or forgotten)."""
        node = self._pod_node.pop(key, None)
        if node is None:
            return
        self._nodes[node].remove_pod(key)
        self._drop_empty_ghost(node)

    def _drop_empty_ghost(self, name: str) -> None:
        info = self._nodes.get(name)
        if info is not None and info.node is None and not info.pods:
            del self._nodes[name]

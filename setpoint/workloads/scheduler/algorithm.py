"""One scheduling decision: filter the nodes, score the feasible ones, or explain why none.

This is ``schedulePod`` plus the DefaultPreemption PostFilter's diagnosis, as a pure
function of the pod and a snapshot of the scheduler cache, so it can be tested without a
server. Preemption itself (evicting lower-priority pods) is not performed: when no node
fits, the explanation says where it could not help.

As kube-scheduler's ``findNodesThatPassFilters`` (pkg/scheduler/schedule_one.go), filtering
stops once enough feasible nodes are found (:func:`num_feasible_nodes_to_find`: all of them
below 100 nodes), starting where the previous cycle stopped, so that the nodes take turns.
A cycle that fails still looks at every node: its message counts them all.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from setpoint.workloads.scheduler import messages
from setpoint.workloads.scheduler.affinity import AffinityState
from setpoint.workloads.scheduler.cache import NodeInfo, pod_priority
from setpoint.workloads.scheduler.predicates import (
    Code,
    PodFilterState,
    Status,
    node_affinity,
    node_ports,
    node_resources_fit,
    node_unschedulable,
    resource_fit,
    taint_toleration,
)
from setpoint.workloads.scheduler.resources import (
    host_ports,
    pod_non_zero_requests,
    pod_requests,
)
from setpoint.workloads.scheduler.scoring import select_node
from setpoint.workloads.scheduler.volumebinding import VolumeBindingState

NamespaceLabels = Callable[[str], Mapping[str, str]]


@dataclass
class Decision:
    """Where the pod goes (``node``), or why it cannot go anywhere (``message``)."""

    node: NodeInfo | None = None
    message: str = ""
    statuses: dict[str, Status] = field(default_factory=dict)
    """Per node, why it was filtered out."""
    processed: int = 0
    """The nodes filtered (where the next cycle starts, counted from this one's start)."""

    @property
    def rejectors(self) -> set[str]:
        """The plugins that rejected the pod somewhere (for requeueing on the right events)."""
        return {s.plugin for s in self.statuses.values()}


MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5


def num_feasible_nodes_to_find(num_all_nodes: int, percentage_of_nodes_to_score: int = 0) -> int:
    """How many feasible nodes a cycle looks for before it stops filtering
    (``numFeasibleNodesToFind`` in pkg/scheduler/schedule_one.go): every node below 100;
    else ``percentageOfNodesToScore`` of them, by default the adaptive 50% less one point
    per 125 nodes, at least 5%, and never fewer than 100 nodes."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    percentage = percentage_of_nodes_to_score
    if percentage == 0:
        percentage = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    return max(num_all_nodes * percentage // 100, MIN_FEASIBLE_NODES_TO_FIND)


_NOT_HELPFUL = (messages.PREEMPTION_NOT_HELPFUL,)
_NO_VICTIMS = (messages.NO_VICTIMS,)


def _no_namespace_labels(_: str) -> Mapping[str, str]:
    return {}


def filter_node(pod: Mapping[str, Any], node: NodeInfo, *, request: Any, ports: Any,
                affinity: AffinityState, state: PodFilterState | None = None,
                volumes: VolumeBindingState | None = None) -> Status | None:
    """Run the filters in the default profile's order; the first failure wins. ``state``
    is the pod's pre-filter state, read once per cycle (read from ``pod`` when absent)."""
    pre = state or PodFilterState.of(pod)
    # every cycle runs this for every node: a filter with nothing to check is not called
    status = ((node_unschedulable(pre, node) if node.spec.get("unschedulable") else None)
              or (taint_toleration(pre, node) if node.taints else None)
              or (node_affinity(pre, node) if pre.node_selector or node.node is None
                  or pre.required_affinity is not None else None)
              or (node_ports(ports, node) if ports else None)
              or node_resources_fit(request, node)
              or (volumes.filter(node) if volumes is not None and volumes.active else None))
    if status is None and affinity.active:
        status = affinity.filter(node)
    return status


def _preemption(pod: Mapping[str, Any], nodes: Sequence[NodeInfo],
                statuses: Mapping[str, Status]) -> str:
    """What DefaultPreemption says when it cannot make room."""
    if (pod.get("spec") or {}).get("preemptionPolicy") == "Never":
        return "preemption: " + messages.NOT_ELIGIBLE_NEVER
    priority = pod_priority(pod)
    # one row per node, in the nodes' order; the rows are shared tuples, counted by value
    rows: list[tuple[str, ...]] = []
    for node in nodes:
        status = statuses[node.name]
        if status.code is Code.UNRESOLVABLE:
            rows.append(_NOT_HELPFUL)
        elif node.lowest_priority() >= priority:
            rows.append(_NO_VICTIMS)
        else:
            # evicting every lower-priority pod would still be needed and is not done here
            rows.append(status.reasons)
    return messages.preemption_message(len(nodes), rows)


def schedule(pod: Mapping[str, Any], nodes: Sequence[NodeInfo],
             namespace_labels: NamespaceLabels = _no_namespace_labels,
             start: int = 0, volumes: VolumeBindingState | None = None) -> Decision:
    """Decide where ``pod`` goes among ``nodes`` (the snapshot of existing nodes), filtering
    from ``nodes[start]`` on (kube-scheduler's ``nextStartNodeIndex``). ``volumes``: the
    VolumeBinding plugin's PreFilter state of the pod's claims."""
    if not nodes:
        return Decision(message=messages.NO_NODES_AVAILABLE)
    if volumes is not None and volumes.failure is not None:
        # a PreFilter failure is every node's status (SetAbsentNodesStatus), said once
        failed = {node.name: volumes.failure for node in nodes}
        return Decision(message=messages.pre_filter_error(
            len(nodes), ", ".join(volumes.failure.reasons), _preemption(pod, nodes, failed)),
            statuses=failed)
    if volumes is not None and not volumes.active:
        volumes = None
    request = pod_requests(pod)
    ports = host_ports(pod)
    affinity = AffinityState(pod, nodes, namespace_labels)
    state = PodFilterState.of(pod)
    to_find = num_feasible_nodes_to_find(len(nodes))
    start %= len(nodes)
    feasible: list[NodeInfo] = []
    statuses: dict[str, Status] = {}
    # a pod with no node selector, affinity or host port is filtered on an untainted
    # schedulable node by NodeResourcesFit alone
    fit = resource_fit(request) if not (state.node_selector or ports or affinity.active
                                        or state.required_affinity is not None
                                        or volumes is not None) else None
    for node in [*nodes[start:], *nodes[:start]] if start else nodes:
        if fit is not None and not node.taints and node.node is not None and \
                not node.spec.get("unschedulable"):
            status = fit(node)
        else:
            status = filter_node(pod, node, request=request, ports=ports, affinity=affinity,
                                 state=state, volumes=volumes)
        if status is None:
            feasible.append(node)
            if len(feasible) == to_find:
                break  # enough to score (every node when fewer than 100)
        else:
            statuses[node.name] = status
    processed = len(feasible) + len(statuses)
    if feasible:
        return Decision(node=select_node(pod, request, pod_non_zero_requests(pod), feasible),
                        processed=processed)
    message = messages.fit_error(len(nodes), (s.reasons for s in statuses.values()),
                                 _preemption(pod, nodes, statuses))
    return Decision(message=message, statuses=statuses, processed=processed)

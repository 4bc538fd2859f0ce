"""Choosing among the nodes that fit: the default profile's score plugins, simplified.

Every plugin scores a node from 0 to 100; the total is the weighted sum, with kube-scheduler's
default weights:

- NodeResourcesFit, LeastAllocated (1): free cpu and memory after placing the pod;
- NodeResourcesBalancedAllocation (1): cpu and memory used in the same proportion;
- NodeAffinity (2): weights of the matching preferred node affinity terms;
- TaintToleration (3): fewer untolerated PreferNoSchedule taints;
- PodTopologySpread's system default (2): fewer pods of the same owner on the node and in
  its zone (the default constraints spread by hostname and zone, ScheduleAnyway).

Ties go to the first node by name, so that placement is reproducible.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from setpoint.workloads.scheduler.cache import NodeInfo, controller_uid
from setpoint.workloads.scheduler.predicates import pod_tolerations, term_matches, tolerated
from setpoint.workloads.scheduler.resources import Resources

MAX_SCORE = 100
ZONE_LABEL = "topology.kubernetes.io/zone"


def least_allocated(request: Resources, node: NodeInfo) -> float:
    scores = []
    for allocatable, used in ((node.allocatable.milli_cpu,
                               node.non_zero_requested.milli_cpu + request.milli_cpu),
                              (node.allocatable.memory,
                               node.non_zero_requested.memory + request.memory)):
        if allocatable <= 0 or used > allocatable:
            scores.append(0.0)
        else:
            scores.append((allocatable - used) * MAX_SCORE / allocatable)
    return sum(scores) / len(scores)


def balanced_allocation(request: Resources, node: NodeInfo) -> float:
    fractions = []
    for allocatable, used in ((node.allocatable.milli_cpu,
                               node.requested.milli_cpu + request.milli_cpu),
                              (node.allocatable.memory, node.requested.memory + request.memory)):
        fractions.append(min(used / allocatable, 1.0) if allocatable > 0 else 1.0)
    deviation = abs(fractions[0] - fractions[1]) / 2
    return (1 - deviation) * MAX_SCORE


def resource_scores(request: Resources, non_zero: Resources,
                    nodes: Sequence[NodeInfo]) -> list[float]:
    """``least_allocated(non_zero, node) + balanced_allocation(request, node)`` of each node,
    the same floats in one loop: a successful cycle scores every feasible node (all of them
    up to 100 nodes), and at 100 nodes two calls per node were a third of the cycle."""
    cpu, memory = request.milli_cpu, request.memory
    nz_cpu, nz_memory = non_zero.milli_cpu, non_zero.memory
    out = []
    for node in nodes:
        allocatable = node.allocatable
        a_cpu, a_memory = allocatable.milli_cpu, allocatable.memory
        non_zero_requested, requested = node.non_zero_requested, node.requested
        used = non_zero_requested.milli_cpu + nz_cpu
        free_cpu = 0.0 if a_cpu <= 0 or used > a_cpu else (a_cpu - used) * MAX_SCORE / a_cpu
        used = non_zero_requested.memory + nz_memory
        free_memory = 0.0 if a_memory <= 0 or used > a_memory \
            else (a_memory - used) * MAX_SCORE / a_memory
        cpu_fraction = min((requested.milli_cpu + cpu) / a_cpu, 1.0) if a_cpu > 0 else 1.0
        memory_fraction = min((requested.memory + memory) / a_memory, 1.0) \
            if a_memory > 0 else 1.0
        out.append((0 + free_cpu + free_memory) / 2
                   + (1 - abs(cpu_fraction - memory_fraction) / 2) * MAX_SCORE)
    return out


def _normalize(raw: Sequence[float], *, reverse: bool = False) -> list[float]:
    """``DefaultNormalizeScore``: scale to 0..100 by the largest value (reversed: fewer is
    better)."""
    top = max(raw, default=0)
    if top == 0:
        return [float(MAX_SCORE) if reverse else 0.0 for _ in raw]
    scaled = [r * MAX_SCORE / top for r in raw]
    return [MAX_SCORE - s for s in scaled] if reverse else scaled


def _preferred_affinity(preferred: Sequence[Mapping[str, Any]], node: NodeInfo) -> float:
    total = 0.0
    for term in preferred:
        if node.node is not None and term_matches(term.get("preference") or {}, node.node):
            total += float(term.get("weight") or 0)
    return total


def _intolerable_prefer_no_schedule(tolerations: Sequence[Mapping[str, Any]],
                                    node: NodeInfo) -> float:
    return float(sum(1 for t in node.taints
                     if t.get("effect") == "PreferNoSchedule" and not tolerated(tolerations, t)))


def _spread_counts(pod: Mapping[str, Any], nodes: Sequence[NodeInfo]) -> list[float]:
    """Pods of the same controller on each node, plus in its zone (weighted as the system
    default constraints: hostname skew 3, zone skew 5)."""
    owner = controller_uid(pod)
    if owner is None:
        return [0.0] * len(nodes)
    per_node = [n.owners.get(owner, 0) for n in nodes]
    per_zone: dict[str, int] = {}
    for node, count in zip(nodes, per_node, strict=True):
        zone = node.labels.get(ZONE_LABEL)
        if zone is not None:
            per_zone[zone] = per_zone.get(zone, 0) + count
    return [count / 3 + per_zone.get(node.labels.get(ZONE_LABEL, ""), 0) / 5
            for node, count in zip(nodes, per_node, strict=True)]


def select_node(pod: Mapping[str, Any], request: Resources, non_zero: Resources,
                nodes: Sequence[NodeInfo]) -> NodeInfo:
    """The best of ``nodes`` (which all fit ``pod``) by the weighted scores."""
    if len(nodes) == 1:
        return nodes[0]
    # what the scores read of the pod, read once (the plugins' PreScore state)
    preferred = ((((pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {})
                 .get("preferredDuringSchedulingIgnoredDuringExecution") or ())
    tolerations = [t for t in pod_tolerations(pod)
                   if (t.get("effect") or "PreferNoSchedule") == "PreferNoSchedule"]
    affinity = _normalize([_preferred_affinity(preferred, n) if preferred else 0.0
                           for n in nodes])
    taints = _normalize([_intolerable_prefer_no_schedule(tolerations, n) if n.taints else 0.0
                         for n in nodes], reverse=True)
    spread = _normalize(_spread_counts(pod, nodes), reverse=True)
    best, best_score = nodes[0], -1.0
    for i, resources in enumerate(resource_scores(request, non_zero, nodes)):
        score = resources + 2 * affinity[i] + 3 * taints[i] + 2 * spread[i]
        if score > best_score + 1e-9:
            best, best_score = nodes[i], score
    return best

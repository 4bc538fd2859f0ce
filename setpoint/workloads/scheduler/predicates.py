"""The filters of kube-scheduler's default profile, as pure functions over plain dicts.

Each filter looks at one pod and one node and answers ``None`` (the node passes) or a
:class:`Status` with the reasons, worded exactly as the real plugins word them, and a code
telling whether evicting lower-priority pods could ever help (``UNSCHEDULABLE``) or not
(``UNRESOLVABLE``, kube-scheduler's UnschedulableAndUnresolvable). Filters run in the
default profile's order and stop at the first failure: NodeUnschedulable, TaintToleration,
NodeAffinity, NodePorts, NodeResourcesFit, InterPodAffinity (in :mod:`.affinity`).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from setpoint.workloads.scheduler.cache import NodeInfo
from setpoint.workloads.scheduler.resources import Resources

TAINT_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"

ERR_UNSCHEDULABLE = "node(s) were unschedulable"
ERR_NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
ERR_NODE_PORTS = "node(s) didn't have free ports for the requested pod ports"
ERR_TOO_MANY_PODS = "Too many pods"


class Code(enum.Enum):
    UNSCHEDULABLE = "Unschedulable"
    UNRESOLVABLE = "UnschedulableAndUnresolvable"


@dataclass(frozen=True)
class Status:
    """Why a node does not fit, from one plugin."""

    code: Code
    reasons: tuple[str, ...]
    plugin: str


# -- tolerations and taints ----------------------------------------------------------------

def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """``Toleration.ToleratesTaint``: an empty key with Exists tolerates every key, an
    empty effect every effect; the operator defaults to Equal."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    if operator == "Equal":
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return False


def tolerated(tolerations: Iterable[Mapping[str, Any]], taint: Mapping[str, Any]) -> bool:
    return any(tolerates(t, taint) for t in tolerations)


def first_untolerated_taint(taints: Iterable[Mapping[str, Any]],
                            tolerations: Sequence[Mapping[str, Any]],
                            effects: tuple[str, ...] = ("NoSchedule", "NoExecute"),
                            ) -> Mapping[str, Any] | None:
    """The first taint with one of ``effects`` that no toleration tolerates."""
    for taint in taints:
        if taint.get("effect") in effects and not tolerated(tolerations, taint):
            return taint
    return None


def pod_tolerations(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list((pod.get("spec") or {}).get("tolerations") or ())


# -- node affinity -------------------------------------------------------------------------

def _int_or_none(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def requirement_matches(req: Mapping[str, Any], values_of: Mapping[str, str]) -> bool:
    """One ``NodeSelectorRequirement`` against labels (or fields)."""
    key = req.get("key") or ""
    operator = req.get("operator")
    values = list(req.get("values") or ())
    present = key in values_of
    value = values_of.get(key, "")
    if operator == "In":
        return present and value in values
    if operator == "NotIn":
        return not present or value not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt"):
        if not present or len(values) != 1:
            return False
        have, want = _int_or_none(value), _int_or_none(values[0])
        if have is None or want is None:
            return False
        return have > want if operator == "Gt" else have < want
    return False


def term_matches(term: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """A ``NodeSelectorTerm``: all its expressions and fields match; an empty term matches
    nothing."""
    expressions = term.get("matchExpressions") or ()
    fields = term.get("matchFields") or ()
    if not expressions and not fields:
        return False
    metadata = node.get("metadata") or {}
    labels = metadata.get("labels") or {}
    node_fields = {"metadata.name": str(metadata.get("name") or "")}
    return all(requirement_matches(r, labels) for r in expressions) and \
        all(r.get("key") == "metadata.name" and requirement_matches(r, node_fields)
            for r in fields)


def node_selector_matches(selector: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """A ``NodeSelector``: any of its terms matches."""
    return any(term_matches(t, node) for t in selector.get("nodeSelectorTerms") or ())


@dataclass(frozen=True, slots=True)
class PodFilterState:
    """What the filters read of the pod, read once per scheduling cycle rather than once
    per node (kube-scheduler's PreFilter state, e.g. NodeAffinity's ``preFilterState`` in
    pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go)."""

    tolerations: tuple[Mapping[str, Any], ...]
    node_selector: tuple[tuple[str, Any], ...]
    required_affinity: Mapping[str, Any] | None

    @classmethod
    def of(cls, pod: Mapping[str, Any]) -> PodFilterState:
        spec = pod.get("spec") or {}
        required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                    .get("requiredDuringSchedulingIgnoredDuringExecution"))
        return cls(tuple(spec.get("tolerations") or ()),
                   tuple((spec.get("nodeSelector") or {}).items()), required)


def _matches_node_affinity(state: PodFilterState, node: Mapping[str, Any]) -> bool:
    if state.node_selector:
        labels = (node.get("metadata") or {}).get("labels") or {}
        for key, value in state.node_selector:
            if labels.get(key) != value:
                return False
    return state.required_affinity is None or \
        node_selector_matches(state.required_affinity, node)


def matches_node_affinity(pod: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """``nodeSelector`` and required node affinity both hold (``GetRequiredNodeAffinity``)."""
    return _matches_node_affinity(PodFilterState.of(pod), node)


# -- the filters ---------------------------------------------------------------------------
# Each takes the pod's PodFilterState; given the pod itself, it reads the state first.

def _state(pod: Mapping[str, Any] | PodFilterState) -> PodFilterState:
    return pod if isinstance(pod, PodFilterState) else PodFilterState.of(pod)


def node_unschedulable(pod: Mapping[str, Any] | PodFilterState,
                       node: NodeInfo) -> Status | None:
    if node.spec.get("unschedulable") and not tolerated(
            _state(pod).tolerations, {"key": TAINT_UNSCHEDULABLE, "effect": "NoSchedule"}):
        return Status(Code.UNRESOLVABLE, (ERR_UNSCHEDULABLE,), "NodeUnschedulable")
    return None


def taint_toleration(pod: Mapping[str, Any] | PodFilterState,
                     node: NodeInfo) -> Status | None:
    if not node.taints:
        return None
    taint = first_untolerated_taint(node.taints, _state(pod).tolerations)
    if taint is None:
        return None
    reason = f"node(s) had untolerated taint {{{taint.get('key', '')}: " \
             f"{taint.get('value') or ''}}}"
    return Status(Code.UNRESOLVABLE, (reason,), "TaintToleration")


def node_affinity(pod: Mapping[str, Any] | PodFilterState, node: NodeInfo) -> Status | None:
    if node.node is not None:
        state = _state(pod)
        if (not state.node_selector and state.required_affinity is None) or \
                _matches_node_affinity(state, node.node):
            return None
    return Status(Code.UNRESOLVABLE, (ERR_NODE_AFFINITY,), "NodeAffinity")


def _ports_conflict(want: tuple[str, str, int], used: tuple[str, str, int]) -> bool:
    if want[1] != used[1] or want[2] != used[2]:
        return False
    return want[0] == used[0] or "0.0.0.0" in (want[0], used[0])


def node_ports(wanted: Sequence[tuple[str, str, int]], node: NodeInfo) -> Status | None:
    if not wanted:
        return None
    used = list(node.used_ports())
    if any(_ports_conflict(w, u) for w in wanted for u in used):
        return Status(Code.UNSCHEDULABLE, (ERR_NODE_PORTS,), "NodePorts")
    return None


def insufficient_resources(request: Resources, node: NodeInfo) -> list[str]:
    """``fitsRequest``: the reasons the node lacks room for ``request`` (empty: it fits)."""
    reasons = []
    allocatable, requested = node.allocatable, node.requested
    if len(node.pods) + 1 > allocatable.allowed_pods:
        reasons.append(ERR_TOO_MANY_PODS)
    if request.is_empty():
        return reasons
    if request.milli_cpu > 0 and \
            request.milli_cpu > allocatable.milli_cpu - requested.milli_cpu:
        reasons.append("Insufficient cpu")
    if request.memory > 0 and request.memory > allocatable.memory - requested.memory:
        reasons.append("Insufficient memory")
    if request.ephemeral_storage > 0 and request.ephemeral_storage > \
            allocatable.ephemeral_storage - requested.ephemeral_storage:
        reasons.append("Insufficient ephemeral-storage")
    # every cycle asks this of every node: most pods request no extended resource
    for name in sorted(request.scalar) if request.scalar else ():
        amount = request.scalar[name]
        if amount > 0 and amount > allocatable.scalar.get(name, 0) - \
                requested.scalar.get(name, 0):
            reasons.append(f"Insufficient {name}")
    return reasons


_FIT_STATUSES: dict[tuple[str, ...], Status] = {}
"""The NodeResourcesFit statuses made so far, by their reasons: a failed cycle rejects most
nodes for the same reasons ("Too many pods" on every full node), and a status is immutable."""


def _fit_status(key: tuple[str, ...]) -> Status:
    status = _FIT_STATUSES.get(key)
    if status is None:
        status = Status(Code.UNSCHEDULABLE, key, "NodeResourcesFit")
        if len(_FIT_STATUSES) < 256:  # bounded: extended resources' names are the pods'
            _FIT_STATUSES[key] = status
    return status


def node_resources_fit(request: Resources, node: NodeInfo) -> Status | None:
    reasons = insufficient_resources(request, node)
    if not reasons:
        return None
    return _fit_status(tuple(reasons))


def resource_fit(request: Resources) -> Callable[[NodeInfo], Status | None]:
    """``node_resources_fit`` for one pod, with the pod's side read once per cycle (its
    PreFilter state): a cycle that fails asks it of every node, and in a rollout most
    cycles fail. Pods asking for ephemeral storage or extended resources take the general
    path."""
    if request.ephemeral_storage > 0 or request.scalar:
        return lambda node: node_resources_fit(request, node)
    cpu, memory = request.milli_cpu, request.memory
    statuses: dict[tuple[bool, bool, bool], Status] = {}

    def fit(node: NodeInfo) -> Status | None:
        allocatable, requested = node.allocatable, node.requested
        flags = (len(node.pods) >= allocatable.allowed_pods,
                 cpu > 0 and cpu > allocatable.milli_cpu - requested.milli_cpu,
                 memory > 0 and memory > allocatable.memory - requested.memory)
        status = statuses.get(flags)
        if status is None:
            if flags == (False, False, False):
                return None
            too_many, no_cpu, no_memory = flags
            status = statuses[flags] = _fit_status(
                (ERR_TOO_MANY_PODS,) * too_many + ("Insufficient cpu",) * no_cpu
                + ("Insufficient memory",) * no_memory)
        return status
    return fit

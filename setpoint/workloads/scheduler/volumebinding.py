"""kube-scheduler's VolumeBinding plugin: a pod's PersistentVolumeClaims decide where it can
go (pkg/scheduler/framework/plugins/volumebinding, volume_binding.go and binder.go).

- PreFilter: a claim that does not exist, was lost, is being deleted, or (a generic
  ephemeral volume's) belongs to another pod fails the whole cycle, UnschedulableAndUnresolvable,
  in the lister's or the plugin's words; so does a claim of an ``Immediate`` class that the
  PV controller has not bound yet ("pod has unbound immediate PersistentVolumeClaims").
- Filter, per node: a bound claim's volume must exist and its ``nodeAffinity`` admit the
  node; a claim of a ``WaitForFirstConsumer`` class needs an Available volume it matches
  there (the smallest first) or a class that can provision there (a provisioner other than
  ``kubernetes.io/no-provisioner``, ``allowedTopologies`` matching the node's labels).
- PreBind (``BindPodVolumes``): for the chosen node, each matched volume gets the claim's
  ``claimRef`` and each claim to provision the ``volume.kubernetes.io/selected-node``
  annotation; the PV controller and the provisioner do the rest, and the pod is bound once
  every claim is fully bound (``volumeName`` and ``pv.kubernetes.io/bind-completed``).

Capacity tracking (CSIStorageCapacity) and CSI migration are not modelled: no simulated
driver publishes capacity, and every volume here is already what a migration would give.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from setpoint.machinery.labels import from_label_selector
from setpoint.machinery.objects import Obj
from setpoint.machinery.quantity import Quantity
from setpoint.workloads.scheduler.cache import NodeInfo
from setpoint.workloads.scheduler.predicates import Code, Status, node_selector_matches
from setpoint.workloads.volumeclaims import (
    ANN_SELECTED_NODE,
    NOT_SUPPORTED_PROVISIONER,
    claim_class,
    claim_names,
    delay_binding,
    fully_bound,
    volume_class,
    volume_is_for_pod,
)

PLUGIN = "VolumeBinding"

ERR_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
ERR_NODE_CONFLICT = "node(s) had volume node affinity conflict"
ERR_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"


class VolumeObjects(Protocol):
    """What the plugin reads: the scheduler's informers' claims, volumes and classes."""

    def claim(self, namespace: str, name: str) -> Obj | None: ...

    def volume(self, name: str) -> Obj | None: ...

    def volumes(self) -> Iterable[Obj]: ...

    def storage_class(self, name: str) -> Obj | None: ...


def volume_node_affinity_matches(pv: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """``CheckNodeAffinity``: a volume with required node affinity admits only the nodes it
    selects."""
    required = (((pv.get("spec") or {}).get("nodeAffinity") or {}).get("required"))
    if not required:
        return True
    return node_selector_matches(required, {"metadata": {"labels": dict(labels)}})


def topology_matches(terms: Iterable[Mapping[str, Any]] | None,
                     labels: Mapping[str, str]) -> bool:
    """``MatchTopologySelectorTerms``: no terms match every node; else any term whose every
    label expression holds."""
    terms = list(terms or ())
    if not terms:
        return True
    for term in terms:
        expressions = term.get("matchLabelExpressions") or ()
        if all(labels.get(str(e.get("key"))) in (e.get("values") or ()) for e in expressions):
            return True
    return False


def _storage(obj: Mapping[str, Any], path: tuple[str, ...]) -> Quantity:
    value: Any = obj
    for key in path:
        value = (value or {}).get(key)
    return Quantity.parse(str(value or "0"))


def _requested(claim: Mapping[str, Any]) -> Quantity:
    return _storage(claim, ("spec", "resources", "requests", "storage"))


def _bound_to(pv: Mapping[str, Any], claim: Mapping[str, Any]) -> bool:
    """``IsVolumeBoundToClaim``: the volume's claimRef names the claim (its uid, if set)."""
    ref = (pv.get("spec") or {}).get("claimRef") or {}
    meta = claim.get("metadata") or {}
    return bool(ref) and ref.get("name") == meta.get("name") and \
        ref.get("namespace") == meta.get("namespace") and \
        ref.get("uid") in (None, "", meta.get("uid"))


def find_matching_volume(claim: Mapping[str, Any], volumes: Iterable[Obj],
                         labels: Mapping[str, str], excluded: set[str]) -> Obj | None:
    """``FindMatchingVolume`` for the scheduler (a node given, delayed binding): a volume
    pre-bound to the claim first, else the smallest Available one of its class, modes,
    selector and size whose node affinity admits the node."""
    spec = claim.get("spec") or {}
    wanted = _requested(claim)
    modes = set(spec.get("accessModes") or ())
    volume_mode = spec.get("volumeMode") or "Filesystem"
    selector = spec.get("selector")
    matcher = from_label_selector(selector) if selector else None
    best: Obj | None = None
    best_size: Quantity | None = None
    for pv in volumes:
        name = str((pv.get("metadata") or {}).get("name"))
        if name in excluded:
            continue
        pspec = pv.get("spec") or {}
        if (pspec.get("volumeMode") or "Filesystem") != volume_mode:
            continue
        if _bound_to(pv, claim):
            return pv if volume_node_affinity_matches(pv, labels) else None
        size = _storage(pv, ("spec", "capacity", "storage"))
        if size < wanted or pspec.get("claimRef") \
                or (pv.get("status") or {}).get("phase") not in (None, "", "Available") \
                or (pv.get("metadata") or {}).get("deletionTimestamp") \
                or volume_class(pv) != claim_class(claim) \
                or not modes <= set(pspec.get("accessModes") or ()) \
                or (matcher is not None
                    and not matcher.matches((pv.get("metadata") or {}).get("labels") or {})) \
                or not volume_node_affinity_matches(pv, labels):
            continue
        if best_size is None or size < best_size:
            best, best_size = pv, size
    return best


@dataclass
class PodVolumes:
    """What the chosen node needs done before the pod is bound (``PodVolumes``)."""

    static_bindings: list[tuple[Obj, Obj]] = field(default_factory=list)
    """(volume, claim): the volume to take the claim's ``claimRef``."""
    dynamic_provisions: list[Obj] = field(default_factory=list)
    """Claims to annotate with the selected node."""

    def __bool__(self) -> bool:
        return bool(self.static_bindings or self.dynamic_provisions)


class VolumeBindingState:
    """One cycle's PreFilter state: the pod's bound claims and those to bind on a node, or
    why the cycle fails at once (``failure``)."""

    def __init__(self, pod: Mapping[str, Any], objects: VolumeObjects) -> None:
        self.objects = objects
        self.failure: Status | None = None
        self.bound: list[Obj] = []
        self.to_bind: list[Obj] = []
        self.has_claims = False
        namespace = str((pod.get("metadata") or {}).get("namespace") or "")
        claims: list[Obj] = []
        for name, ephemeral in claim_names(pod):
            self.has_claims = True
            claim = objects.claim(namespace, name)
            error = _claim_error(pod, name, claim, ephemeral)
            if error:
                self.failure = Status(Code.UNRESOLVABLE, (error,), PLUGIN)
                return
            assert claim is not None
            claims.append(claim)
        immediate = False
        for claim in claims:
            if fully_bound(claim):
                self.bound.append(claim)
            elif delay_binding(claim, objects) and not (claim.get("spec") or {}).get(
                    "volumeName"):
                self.to_bind.append(claim)
            else:
                immediate = True  # (a pre-bound claim too: the PV controller binds it)
        if immediate:
            self.failure = Status(Code.UNRESOLVABLE, (ERR_UNBOUND_IMMEDIATE,), PLUGIN)
        # the smallest claims choose first (byPVCSize)
        self.to_bind.sort(key=_requested)

    def __repr__(self) -> str:
        return f"VolumeBindingState(bound={len(self.bound)}, to_bind={len(self.to_bind)})"

    @property
    def active(self) -> bool:
        """Whether Filter has anything to check (a pod with no claims skips the plugin)."""
        return bool(self.bound or self.to_bind)

    def filter(self, node: NodeInfo) -> Status | None:
        reasons, _ = self.find_pod_volumes(node)
        return Status(Code.UNRESOLVABLE, reasons, PLUGIN) if reasons else None

    def find_pod_volumes(self, node: NodeInfo) -> tuple[tuple[str, ...], PodVolumes]:
        """``FindPodVolumes``: the reasons the node does not fit (in Go's order), and what
        binding the pod there would take."""
        labels = node.labels
        bound_satisfied = pvs_found = unbound_satisfied = True
        found = PodVolumes()
        for claim in self.bound:
            pv = self.objects.volume(str(claim["spec"]["volumeName"]))
            if pv is None:
                pvs_found = False
                break
            if not volume_node_affinity_matches(pv, labels):
                bound_satisfied = False
                break
        to_provision: list[Obj] = []
        to_match: list[Obj] = []
        for claim in self.to_bind:
            selected = ((claim.get("metadata") or {}).get("annotations") or {}).get(
                ANN_SELECTED_NODE)
            if selected is not None:
                if selected != node.name:
                    unbound_satisfied = False
                    to_provision = to_match = []
                    break
                to_provision.append(claim)
            else:
                to_match.append(claim)
        chosen: set[str] = set()
        volumes = list(self.objects.volumes()) if to_match else []
        for claim in to_match:
            pv = find_matching_volume(claim, volumes, labels, chosen)
            if pv is None:
                unbound_satisfied = False
                to_provision.append(claim)
                continue
            chosen.add(str(pv["metadata"]["name"]))
            found.static_bindings.append((pv, claim))
        if to_provision:
            unbound_satisfied = self._can_provision(to_provision, labels)
            if unbound_satisfied:
                found.dynamic_provisions = to_provision
        reasons = []
        if not bound_satisfied:
            reasons.append(ERR_NODE_CONFLICT)
        if not unbound_satisfied:
            reasons.append(ERR_BIND_CONFLICT)
        if not pvs_found:
            reasons.append(ERR_PV_NOT_EXIST)
        return tuple(reasons), found

    def _can_provision(self, claims: list[Obj], labels: Mapping[str, str]) -> bool:
        """``checkVolumeProvisions``: every claim's class provisions, and may on this node."""
        for claim in claims:
            storage_class = self.objects.storage_class(claim_class(claim))
            if storage_class is None:
                return False
            provisioner = storage_class.get("provisioner") or ""
            if not provisioner or provisioner == NOT_SUPPORTED_PROVISIONER:
                return False
            if not topology_matches(storage_class.get("allowedTopologies"), labels):
                return False
        return True


def _claim_error(pod: Mapping[str, Any], name: str, claim: Obj | None,
                 ephemeral: bool) -> str:
    """``podHasPVCs``'s refusals, in its words (the lister's NotFound for a missing claim)."""
    if claim is None:
        if ephemeral:
            return "waiting for ephemeral volume controller to create the " \
                   f'persistentvolumeclaim "{name}"'
        return f'persistentvolumeclaim "{name}" not found'
    if (claim.get("status") or {}).get("phase") == "Lost":
        volume = (claim.get("spec") or {}).get("volumeName") or ""
        return f'persistentvolumeclaim "{name}" bound to non-existent persistentvolume ' \
               f'"{volume}"'
    if (claim.get("metadata") or {}).get("deletionTimestamp"):
        return f'persistentvolumeclaim "{name}" is being deleted'
    if ephemeral:
        return volume_is_for_pod(pod, claim)
    return ""

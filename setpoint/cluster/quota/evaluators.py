"""What an object charges to quota, and which quotas it falls under.

The evaluators of kube-apiserver's and kube-controller-manager's quota registry
(kubernetes v1.32 pkg/quota/v1/evaluator/core/registry.go ``NewEvaluators``): pods
(pods.go), services (services.go), persistent volume claims (persistent_volume_claims.go),
and the object count evaluator of k8s.io/apiserver/pkg/quota/v1/generic/evaluator.go for
every other resource (``count/<resource>.<group>``), with the legacy aliases ``configmaps``,
``secrets``, ``resourcequotas`` and ``replicationcontrollers``.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from setpoint.cluster.quota import resources as rl
from setpoint.cluster.quota.resources import ResourceList
from setpoint.cluster.registry.conversion import SHARED_STORAGE
from setpoint.machinery.objects import Obj
from setpoint.machinery.quantity import Quantity

ONE = Quantity.from_int(1)
REQUESTS_PREFIX = "requests."
STORAGE_CLASS_SUFFIX = ".storageclass.storage.k8s.io/"

# pods.go: podResources, podResourcePrefixes, requestedResourcePrefixes, validationSet
POD_RESOURCES = frozenset({
    "count/pods", "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory",
    "requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage",
    "pods"})
POD_RESOURCE_PREFIXES = ("hugepages-", "requests.hugepages-")
REQUESTED_RESOURCE_PREFIXES = ("hugepages-",)
VALIDATION_SET = frozenset({"requests.cpu", "requests.memory", "limits.cpu", "limits.memory",
                            "cpu", "memory"})
SERVICE_RESOURCES = frozenset({"count/services", "services", "services.loadbalancers",
                               "services.nodeports"})
PVC_RESOURCES = frozenset({"persistentvolumeclaims", "count/persistentvolumeclaims",
                           "requests.storage"})
# registry.go: legacyObjectCountAliases
LEGACY_ALIASES = {"configmaps": "configmaps", "resourcequotas": "resourcequotas",
                  "replicationcontrollers": "replicationcontrollers", "secrets": "secrets"}


def object_count_name(group: str, resource: str) -> str:
    """``generic.ObjectCountQuotaResourceNameFor``: ``count/<resource>[.<group>]``."""
    return f"count/{resource}.{group}" if group else f"count/{resource}"


def scope_selectors(quota: Obj) -> list[Obj]:
    """``getScopeSelectorsFromQuota``: each scope as an Exists selector, then scopeSelector's
    expressions."""
    spec = quota.get("spec") or {}
    out: list[Obj] = [{"scopeName": s, "operator": "Exists"} for s in spec.get("scopes") or []]
    out += (spec.get("scopeSelector") or {}).get("matchExpressions") or []
    return out


class Evaluator:
    """The object count evaluator (generic/evaluator.go ``objectCountEvaluator``): one per
    object, charged on create, in no scope."""

    operations: frozenset[str] = frozenset({"CREATE"})

    def __init__(self, group: str, resource: str) -> None:
        self.group = group
        self.resource = resource
        # (events.k8s.io Events are stored as core Events)
        self.storage_key = SHARED_STORAGE.get((group, resource), f"{group}/{resource}")
        self._names = [object_count_name(group, resource)]
        if not group and resource in LEGACY_ALIASES:
            self._names.append(LEGACY_ALIASES[resource])

    def handles(self, operation: str, subresource: str = "") -> bool:
        """``Handles``: since 1.32 the admission plugin no longer skips subresources itself
        (k8s.io/apiserver v0.32.0 admission.go ``Validate``); each evaluator does, the object
        count one (generic/evaluator.go) for every subresource."""
        return not subresource and operation in self.operations

    def matching_resources(self, names: Iterable[str]) -> list[str]:
        return [n for n in names if n in self._names]

    def matches_scope(self, selector: Obj, obj: Obj) -> bool:
        del selector, obj
        return False  # MatchesNoScopeFunc

    def usage(self, obj: Obj) -> ResourceList:
        del obj
        return dict.fromkeys(self._names, ONE)

    def constraints(self, required: list[str], obj: Obj) -> str | None:
        del required, obj
        return None

    def matches(self, quota: Obj, obj: Obj) -> bool:
        """generic.Matches: the quota limits one of this evaluator's resources and every one
        of its scope selectors matches."""
        hard = (quota.get("status") or {}).get("hard") or {}
        if not self.matching_resources(hard):
            return False
        return all(self.matches_scope(s, obj) for s in scope_selectors(quota))

    def matches_scopes(self, quota: Obj, obj: Obj) -> bool:
        """CalculateUsageStats's scope check of a listed object."""
        return all(self.matches_scope(s, obj) for s in scope_selectors(quota))


# -- pods ----------------------------------------------------------------------------------

def is_terminal(pod: Obj) -> bool:
    """Not ``QuotaV1Pod``: Failed or Succeeded, or past its deletion grace period."""
    if (pod.get("status") or {}).get("phase") in ("Failed", "Succeeded"):
        return True
    meta = pod.get("metadata") or {}
    deletion, grace = meta.get("deletionTimestamp"), meta.get("deletionGracePeriodSeconds")
    if deletion and grace is not None:
        when = datetime.fromisoformat(str(deletion).replace("Z", "+00:00"))
        return datetime.now(UTC) > when + timedelta(seconds=int(grace))
    return False


def _container_resources(c: Obj, which: str) -> ResourceList:
    return rl.parse((c.get("resources") or {}).get(which))


def _max_into(into: ResourceList, other: ResourceList) -> None:
    for name, q in other.items():
        if name not in into or q.cmp(into[name]) > 0:
            into[name] = q


def _in_place_resources(pod: Obj, c: Obj, which: str) -> ResourceList:
    """A regular container's share with ``UseStatusResources`` (InPlacePodVerticalScaling on,
    as PodUsageFunc passes it in 1.32): while its status reports ``resources``, the larger of
    what the spec asks and what is applied, or only what is applied once the resize is
    ``Infeasible``; so a pending resize is charged at its larger side."""
    own = _container_resources(c, which)
    status = pod.get("status") or {}
    for cs in status.get("containerStatuses") or []:
        if isinstance(cs, dict) and cs.get("name") == c.get("name"):
            applied = cs.get("resources")
            if not isinstance(applied, dict):
                return own
            actual = rl.parse(applied.get(which))
            if status.get("resize") == "Infeasible":
                return actual
            _max_into(own, actual)
            return own
    return own


def aggregate_container_resources(pod: Obj, which: str) -> ResourceList:
    """``AggregateContainerRequests`` / ``AggregateContainerLimits``
    (k8s.io/component-helpers/resource/helpers.go): the sum over containers (each as
    :func:`_in_place_resources` counts it), with restartable init containers (sidecars)
    added, raised to the largest init container's need."""
    spec = pod.get("spec") or {}
    total: ResourceList = {}
    for c in spec.get("containers") or []:
        total = rl.add(total, _in_place_resources(pod, c, which))
    sidecars: ResourceList = {}
    init: ResourceList = {}
    for c in spec.get("initContainers") or []:
        own = _container_resources(c, which)
        if c.get("restartPolicy") == "Always":
            total = rl.add(total, own)
            sidecars = rl.add(sidecars, own)
            need = sidecars
        else:
            need = rl.add(own, sidecars)
        _max_into(init, need)
    _max_into(total, init)
    return total


def pod_requests(pod: Obj) -> ResourceList:
    """``PodRequests``: the containers' requests plus the pod overhead."""
    overhead = rl.parse((pod.get("spec") or {}).get("overhead"))
    return rl.add(aggregate_container_resources(pod, "requests"), overhead)


def pod_limits(pod: Obj) -> ResourceList:
    """``PodLimits``: the overhead is added only to limits that are set."""
    limits = aggregate_container_resources(pod, "limits")
    for name, q in rl.parse((pod.get("spec") or {}).get("overhead")).items():
        if name in limits:
            limits[name] = limits[name] + q
    return limits


def _extended(name: str) -> bool:
    """``helper.IsExtendedResourceName``: a qualified name outside kubernetes.io, not
    ``requests.``-prefixed."""
    if "/" not in name or name.startswith(REQUESTS_PREFIX):
        return False
    domain = name.split("/", 1)[0]
    return not (domain == "kubernetes.io" or domain.endswith(".kubernetes.io"))


def pod_compute_usage(requests: ResourceList, limits: ResourceList) -> ResourceList:
    """``podComputeUsageHelper``."""
    out: ResourceList = {"pods": ONE}
    for name in ("cpu", "memory", "ephemeral-storage"):
        if name in requests:
            out[name] = requests[name]
            out[REQUESTS_PREFIX + name] = requests[name]
        if name in limits:
            out["limits." + name] = limits[name]
    for name, q in requests.items():
        if name.startswith(REQUESTED_RESOURCE_PREFIXES):
            out[name] = q
            out[REQUESTS_PREFIX + name] = q
        if _extended(name):
            out[REQUESTS_PREFIX + name] = q
    return out


def best_effort(pod: Obj) -> bool:
    """``qos.GetPodQOS(pod) == BestEffort``: no container asks for or limits cpu or memory."""
    qos = (pod.get("status") or {}).get("qosClass")
    if qos:
        return bool(qos == "BestEffort")
    spec = pod.get("spec") or {}
    for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        for which in ("requests", "limits"):
            for name, q in _container_resources(c, which).items():
                if name in ("cpu", "memory") and q.sign() > 0:
                    return False
    return True


def _cross_namespace_affinity(pod: Obj) -> bool:
    """``usesCrossNamespacePodAffinity``: an affinity term naming namespaces or a selector."""
    affinity = (pod.get("spec") or {}).get("affinity") or {}
    for kind in ("podAffinity", "podAntiAffinity"):
        rules = affinity.get(kind) or {}
        terms = list(rules.get("requiredDuringSchedulingIgnoredDuringExecution") or [])
        terms += [w.get("podAffinityTerm") or {}
                  for w in rules.get("preferredDuringSchedulingIgnoredDuringExecution") or []]
        if any(t.get("namespaces") or t.get("namespaceSelector") is not None for t in terms):
            return True
    return False


def _selector_matches(selector: Obj, value: str) -> bool:
    """``ScopedResourceSelectorRequirementsAsSelector`` matched against the one-label set
    {scopeName: value} (the key is always present)."""
    operator, values = selector.get("operator"), selector.get("values") or []
    if operator == "In":
        return value in values
    if operator == "NotIn":
        return value not in values
    return operator == "Exists"


class PodEvaluator(Evaluator):
    """pods.go ``podEvaluator``: charged on create and on a ``pods/resize`` update."""

    def __init__(self) -> None:
        super().__init__("", "pods")
        self._names = ["count/pods"]

    def matching_resources(self, names: Iterable[str]) -> list[str]:
        return [n for n in names if n in POD_RESOURCES or n.startswith(POD_RESOURCE_PREFIXES)
                or (n.startswith(REQUESTS_PREFIX) and _extended(n[len(REQUESTS_PREFIX):]))]

    def handles(self, operation: str, subresource: str = "") -> bool:
        """``Handles`` (v1.32): the pod itself on CREATE, ``pods/resize`` on UPDATE, no other
        subresource (binding, eviction, status, ephemeralcontainers)."""
        if subresource == "resize":
            return operation == "UPDATE"
        return not subresource and operation == "CREATE"

    def matches_scope(self, selector: Obj, obj: Obj) -> bool:
        """``podMatchesScopeFunc``."""
        scope, spec = selector.get("scopeName"), obj.get("spec") or {}
        deadline = spec.get("activeDeadlineSeconds")
        terminating = isinstance(deadline, int) and deadline >= 0
        if scope == "Terminating":
            return terminating
        if scope == "NotTerminating":
            return not terminating
        if scope == "BestEffort":
            return best_effort(obj)
        if scope == "NotBestEffort":
            return not best_effort(obj)
        if scope == "PriorityClass":
            name = str(spec.get("priorityClassName") or "")
            if selector.get("operator") == "Exists":
                return bool(name)
            return _selector_matches(selector, name)
        if scope == "CrossNamespacePodAffinity":
            return _cross_namespace_affinity(obj)
        return False

    def usage(self, obj: Obj) -> ResourceList:
        """``PodUsageFunc``: count/pods always; the compute resources while not terminal."""
        out: ResourceList = {"count/pods": ONE}
        if is_terminal(obj):
            return out
        return rl.add(out, pod_compute_usage(pod_requests(obj), pod_limits(obj)))

    def constraints(self, required: list[str], obj: Obj) -> str | None:
        """``Constraints``: with cpu or memory quota'd, each container names its own."""
        required_set = set(required) & VALIDATION_SET
        missing: dict[str, set[str]] = {}
        spec = obj.get("spec") or {}
        for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
            have = pod_compute_usage(_container_resources(c, "requests"),
                                     _container_resources(c, "limits"))
            for name in required_set - have.keys():
                missing.setdefault(name, set()).add(str(c.get("name") or ""))
        if not missing:
            return None
        return "must specify " + "; ".join(
            f"{name} for: {','.join(sorted(missing[name]))}" for name in sorted(missing))


# -- services ------------------------------------------------------------------------------

class ServiceEvaluator(Evaluator):
    """services.go ``serviceEvaluator``: charged on create and update (a type change)."""

    operations = frozenset({"CREATE", "UPDATE"})

    def __init__(self) -> None:
        super().__init__("", "services")

    def matching_resources(self, names: Iterable[str]) -> list[str]:
        return [n for n in names if n in SERVICE_RESOURCES]

    def usage(self, obj: Obj) -> ResourceList:
        spec = obj.get("spec") or {}
        ports = spec.get("ports") or []
        zero = Quantity.from_int(0)
        out: ResourceList = {"count/services": ONE, "services": ONE,
                             "services.loadbalancers": zero, "services.nodeports": zero}
        kind = spec.get("type")
        if kind == "NodePort":
            out["services.nodeports"] = Quantity.from_int(len(ports))
        elif kind == "LoadBalancer":
            if spec.get("allocateLoadBalancerNodePorts") is False:
                explicit = sum(1 for p in ports if p.get("nodePort"))
                out["services.nodeports"] = Quantity.from_int(explicit)
            else:
                out["services.nodeports"] = Quantity.from_int(len(ports))
            out["services.loadbalancers"] = ONE
        return out


# -- persistent volume claims --------------------------------------------------------------

def claim_class(pvc: Obj) -> str:
    """``storagehelpers.GetPersistentVolumeClaimClass``: the beta annotation, then the spec."""
    annotations = (pvc.get("metadata") or {}).get("annotations") or {}
    if "volume.beta.kubernetes.io/storage-class" in annotations:
        return str(annotations["volume.beta.kubernetes.io/storage-class"])
    return str((pvc.get("spec") or {}).get("storageClassName") or "")


class PersistentVolumeClaimEvaluator(Evaluator):
    """persistent_volume_claims.go ``pvcEvaluator``: charged on create and update (an
    expansion)."""

    operations = frozenset({"CREATE", "UPDATE"})

    def __init__(self) -> None:
        super().__init__("", "persistentvolumeclaims")

    def matching_resources(self, names: Iterable[str]) -> list[str]:
        return [n for n in names if n in PVC_RESOURCES or (
            STORAGE_CLASS_SUFFIX in n and n.endswith(("/persistentvolumeclaims",
                                                      "/requests.storage")))]

    def usage(self, obj: Obj) -> ResourceList:
        out: ResourceList = {"count/persistentvolumeclaims": ONE, "persistentvolumeclaims": ONE}
        cls = claim_class(obj)
        if cls:
            out[cls + STORAGE_CLASS_SUFFIX + "persistentvolumeclaims"] = ONE
        requests = rl.parse(((obj.get("spec") or {}).get("resources") or {}).get("requests"))
        if "storage" in requests:
            out["requests.storage"] = requests["storage"]
            if cls:
                out[cls + STORAGE_CLASS_SUFFIX + "requests.storage"] = requests["storage"]
        return out


_SPECIAL: dict[tuple[str, str], Evaluator] = {
    ("", "pods"): PodEvaluator(),
    ("", "services"): ServiceEvaluator(),
    ("", "persistentvolumeclaims"): PersistentVolumeClaimEvaluator(),
}
_GENERIC: dict[tuple[str, str], Evaluator] = {}


def evaluator_for(group: str, resource: str) -> Evaluator:
    """The registry's evaluator of a group resource: a special one, else an object count
    evaluator made on first use (controller.go ``Evaluate``)."""
    key = (group, resource)
    found = _SPECIAL.get(key) or _GENERIC.get(key)
    if found is None:
        found = _GENERIC[key] = Evaluator(group, resource)
    return found


def evaluators_for_names(names: Iterable[str]) -> list[Evaluator]:
    """The evaluators one of ``names`` concerns (for the controller's CalculateUsage): the
    special ones, the legacy aliases, and the group resource of each ``count/`` name."""
    names = list(names)
    out = [e for e in _SPECIAL.values() if e.matching_resources(names)]
    wanted: set[tuple[str, str]] = set()
    for name in names:
        if name in LEGACY_ALIASES.values():
            wanted.add(("", name))
        elif name.startswith("count/"):
            resource, _, group = name[len("count/"):].partition(".")
            wanted.add((group, resource))
    out += [evaluator_for(g, r) for g, r in sorted(wanted) if (g, r) not in _SPECIAL]
    return out


def hard_of(quota: Obj) -> dict[str, Any]:
    return (quota.get("status") or {}).get("hard") or {}

"""LimitRanger: the LimitRanges of a namespace default and bound container resources.

A port of plugin/pkg/admission/limitranger (``DefaultLimitRangerActions``), both halves, for
pods on CREATE (their containers are immutable afterwards) and claims on CREATE and UPDATE,
never subresources nor objects being deleted:

- mutating (pods): each LimitRange's ``Container`` items give ``default`` limits and
  ``defaultRequest`` requests to every container and init container lacking them; what was
  set is recorded in the ``kubernetes.io/limit-ranger`` annotation
  (``mergePodResourceRequirements``).
- validating: ``Container`` items' ``min``, ``max`` and ``maxLimitRequestRatio`` against each
  container, ``Pod`` items' against the pod's totals (``podRequests``/``podLimits``: the
  containers and sidecars summed, at least the largest one-off init container with the
  sidecars started before it), ``PersistentVolumeClaim`` items' ``min``/``max`` against a
  claim's requests; the first LimitRange with a violation refuses the write (403) with every
  violation it found.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from setpoint.cluster.admission.forbidden import new_forbidden
from setpoint.cluster.registry.admissionpoints import Attributes
from setpoint.machinery.objects import Obj
from setpoint.machinery.quantity import Quantity, QuantityError

if TYPE_CHECKING:
    from setpoint.cluster.storage import Store

LIMIT_RANGES = "/limitranges"
LIMIT_RANGER_ANNOTATION = "kubernetes.io/limit-ranger"
# resource.MaxMilliValue: the largest value whose milli-value fits an int64
MAX_MILLI_VALUE = (2 ** 63 - 1) // 1000


def _quantity(value: Any) -> Quantity | None:
    try:
        return Quantity.parse(str(value))
    except QuantityError:
        return None


def _merge_container(container: Obj, limits: Obj, requests: Obj, prefix: str) -> list[str]:
    """``mergeContainerResources``: the defaults the container lacks; what was set."""
    resources = container.get("resources")
    if not isinstance(resources, dict):
        resources = {}
    notes = []
    for key, defaults, what in (("requests", requests, "request"), ("limits", limits, "limit")):
        have = resources.get(key) or {}
        added = sorted(k for k in defaults if k not in have)
        if added:
            resources[key] = dict(sorted({**have, **{k: defaults[k] for k in added}}.items()))
            notes.append((what, added))
    if notes:
        container["resources"] = resources
    # requests before limits, as Go appends them
    return [f"{', '.join(names)} {what} for {prefix} {container.get('name', '')}"
            for what, names in notes]


def mutate_pod(limit_range: Obj, pod: Obj) -> None:
    """``PodMutateLimitFunc``."""
    limits: Obj = {}
    requests: Obj = {}
    for item in (limit_range.get("spec") or {}).get("limits") or []:
        if item.get("type") == "Container":
            requests.update(item.get("defaultRequest") or {})
            limits.update(item.get("default") or {})
    spec = pod.get("spec") or {}
    notes: list[str] = []
    for key, prefix in (("containers", "container"), ("initContainers", "init container")):
        for container in spec.get(key) or []:
            if isinstance(container, dict):
                notes += _merge_container(container, limits, requests, prefix)
    if notes:
        meta = pod["metadata"]
        meta["annotations"] = {**(meta.get("annotations") or {}),
                               LIMIT_RANGER_ANNOTATION: "LimitRanger plugin set: "
                                                        + "; ".join(notes)}


def _observed(req: Quantity | None, lim: Quantity | None,
              enforced: Quantity) -> tuple[int, int, int]:
    """``requestLimitEnforcedValues``: milli-values unless one is too large for them."""
    quantities = [q for q in (req, lim, enforced) if q is not None]
    if all(q.value() <= MAX_MILLI_VALUE for q in quantities):
        return (req.milli_value() if req else 0, lim.milli_value() if lim else 0,
                enforced.milli_value())
    return (req.value() if req else 0, lim.value() if lim else 0, enforced.value())


def _min(kind: str, name: str, enforced: Quantity, requests: Obj, limits: Obj) -> str | None:
    req, lim = _quantity(requests[name]) if name in requests else None, \
        _quantity(limits[name]) if name in limits else None
    observed_req, observed_lim, value = _observed(req, lim, enforced)
    if name not in requests:
        return f"minimum {name} usage per {kind} is {enforced}.  No request is specified"
    if observed_req < value:
        return f"minimum {name} usage per {kind} is {enforced}, but request is {req}"
    if name in limits and observed_lim < value:
        return f"minimum {name} usage per {kind} is {enforced}, but limit is {lim}"
    return None


def _max(kind: str, name: str, enforced: Quantity, requests: Obj, limits: Obj) -> str | None:
    req, lim = _quantity(requests[name]) if name in requests else None, \
        _quantity(limits[name]) if name in limits else None
    observed_req, observed_lim, value = _observed(req, lim, enforced)
    if name not in limits:
        return f"maximum {name} usage per {kind} is {enforced}.  No limit is specified"
    if observed_lim > value:
        return f"maximum {name} usage per {kind} is {enforced}, but limit is {lim}"
    if name in requests and observed_req > value:
        return f"maximum {name} usage per {kind} is {enforced}, but request is {req}"
    return None


def _max_request(kind: str, name: str, enforced: Quantity, requests: Obj) -> str | None:
    req = _quantity(requests[name]) if name in requests else None
    observed_req, _, value = _observed(req, None, enforced)
    if name not in requests:
        return f"maximum {name} usage per {kind} is {enforced}.  No request is specified"
    if observed_req > value:
        return f"maximum {name} usage per {kind} is {enforced}, but request is {req}"
    return None


def _ratio(kind: str, name: str, enforced: Quantity, requests: Obj, limits: Obj) -> str | None:
    req, lim = _quantity(requests[name]) if name in requests else None, \
        _quantity(limits[name]) if name in limits else None
    observed_req, observed_lim, _ = _observed(req, lim, enforced)
    if req is None or observed_req == 0:
        return (f"{name} max limit to request ratio per {kind} is {enforced}, but no request "
                "is specified or request is 0")
    if lim is None or observed_lim == 0:
        return (f"{name} max limit to request ratio per {kind} is {enforced}, but no limit is "
                "specified or limit is 0")
    ratio = shown = observed_lim / observed_req
    maximum = float(enforced.value())
    if enforced.value() <= MAX_MILLI_VALUE:
        ratio, maximum = ratio * 1000, float(enforced.milli_value())
    if ratio > maximum:
        return (f"{name} max limit to request ratio per {kind} is {enforced}, but provided "
                f"ratio is {shown:f}")
    return None


def _bounds(item: Obj, key: str) -> Iterable[tuple[str, Quantity]]:
    for name, value in (item.get(key) or {}).items():
        quantity = _quantity(value)
        if quantity is not None:
            yield name, quantity


def _parsed(resources: Any) -> dict[str, Quantity]:
    if not isinstance(resources, dict):
        return {}
    return {name: q for name, value in resources.items()
            if (q := _quantity(value)) is not None}


def _add_resources(total: dict[str, Quantity], resources: dict[str, Quantity]) -> None:
    """``addResourceList``: each quantity added to the total of its name."""
    for name, quantity in resources.items():
        total[name] = total[name] + quantity if name in total else quantity


def _max_resources(total: dict[str, Quantity], resources: dict[str, Quantity]) -> None:
    """``maxResourceList``: each quantity kept where larger than the total's."""
    for name, quantity in resources.items():
        if name not in total or quantity.cmp(total[name]) > 0:
            total[name] = quantity


def pod_totals(spec: Obj, key: str) -> Obj:
    """``podRequests`` (key ``requests``) and ``podLimits`` (``limits``) over the spec alone
    (no status on a CREATE; pod-level resources and in-place resize are off in 1.32): the
    regular containers and the sidecars (init containers with ``restartPolicy: Always``)
    summed, raised to the largest need while one-off init containers run, each with the
    sidecars started before it."""
    total: dict[str, Quantity] = {}
    for container in spec.get("containers") or []:
        _add_resources(total, _parsed(_resources(container).get(key)))
    sidecars: dict[str, Quantity] = {}
    init_peak: dict[str, Quantity] = {}
    for container in spec.get("initContainers") or []:
        own = _parsed(_resources(container).get(key))
        if isinstance(container, dict) and container.get("restartPolicy") == "Always":
            _add_resources(total, own)
            _add_resources(sidecars, own)
            _max_resources(init_peak, sidecars)
        else:
            running: dict[str, Quantity] = {}
            _add_resources(running, own)
            _add_resources(running, sidecars)
            _max_resources(init_peak, running)
    _max_resources(total, init_peak)
    return {name: str(quantity) for name, quantity in total.items()}


def _resources(container: Any) -> Obj:
    resources = container.get("resources") if isinstance(container, dict) else None
    return resources if isinstance(resources, dict) else {}


def _check_item(item: Obj, kind: str, requests: Obj, limits: Obj) -> list[str]:
    """An item's ``min``, ``max`` and ``maxLimitRequestRatio`` against requests and limits."""
    errs = [e for n, q in _bounds(item, "min") if (e := _min(kind, n, q, requests, limits))]
    errs += [e for n, q in _bounds(item, "max") if (e := _max(kind, n, q, requests, limits))]
    errs += [e for n, q in _bounds(item, "maxLimitRequestRatio")
             if (e := _ratio(kind, n, q, requests, limits))]
    return errs


def validate_pod(limit_range: Obj, pod: Obj) -> list[str]:
    """``PodValidateLimitFunc``: per item, its Container bounds against each container and
    init container, its Pod bounds against the pod's totals."""
    errs: list[str] = []
    spec = pod.get("spec") or {}
    for item in (limit_range.get("spec") or {}).get("limits") or []:
        if item.get("type") == "Pod":
            errs += _check_item(item, "Pod", pod_totals(spec, "requests"),
                                pod_totals(spec, "limits"))
            continue
        if item.get("type") != "Container":
            continue
        for key in ("containers", "initContainers"):
            for container in spec.get(key) or []:
                resources = _resources(container)
                errs += _check_item(item, "Container", resources.get("requests") or {},
                                    resources.get("limits") or {})
    return errs


def validate_claim(limit_range: Obj, claim: Obj) -> list[str]:
    """``PersistentVolumeClaimValidateLimitFunc``: the claim's limits are not user input."""
    errs: list[str] = []
    requests = ((claim.get("spec") or {}).get("resources") or {}).get("requests") or {}
    for item in (limit_range.get("spec") or {}).get("limits") or []:
        if item.get("type") != "PersistentVolumeClaim":
            continue
        errs += filter(None, (_min("PersistentVolumeClaim", n, q, requests, {})
                              for n, q in _bounds(item, "min")))
        errs += filter(None, (_max_request("PersistentVolumeClaim", n, q, requests)
                              for n, q in _bounds(item, "max")))
    return errs


def _aggregate(errs: list[str]) -> str:
    """``utilerrors.NewAggregate(errs).Error()``."""
    return errs[0] if len(errs) == 1 else f"[{', '.join(errs)}]"


class LimitRanger:
    """Both halves of the plugin: :meth:`admit` (mutating), :meth:`validate`."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def __repr__(self) -> str:
        return "LimitRanger()"

    def _limit_ranges(self, attributes: Attributes) -> list[Obj]:
        """The namespace's LimitRanges when the plugin handles the write (``runLimitFunc``)."""
        rt, operation = attributes.rt, attributes.operation
        if attributes.subresource or rt.group or operation not in ("CREATE", "UPDATE"):
            return []
        if not (rt.resource == "persistentvolumeclaims"
                or (rt.resource == "pods" and operation == "CREATE")):
            return []
        if attributes.old is not None and attributes.old["metadata"].get("deletionTimestamp"):
            return []
        namespace = attributes.obj["metadata"].get("namespace") or ""
        return self._store.list(LIMIT_RANGES, namespace)

    def admit(self, attributes: Attributes) -> None:
        if attributes.rt.resource != "pods":
            return
        for limit_range in self._limit_ranges(attributes):
            mutate_pod(limit_range, attributes.obj)

    def validate(self, attributes: Attributes) -> None:
        check = validate_pod if attributes.rt.resource == "pods" else validate_claim
        for limit_range in self._limit_ranges(attributes):
            errs = check(limit_range, attributes.obj)
            if errs:
                raise new_forbidden(attributes.rt, attributes.obj, _aggregate(errs))

"""RuntimeClass: a pod naming a RuntimeClass gets its overhead and scheduling constraints.

A port of plugin/pkg/admission/runtimeclass (CREATE of pods only, not subresources), both
halves:

- mutating: a pod whose ``spec.runtimeClassName`` names no RuntimeClass is refused (403,
  ``pod rejected: RuntimeClass "x" not found``); the class's ``overhead.podFixed`` becomes
  ``spec.overhead`` (refused when the pod already sets a different one); its
  ``scheduling.nodeSelector`` is merged into the pod's (refused on a conflicting value) and
  its ``scheduling.tolerations`` merged with the pod's by ``tolerations.MergeTolerations``.
- validating: the pod's overhead must still equal the class's, and a pod without a class
  with overhead may not set one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from setpoint.cluster.admission.forbidden import new_forbidden
from setpoint.cluster.registry.admissionpoints import Attributes
from setpoint.cluster.registry.types import ResourceType
from setpoint.machinery.objects import Obj
from setpoint.machinery.quantity import Quantity, QuantityError

if TYPE_CHECKING:
    from setpoint.cluster.storage import Store

RUNTIME_CLASSES = "node.k8s.io/runtimeclasses"
OVERHEAD_MISMATCH = "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"
OVERHEAD_WITHOUT_CLASS = ("pod rejected: Pod Overhead set without corresponding RuntimeClass "
                          "defined Overhead")


def _same_resources(a: Obj | None, b: Obj | None) -> bool:
    """``apiequality.Semantic.DeepEqual`` of two ResourceLists: quantities by value."""
    if a is None or b is None:
        return a is None and b is None
    if set(a) != set(b):
        return False
    try:
        return all(Quantity.parse(str(a[k])) == Quantity.parse(str(b[k])) for k in a)
    except QuantityError:
        return a == b


def _is_superset(ss: Obj, t: Obj) -> bool:
    """pkg/util/tolerations ``isSuperset``: whether ``ss`` tolerates all ``t`` does."""
    if ss == t:
        return True
    if t.get("key", "") != ss.get("key", "") and (
            ss.get("key", "") != "" or ss.get("operator", "") != "Exists"):
        return False
    if t.get("effect", "") != ss.get("effect", "") and ss.get("effect", "") != "":
        return False
    if ss.get("effect") == "NoExecute" and ss.get("tolerationSeconds") is not None and (
            t.get("tolerationSeconds") is None
            or t["tolerationSeconds"] > ss["tolerationSeconds"]):
        return False
    operator = ss.get("operator", "")
    if operator in ("Equal", ""):
        return bool(t.get("operator") == "Equal"
                    and t.get("value", "") == ss.get("value", ""))
    return bool(operator == "Exists")


def merge_tolerations(first: list[Obj], second: list[Obj]) -> list[Obj]:
    """pkg/util/tolerations ``MergeTolerations``: both lists, without the tolerations another
    one covers (of equal ones the first is kept)."""
    every = [*first, *second]
    merged: list[Obj] = []
    for i, t in enumerate(every):
        if any(_is_superset(kept, t) for kept in merged):
            continue
        if any(t != later and _is_superset(later, t) for later in every[i + 1:]):
            continue
        merged.append(t)
    return merged


class RuntimeClassAdmission:
    """Both halves of the plugin: :meth:`admit` (mutating), :meth:`validate`."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def __repr__(self) -> str:
        return "RuntimeClass()"

    def _prepare(self, attributes: Attributes) -> tuple[Obj, Obj | None] | None:
        """The pod and its RuntimeClass (None without one), or None when not handled."""
        rt = attributes.rt
        if (attributes.operation != "CREATE" or attributes.subresource or rt.group
                or rt.resource != "pods"):
            return None
        pod = attributes.obj
        spec = pod.get("spec")
        if not isinstance(spec, dict):
            return None
        class_name = spec.get("runtimeClassName")
        if class_name is None:
            return pod, None
        runtime_class = self._store.get(RUNTIME_CLASSES, "", str(class_name))
        if runtime_class is None:
            raise new_forbidden(rt, pod, f'pod rejected: RuntimeClass "{class_name}" not found')
        return pod, runtime_class

    def admit(self, attributes: Attributes) -> None:
        prepared = self._prepare(attributes)
        if prepared is None or prepared[1] is None:
            return
        pod, runtime_class = prepared
        assert runtime_class is not None
        _set_overhead(attributes.rt, pod, runtime_class)
        _set_scheduling(attributes.rt, pod, runtime_class)

    def validate(self, attributes: Attributes) -> None:
        prepared = self._prepare(attributes)
        if prepared is None:
            return
        pod, runtime_class = prepared
        overhead = pod["spec"].get("overhead")
        class_overhead = (runtime_class or {}).get("overhead")
        if class_overhead is not None:
            if not _same_resources(class_overhead.get("podFixed"), overhead):
                raise new_forbidden(attributes.rt, pod, OVERHEAD_MISMATCH)
        elif overhead is not None:
            raise new_forbidden(attributes.rt, pod, OVERHEAD_WITHOUT_CLASS)


def _set_overhead(rt: ResourceType, pod: Obj, runtime_class: Obj) -> None:
    class_overhead = runtime_class.get("overhead")
    if class_overhead is None:
        return
    fixed = class_overhead.get("podFixed")
    spec = pod["spec"]
    if spec.get("overhead") is not None and not _same_resources(fixed, spec["overhead"]):
        raise new_forbidden(rt, pod, OVERHEAD_MISMATCH)
    if fixed is None:
        spec.pop("overhead", None)
    else:
        spec["overhead"] = dict(fixed)


def _set_scheduling(rt: ResourceType, pod: Obj, runtime_class: Obj) -> None:
    scheduling = runtime_class.get("scheduling")
    if scheduling is None:
        return
    spec = pod["spec"]
    runtime_selector: dict[str, Any] = scheduling.get("nodeSelector") or {}
    selector = spec.get("nodeSelector")
    if selector is None:
        selector = dict(runtime_selector) if runtime_selector else None
    else:
        for key, value in runtime_selector.items():
            pod_value = selector.get(key)
            if key in selector and pod_value != value:
                raise new_forbidden(rt, pod, f"conflict: runtimeClass.scheduling.nodeSelector"
                                             f"[{key}] = {value}; pod.spec.nodeSelector[{key}] "
                                             f"= {pod_value}")
            selector[key] = value
    if selector is not None:
        spec["nodeSelector"] = selector
    tolerations = merge_tolerations(spec.get("tolerations") or [],
                                    scheduling.get("tolerations") or [])
    if tolerations:
        spec["tolerations"] = tolerations
    else:
        spec.pop("tolerations", None)

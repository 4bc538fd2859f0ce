"""The ``pods/resize`` subresource's strategy (Kubernetes 1.32, InPlacePodVerticalScaling on,
as the recorded discovery shows: pkg/registry/core/rest/storage_core.go registers
``pods/resize`` only when that gate is enabled).

- ``drop_non_resize_updates``: podResizeStrategy.PrepareForUpdate's dropNonResizeUpdates
  (pkg/registry/core/pod/strategy.go): the stored pod is kept whole but for the regular
  containers' ``resources`` and ``resizePolicy``, taken by container name.
- ``mark_pod_proposed_for_resize``: MarkPodProposedForResize (pkg/api/pod/util.go): a change
  of a container's resources sets ``status.resize: Proposed`` for the kubelet to act on.
- ``validate_pod_resize``: ValidatePodResize's resize rules
  (pkg/apis/core/validation/validation.go): no static or windows pods, the QoS class kept,
  no requests or limits removed, nothing but cpu and memory changed.
"""

from __future__ import annotations

import copy
from typing import Any

from setpoint.cluster.registry.podspec_defaults import pod_qos_class
from setpoint.cluster.registry.validation_ephemeral import MIRROR_POD_ANNOTATION
from setpoint.machinery import fielderrors as fe
from setpoint.machinery.errors import Cause
from setpoint.machinery.objects import Obj

RESIZE_PROPOSED = "Proposed"
_RESIZABLE = ("cpu", "memory")


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def drop_non_resize_updates(new: Obj, old: Obj) -> Obj:
    """dropPodUpdates, then each regular container's ``resources`` and ``resizePolicy``
    from the request (a container the stored pod lacks is ignored)."""
    pod = copy.deepcopy(old)
    new_meta, meta = new.get("metadata") or {}, pod.setdefault("metadata", {})
    for key in ("name", "namespace", "resourceVersion", "uid"):
        if key in new_meta:
            meta[key] = new_meta[key]
        else:
            meta.pop(key, None)
    containers = _dicts((pod.get("spec") or {}).get("containers"))
    index = {c.get("name"): c for c in containers}
    for c in _dicts((new.get("spec") or {}).get("containers")):
        target = index.get(c.get("name"))
        if target is None:
            continue
        for key in ("resources", "resizePolicy"):
            if c.get(key) is not None:
                target[key] = copy.deepcopy(c[key])
            else:
                target.pop(key, None)
    return pod


def _resources(c: dict[str, Any]) -> dict[str, Any]:
    r = c.get("resources")
    return {k: v for k, v in r.items() if v} if isinstance(r, dict) else {}


def mark_pod_proposed_for_resize(old: Obj, new: Obj) -> None:
    """``status.resize: Proposed`` when a container's resources changed."""
    old_containers = _dicts((old.get("spec") or {}).get("containers"))
    for i, c in enumerate(_dicts((new.get("spec") or {}).get("containers"))):
        if i >= len(old_containers) or c.get("name") != old_containers[i].get("name"):
            return  # (a mismatch is validation's to refuse)
        if _resources(c) != _resources(old_containers[i]):
            new.setdefault("status", {})["resize"] = RESIZE_PROPOSED
            return


def _running_without_resources(old: Obj) -> bool:
    """isPodResizeRequestSupported, negated: a running container whose status lacks
    ``resources`` was started by a kubelet that cannot resize."""
    for cs in _dicts((old.get("status") or {}).get("containerStatuses")):
        if (cs.get("state") or {}).get("running") is not None:
            return cs.get("resources") is None
    return False


def _removed(new: Any, old: Any) -> bool:
    new_names = set(new) if isinstance(new, dict) else set()
    return bool(isinstance(old, dict) and set(old) - new_names)


def _keep_old_cpu_memory(new: Any, old: Any) -> Any:
    """ValidatePodResize's dropCPUMemoryUpdates: the new list with cpu and memory as before
    (nil when the old list was)."""
    if not isinstance(old, dict):
        return None
    out = {k: v for k, v in (new if isinstance(new, dict) else {}).items()
           if k not in _RESIZABLE}
    out.update({k: old[k] for k in _RESIZABLE if k in old})
    return out


def validate_pod_resize(new: Obj, old: Obj) -> list[Cause]:
    """ValidatePodResize's rules after the new pod's own validation (the caller's). A
    static or windows pod is refused alone."""
    if MIRROR_POD_ANNOTATION in ((old.get("metadata") or {}).get("annotations") or {}):
        return [fe.forbidden("", "static pods cannot be resized")]
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    if ((old_spec.get("os") or {}).get("name")) == "windows":
        return [fe.forbidden("", "windows pods cannot be resized")]
    causes: list[Cause] = []
    old_qos = (old.get("status") or {}).get("qosClass") or pod_qos_class(old_spec)
    if old_qos != pod_qos_class(new_spec):
        causes.append(fe.invalid("spec", (new.get("status") or {}).get("qosClass", ""),
                                 "Pod QOS Class may not change as a result of resizing"))
    if _running_without_resources(old):
        causes.append(fe.forbidden("spec", "Pod running on node without support for resize"))
    new_containers = _dicts(new_spec.get("containers"))
    old_containers = _dicts(old_spec.get("containers"))
    for i, (c, o) in enumerate(zip(new_containers, old_containers, strict=False)):
        new_r = c.get("resources") or {}
        old_r = o.get("resources") or {}
        path = f"spec.containers[{i}].resources"
        if _removed(new_r.get("requests"), old_r.get("requests")):
            causes.append(fe.forbidden(f"{path}.requests", "resource requests cannot be removed"))
        if _removed(new_r.get("limits"), old_r.get("limits")):
            causes.append(fe.forbidden(f"{path}.limits", "resource limits cannot be removed"))
    munged = copy.deepcopy(new_spec)
    for c, o in zip(_dicts(munged.get("containers")), old_containers, strict=False):
        new_r, old_r = c.get("resources") or {}, o.get("resources") or {}
        kept = {k: v for k, v in (
            ("limits", _keep_old_cpu_memory(new_r.get("limits"), old_r.get("limits"))),
            ("requests", _keep_old_cpu_memory(new_r.get("requests"), old_r.get("requests"))))
            if v is not None}
        if kept or "resources" in o:
            c["resources"] = kept
        else:
            c.pop("resources", None)
        if "resizePolicy" in o:
            c["resizePolicy"] = copy.deepcopy(o["resizePolicy"])
        else:
            c.pop("resizePolicy", None)
    if _normalized(munged) != _normalized(old_spec):
        diff = "\n".join(
            f"  spec.containers[{i}].resources: {_resources(o)!r} -> {_resources(c)!r}"
            for i, (c, o) in enumerate(zip(_dicts(munged.get("containers")), old_containers,
                                           strict=False))
            if _resources(c) != _resources(o))
        causes.append(fe.forbidden("spec", f"only cpu and memory resources are mutable\n{diff}"))
    return causes


def _normalized(spec: dict[str, Any]) -> dict[str, Any]:
    """Semantic equality of the specs: an empty ``resources`` is no ``resources``."""
    out = copy.deepcopy(spec)
    for c in _dicts(out.get("containers")):
        r = _resources(c)
        if r:
            c["resources"] = r
        else:
            c.pop("resources", None)
    return out

"""Ephemeral container validation (``pkg/apis/core/validation/validation.go`` of 1.32:
validateEphemeralContainers, called by ValidatePodSpec, and
ValidatePodEphemeralContainersUpdate, the ``pods/ephemeralcontainers`` strategy's
ValidateUpdate).

An ephemeral container is a container without the fields that make it part of the
workload: no ports, probes, lifecycle, resources or restart policy (an allow-list, so that
new fields are forbidden until considered), no subPath mounts, a name unique among all the
pod's containers and, when it targets one, the name of a regular or init container. Once
added through the subresource it can be neither changed nor removed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from setpoint.cluster.registry.validation_containers import validate_container_common
from setpoint.machinery import fielderrors as fe
from setpoint.machinery.errors import Cause
from setpoint.machinery.objects import Obj

EPHEMERAL_FIELD = "cannot be set for an Ephemeral Container"
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"

# EphemeralContainerCommon's fields that allowedEphemeralContainerFields sets to false, in
# the struct's order (validateFieldAllowList reports them in that order)
_FORBIDDEN_FIELDS = ("ports", "resources", "resizePolicy", "restartPolicy", "livenessProbe",
                     "readinessProbe", "startupProbe", "lifecycle")


def _is_set(key: str, value: Any) -> bool:
    """Whether a field differs from its Go zero value (a nil pointer or slice, an empty
    ResourceRequirements)."""
    if value is None:
        return False
    if key == "resources":
        return isinstance(value, Mapping) and any(value.get(k) for k in (
            "limits", "requests", "claims"))
    return True


def validate_ephemeral_containers(ephemeral: list[dict[str, Any]],
                                  containers: list[dict[str, Any]],
                                  init: list[dict[str, Any]], volumes: Mapping[str, Any],
                                  path: str) -> list[Cause]:
    """``validateEphemeralContainers`` (with ``validateContainerOnlyForPod``'s image rule,
    which it applies to ephemeral containers itself)."""
    causes: list[Cause] = []
    if not ephemeral:
        return causes
    others = {c.get("name") or "" for c in [*containers, *init]}
    every = set(others)
    for i, ec in enumerate(ephemeral):
        p = f"{path}[{i}]"
        causes.extend(validate_container_common(ec, volumes, p))
        image = ec.get("image") or ""
        if image != image.strip():
            causes.append(fe.invalid(f"{p}.image", image,
                                     "must not have leading or trailing whitespace"))
        name = ec.get("name") or ""
        if name in every:
            causes.append(fe.duplicate(f"{p}.name", name))
        else:
            every.add(name)
        target = ec.get("targetContainerName") or ""
        if target and target not in others:
            causes.append(fe.not_found(f"{p}.targetContainerName", target))
        for key in _FORBIDDEN_FIELDS:
            if _is_set(key, ec.get(key)):
                causes.append(fe.forbidden(f"{p}.{key}", EPHEMERAL_FIELD))
        for j, mount in enumerate(ec.get("volumeMounts") or ()):
            if not isinstance(mount, Mapping):
                continue
            for key in ("subPath", "subPathExpr"):
                if mount.get(key):
                    causes.append(fe.forbidden(f"{p}.volumeMounts[{j}].{key}", EPHEMERAL_FIELD))
    return causes


def validate_ephemeral_containers_update(new: Obj, old: Obj) -> list[Cause]:
    """What ``ValidatePodEphemeralContainersUpdate`` adds to the new pod's own validation
    (the caller's, as is the static pod rule, ``static_pod_refused``): the ephemeral
    containers the pod had stay, unchanged. Order is not kept by a patch, so they are
    matched by name."""
    path = "spec.ephemeralContainers"
    by_name = {c.get("name"): c for c in (new.get("spec") or {}).get("ephemeralContainers") or ()
               if isinstance(c, Mapping)}
    causes: list[Cause] = []
    for before in (old.get("spec") or {}).get("ephemeralContainers") or ():
        name = before.get("name")
        after = by_name.get(name)
        if after is None:
            causes.append(fe.forbidden(
                path, f"existing ephemeral containers \"{name}\" may not be removed\n"))
        elif after != before:
            changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
            diff = "\n".join(f"  {k}: {before.get(k)!r} -> {after.get(k)!r}" for k in changed)
            causes.append(fe.forbidden(
                path, f"existing ephemeral containers \"{name}\" may not be changed\n{diff}"))
    return causes


def static_pod_refused(old: Obj) -> list[Cause]:
    """A static (mirror) pod supports no ephemeral containers (#113935): when the stored pod
    is one, ValidatePodEphemeralContainersUpdate answers this error alone."""
    if MIRROR_POD_ANNOTATION in ((old.get("metadata") or {}).get("annotations") or {}):
        return [fe.forbidden("", "static pods do not support ephemeral containers")]
    return []

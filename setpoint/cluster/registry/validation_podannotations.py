"""The pod rules that read annotations, and the AppArmor profile field
(kubernetes v1.32 pkg/apis/core/validation/validation.go: ValidatePodSpecificAnnotations,
ValidateSeccompPodAnnotations, ValidateSeccompProfile, ValidateAppArmorPodAnnotations,
ValidateAppArmorProfileFormat, ValidateAppArmorProfileField,
validateAppArmorAnnotationsAndFieldsMatchOnCreate; pkg/apis/core/helper
GetDeletionCostFromPodAnnotations).

Go names the seccomp annotations with ``fldPath.Child(key)`` (``metadata.annotations.<key>``)
and the others with ``fldPath.Key(key)`` (``metadata.annotations[<key>]``); both kept. (The
alpha ``scheduler.alpha.kubernetes.io/tolerations`` annotation, whose error is Go's JSON
decoder's own text, is not checked.)
"""

from __future__ import annotations

import re
from typing import Any

from setpoint.cluster.registry.pod_apparmor import (
    ANNOTATION_PREFIX,
    LOCALHOST_PREFIX,
    MAX_LOCALHOST_PROFILE,
    RUNTIME_DEFAULT,
    UNCONFINED,
    linux_pod_profile,
)
from setpoint.cluster.registry.podcontainers import visit_containers_with_path
from setpoint.machinery import fielderrors as fe
from setpoint.machinery.errors import Cause
from setpoint.machinery.objects import Obj

MIRROR_POD = "kubernetes.io/config.mirror"
DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
SECCOMP_POD = "seccomp.security.alpha.kubernetes.io/pod"
SECCOMP_CONTAINER_PREFIX = "container.seccomp.security.alpha.kubernetes.io/"
APPARMOR_TYPES = ("Localhost", "RuntimeDefault", "Unconfined")
_INT32 = re.compile(r"-?[0-9]+")
_TYPE_MISMATCH = "apparmor type in annotation and field must match"


def _valid_deletion_cost(value: str) -> bool:
    """``GetDeletionCostFromPodAnnotations``: no plus sign, no leading zero, an int32."""
    if not value or not (value[0] == "-" or value == "0" or "1" <= value[0] <= "9"):
        return False
    return bool(_INT32.fullmatch(value)) and -(2 ** 31) <= int(value) < 2 ** 31


def _seccomp_profile(value: str, path: str) -> list[Cause]:
    """``ValidateSeccompProfile``."""
    if value in ("runtime/default", "docker/default", "unconfined"):
        return []
    if value.startswith("localhost/"):
        # (the volume sources' rules, loaded by the first localhost profile: the Service
        # validation the server's start runs reaches this module through the containers')
        from setpoint.cluster.registry.validation_volumesources import local_descending_path

        return local_descending_path(value[len("localhost/"):], path)
    return [fe.invalid(path, value, "must be a valid seccomp profile")]


def _apparmor_annotations(annotations: dict[str, Any], spec: Obj, path: str) -> list[Cause]:
    """``ValidateAppArmorPodAnnotations``: each annotation names a container of the pod and
    holds a profile the beta API knew."""
    names = {str(c.get("name")) for c, _ in visit_containers_with_path(spec, "spec")}
    causes: list[Cause] = []
    for key, value in annotations.items():
        if not key.startswith(ANNOTATION_PREFIX):
            continue
        container = key[len(ANNOTATION_PREFIX):]
        if container not in names:
            causes.append(fe.invalid(f"{path}[{key}]", container, "container not found"))
        profile = str(value)
        if profile not in ("", RUNTIME_DEFAULT, UNCONFINED) \
                and not profile.startswith(LOCALHOST_PREFIX):
            causes.append(fe.invalid(f"{path}[{key}]", profile,
                                     f"invalid AppArmor profile name: {fe.go_quote(profile)}"))
    return causes


def validate_pod_specific_annotations(annotations: Any, spec: Any, path: str) -> list[Cause]:
    """``ValidatePodSpecificAnnotations`` (a new pod's or a template's: an invalid deletion
    cost is never allowed, no stored pod having one)."""
    if not isinstance(annotations, dict):
        return []
    spec = spec if isinstance(spec, dict) else {}
    causes: list[Cause] = []
    if MIRROR_POD in annotations and not spec.get("nodeName"):
        causes.append(fe.invalid(f"{path}[{MIRROR_POD}]", str(annotations[MIRROR_POD]),
                                 "must set spec.nodeName if mirror pod annotation is set"))
    if DELETION_COST in annotations and not _valid_deletion_cost(str(annotations[DELETION_COST])):
        causes.append(fe.invalid(f"{path}[{DELETION_COST}]", str(annotations[DELETION_COST]),
                                 "must be a 32bit integer"))
    if SECCOMP_POD in annotations:
        causes.extend(_seccomp_profile(str(annotations[SECCOMP_POD]), f"{path}.{SECCOMP_POD}"))
    for key, value in annotations.items():
        if key.startswith(SECCOMP_CONTAINER_PREFIX):
            causes.extend(_seccomp_profile(str(value), f"{path}.{key}"))
    return causes + _apparmor_annotations(annotations, spec, path)


def validate_apparmor_profile_field(profile: Any, path: str) -> list[Cause]:
    """``ValidateAppArmorProfileField``."""
    if not isinstance(profile, dict):
        return []
    kind = profile.get("type") or ""
    name = profile.get("localhostProfile")
    lp = f"{path}.localhostProfile"
    if kind == "Localhost":
        if not isinstance(name, str):
            return [fe.required(lp, "must be set when AppArmor type is Localhost")]
        causes: list[Cause] = []
        if name.strip() != name:
            causes.append(fe.invalid(lp, name, "must not be padded with whitespace"))
        elif not name:
            causes.append(fe.required(lp, "must be set when AppArmor type is Localhost"))
        if len(name.encode()) > MAX_LOCALHOST_PROFILE:
            causes.append(fe.too_long(lp, MAX_LOCALHOST_PROFILE))
        return causes
    if kind in ("RuntimeDefault", "Unconfined"):
        if name is not None:
            return [fe.invalid(lp, str(name), "can only be set when AppArmor type is Localhost")]
        return []
    if not kind:
        return [fe.required(f"{path}.type", "type is required when appArmorProfile is set")]
    return [fe.not_supported(f"{path}.type", kind, APPARMOR_TYPES)]


def validate_apparmor_annotations_and_fields_match(pod: Obj) -> list[Cause]:
    """``validateAppArmorAnnotationsAndFieldsMatchOnCreate`` (ValidatePodCreate): a container
    whose profile (its own, else the pod's) and annotation are both set must agree."""
    linux = linux_pod_profile(pod)
    if linux is None:
        return []
    spec, pod_profile = linux
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    causes: list[Cause] = []
    for container, cpath in visit_containers_with_path(spec, "spec"):
        own = container.get("securityContext")
        profile = own.get("appArmorProfile") if isinstance(own, dict) else None
        profile = profile if isinstance(profile, dict) else pod_profile
        key = ANNOTATION_PREFIX + str(container.get("name") or "")
        if not isinstance(profile, dict) or key not in annotations:
            continue
        annotation = str(annotations[key])
        ap = f"{cpath}.securityContext.appArmorProfile"
        kind = profile.get("type")
        if (kind == "Unconfined" and annotation != UNCONFINED) or (
                kind == "RuntimeDefault" and annotation != RUNTIME_DEFAULT) or (
                kind == "Localhost" and not annotation.startswith(LOCALHOST_PREFIX)):
            causes.append(fe.forbidden(f"{ap}.type", _TYPE_MISMATCH))
        elif kind == "Localhost" and annotation[len(LOCALHOST_PREFIX):] != profile.get(
                "localhostProfile"):
            causes.append(fe.forbidden(f"{ap}.localhostProfile",
                                       "apparmor profile in annotation and field must match"))
    return causes

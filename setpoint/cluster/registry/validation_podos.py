"""A pod's operating system (``pkg/apis/core/validation/validation.go``: validateOS, then,
only when that found nothing, validateLinux or validateWindows; the containers are visited as
``podshelper.VisitContainersWithPath`` does: init containers, containers, ephemeral ones).

A Windows pod may set none of the Linux-only security settings, at the pod or in any
container; a Linux pod no ``windowsOptions``. The host namespace settings are pod fields in
v1 (``spec.hostPID``, ...) and are reported there, as Go's internal PodSecurityContext holding
them is reported under the spec. (``supplementalGroupsPolicy`` is behind the alpha
SupplementalGroupsPolicy gate in 1.32: the strategy drops it first.)
"""

from __future__ import annotations

from typing import Any

from setpoint.cluster.registry.podcontainers import visit_containers_with_path
from setpoint.machinery import fielderrors as fe
from setpoint.machinery.errors import Cause
from setpoint.machinery.objects import Obj

OS_NAMES = ("linux", "windows")
NOT_FOR_WINDOWS = "cannot be set for a windows pod"
NOT_FOR_LINUX = "windows options cannot be set for a linux pod"
# validateWindows' pod security context fields, in its order: (where, key, reported at)
_WINDOWS_POD_FIELDS = (
    ("context", "appArmorProfile", "securityContext.appArmorProfile"),
    ("context", "seLinuxOptions", "securityContext.seLinuxOptions"),
    ("spec", "hostUsers", "hostUsers"),
    ("spec", "hostPID", "hostPID"),
    ("spec", "hostIPC", "hostIPC"),
    ("context", "seccompProfile", "securityContext.seccompProfile"),
    ("context", "fsGroup", "securityContext.fsGroup"),
    ("context", "fsGroupChangePolicy", "securityContext.fsGroupChangePolicy"),
    ("context", "sysctls", "securityContext.sysctls"),
    ("spec", "shareProcessNamespace", "shareProcessNamespace"),
    ("context", "runAsUser", "securityContext.runAsUser"),
    ("context", "runAsGroup", "securityContext.runAsGroup"),
    ("context", "supplementalGroups", "securityContext.supplementalGroups"),
)
# the host namespace booleans are plain bools in Go's internal type: only true counts
_BOOLEANS = {"hostPID", "hostIPC"}
_WINDOWS_CONTAINER_FIELDS = ("appArmorProfile", "seLinuxOptions", "seccompProfile",
                             "capabilities", "readOnlyRootFilesystem", "privileged",
                             "allowPrivilegeEscalation", "procMount", "runAsUser", "runAsGroup")


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _set(holder: dict[str, Any], key: str) -> bool:
    value = holder.get(key)
    if key == "sysctls":
        return bool(value)
    if key in _BOOLEANS:
        return value is True
    return value is not None


def _linux(spec: Obj, path: str) -> list[Cause]:
    causes: list[Cause] = []
    if _dict(spec.get("securityContext")).get("windowsOptions") is not None:
        causes.append(fe.forbidden(f"{path}.securityContext.windowsOptions", NOT_FOR_LINUX))
    for c, cp in visit_containers_with_path(spec, path):
        if _dict(c.get("securityContext")).get("windowsOptions") is not None:
            causes.append(fe.forbidden(f"{cp}.securityContext.windowsOptions", NOT_FOR_LINUX))
    return causes


def _windows(spec: Obj, path: str) -> list[Cause]:
    causes: list[Cause] = []
    # (Go's internal pod security context always exists: conversion makes it to hold the
    # host namespace settings)
    pod_context = _dict(spec.get("securityContext"))
    for where, key, at in _WINDOWS_POD_FIELDS:
        if _set(pod_context if where == "context" else spec, key):
            causes.append(fe.forbidden(f"{path}.{at}", NOT_FOR_WINDOWS))
    for c, cp in visit_containers_with_path(spec, path):
        context = _dict(c.get("securityContext"))
        causes.extend(fe.forbidden(f"{cp}.securityContext.{key}", NOT_FOR_WINDOWS)
                      for key in _WINDOWS_CONTAINER_FIELDS if context.get(key) is not None)
    return causes


def validate_os(spec: Obj, path: str) -> list[Cause]:
    """``validateOS`` and, when the name is good, the rules of that operating system."""
    os_spec = spec.get("os")
    if not isinstance(os_spec, dict):
        return []
    name = os_spec.get("name")
    if not name:
        return [fe.required(f"{path}.os.name", "cannot be empty")]
    if name not in OS_NAMES:
        return [fe.not_supported(f"{path}.os", name, OS_NAMES)]
    return _linux(spec, path) if name == "linux" else _windows(spec, path)

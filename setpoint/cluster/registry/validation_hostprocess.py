"""Windows HostProcess pods and user namespaces (``pkg/apis/core/validation/validation.go``:
validateWindowsHostProcessPod and validateHostUsers, both called by ValidatePodSpec after the
topology spread constraints, for pods and pod templates alike).

A container is a HostProcess container when its own ``windowsOptions.hostProcess`` is true,
or when it leaves that unset and the pod's is true; a pod with one must run them all so and
sit on the host's network. The server admits privileged containers (``--allow-privileged``),
so the "disallowed by cluster policy" rule never fires.

validateHostUsers forbids the host namespaces beside ``hostUsers: false``; in 1.32 the
UserNamespacesSupport gate is off and the strategies drop ``hostUsers`` before validation
(``pod_disabled_fields``), so the rule runs only on what survived that drop.
"""

from __future__ import annotations

from typing import Any

from setpoint.machinery import fielderrors as fe
from setpoint.machinery.errors import Cause
from setpoint.machinery.objects import Obj

ALL_OR_NONE = ("If pod contains any hostProcess containers then all containers must be "
               "HostProcess containers")
NEEDS_HOST_NETWORK = "hostNetwork must be true if pod contains any hostProcess containers"
WHEN_HOST_USERS_FALSE = "when `pod.Spec.HostUsers` is false"


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _host_process(holder: dict[str, Any]) -> bool | None:
    """``securityContext.windowsOptions.hostProcess`` as Go's *bool (None: nil)."""
    value = _dict(_dict(holder.get("securityContext")).get("windowsOptions")).get("hostProcess")
    return value if isinstance(value, bool) else None


def validate_windows_host_process_pod(spec: Obj, path: str) -> list[Cause]:
    """``validateWindowsHostProcessPod``; containers in ``VisitContainersWithPath``'s order."""
    causes: list[Cause] = []
    pod_host_process = _host_process(spec)
    count = host_process_count = 0
    for key in ("initContainers", "containers", "ephemeralContainers"):
        items = spec.get(key)
        for i, c in enumerate(items if isinstance(items, list) else []):
            count += 1
            mine = _host_process(_dict(c))
            if pod_host_process is not None and mine is not None and mine != pod_host_process:
                causes.append(fe.invalid(
                    f"{path}.{key}[{i}].securityContext.windowsOptions.hostProcess", mine,
                    "pod hostProcess value must be identical if both are specified, was "
                    f"{str(pod_host_process).lower()}"))
            if mine is True or (mine is None and pod_host_process is True):
                host_process_count += 1
    if host_process_count:
        if host_process_count != count:
            causes.append(fe.invalid(path, "", ALL_OR_NONE))
        if spec.get("hostNetwork") is not True:
            causes.append(fe.invalid(f"{path}.hostNetwork", False, NEEDS_HOST_NETWORK))
    return causes


def validate_host_users(spec: Obj, path: str) -> list[Cause]:
    """``validateHostUsers`` (Go names two of the paths with capitals: kept)."""
    if spec.get("hostUsers") is not False:
        return []
    return [fe.forbidden(f"{path}.{name}", WHEN_HOST_USERS_FALSE)
            for key, name in (("hostNetwork", "hostNetwork"), ("hostPID", "HostPID"),
                              ("hostIPC", "HostIPC"))
            if spec.get(key) is True]

"""Pod sysctl validation (``pkg/apis/core/validation/validation.go``: validateSysctls,
IsValidSysctlName, ValidateHostSysctl; ``k8s.io/component-helpers/node/util/sysctl``:
GetNamespace and the slash-to-dot normalization it applies first).

A sysctl that lives in a namespace the pod shares with the host (``net.*`` on the host's
network, the IPC ones with ``hostIPC``) is refused: setting it would change the node. A new
pod never gets the AllowNamespacedSysctlsForHostNetAndHostIPC leniency, which is kept for
pods that already had such a sysctl before the rule existed.
"""

from __future__ import annotations

import re
from typing import Any

from setpoint.machinery import fielderrors as fe
from setpoint.machinery.errors import Cause
from setpoint.machinery.objects import Obj

SYSCTL_MAX_LENGTH = 253
_SEGMENT = "[a-z0-9]([-_a-z0-9]*[a-z0-9])?"
SYSCTL_PATTERN = f"^({_SEGMENT}[\\./])*{_SEGMENT}$"
_SYSCTL = re.compile(SYSCTL_PATTERN)
SYSCTL_NAME_ERROR = (f"must have at most {SYSCTL_MAX_LENGTH} characters and match regex "
                     f"{SYSCTL_PATTERN}")
IPC, NET = "IPC", "Net"
_NAMESPACES = {"kernel.sem": IPC}
_PREFIX_NAMESPACES = (("kernel.shm", IPC), ("kernel.msg", IPC), ("fs.mqueue.", IPC),
                      ("net.", NET))


def is_valid_sysctl_name(name: str) -> bool:
    """``IsValidSysctlName``."""
    return len(name) <= SYSCTL_MAX_LENGTH and _SYSCTL.fullmatch(name) is not None


def normalize_name(name: str) -> str:
    """``ConvertSysctlVariableToDotsSeparator``: a name whose first separator is ``/`` has
    its slashes and dots swapped (``net/ipv4/conf/eth0.100/forwarding``)."""
    first = min((i for i in (name.find("."), name.find("/")) if i >= 0), default=-1)
    if first < 0 or name[first] == ".":
        return name
    return name.translate(str.maketrans("./", "/."))


def sysctl_namespace(name: str) -> str:
    """``GetNamespace``: the kernel namespace a sysctl belongs to ("" when none)."""
    name = normalize_name(name)
    if name in _NAMESPACES:
        return _NAMESPACES[name]
    for prefix, namespace in _PREFIX_NAMESPACES:
        if name.startswith(prefix):
            return namespace
    return ""


def _host_sysctl(name: str, spec: Obj, path: str) -> list[Cause]:
    """``ValidateHostSysctl``."""
    namespace = sysctl_namespace(name)
    if spec.get("hostNetwork") and namespace == NET:
        return [fe.invalid(path, name, "may not be specified when 'hostNetwork' is true")]
    if spec.get("hostIPC") and namespace == IPC:
        return [fe.invalid(path, name, "may not be specified when 'hostIPC' is true")]
    return []


def validate_sysctls(sysctls: Any, spec: Obj, path: str) -> list[Cause]:
    """``validateSysctls`` over ``<path>`` (the pod security context's ``sysctls``)."""
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, sysctl in enumerate(sysctls if isinstance(sysctls, list) else []):
        name = sysctl.get("name") if isinstance(sysctl, dict) else None
        name = name if isinstance(name, str) else ""
        p = f"{path}[{i}].name"
        if not name:
            causes.append(fe.required(p))
        elif not is_valid_sysctl_name(name):
            causes.append(fe.invalid(p, name, SYSCTL_NAME_ERROR))
        elif name in seen:
            causes.append(fe.duplicate(p, name))
        causes.extend(_host_sysctl(name, spec, p))
        seen.add(name)
    return causes

"""What a pod's ``/status`` write is checked for: ``ValidatePodStatusUpdate``
(pkg/apis/core/validation/validation.go), run by ``podStatusStrategy.ValidateUpdate``
(pkg/registry/core/pod/strategy.go) in place of the pod's own validation.

The spec a status write brings is dropped before this runs, so none of the spec's rules
apply; what is checked is the status against the stored pod: condition types, the
nominated node's name, the QoS class (fixed at creation), containers that may not leave
the terminated state under their restart policy, and pod and host IPs. (Resource claim
statuses go with dynamic resource allocation, off by default in 1.32: dropped, not
validated.) Nothing checks container status names against the
spec, restart counts, the phase or a condition's status (the source says so: consumers
must cope with unexpected data).
"""

from __future__ import annotations

from collections.abc import Set
from typing import Any

from setpoint.machinery import fielderrors as fe
from setpoint.machinery import names
from setpoint.machinery.errors import Cause
from setpoint.machinery.netutils import parse_ip_sloppy
from setpoint.machinery.objects import Obj

_SYSTEM_CONDITIONS = ("PodScheduled", "Ready", "Initialized")
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
NOT_AN_IP = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"


def _dual_stack(ips: list[str]) -> tuple[bool, str | None]:
    """``netutils.IsDualStackIPStrings``: (one of each family, the error for a bad IP)."""
    v4 = v6 = False
    for ip in ips:
        parsed = parse_ip_sloppy(ip)
        if parsed is None:
            return False, "ip <nil> is invalid"
        v4 = v4 or parsed.version == 4
        v6 = v6 or parsed.version == 6
        if v4 and v6:
            return True, None
    return False, None


def _go_ips(type_name: str, ips: list[str]) -> fe.GoValue:
    return fe.GoValue(f"[]core.{type_name}{{"
                      + ", ".join(f"core.{type_name}{{IP:{fe.go_quote(ip)}}}" for ip in ips)
                      + "}")


def _ip_list(path: str, type_name: str, ips: list[str]) -> list[Cause]:
    """Each an IP; several: one of each family at most, no repeats (validatePodIPs and
    validateHostIPs share these, in a slightly different order)."""
    causes = [fe.invalid(f"{path}[{i}]", ip, NOT_AN_IP)
              for i, ip in enumerate(ips) if parse_ip_sloppy(ip) is None]
    if len(ips) < 2:
        return causes
    dual, err = _dual_stack(ips)
    family: list[Cause] = []
    if err is not None:
        family.append(fe.internal(path, f"failed to check for dual stack with error:{err}"))
    if not dual or len(ips) > 2:
        family.append(fe.invalid(path, _go_ips(type_name, ips),
                                 "may specify no more than one IP for each IP family"))
    seen: set[str] = set()
    repeats: list[Cause] = []
    for i, ip in enumerate(ips):
        if ip in seen:
            repeats.append(fe.duplicate(f"{path}[{i}]", fe.GoValue(
                f"core.{type_name}{{IP:{fe.go_quote(ip)}}}")))
        seen.add(ip)
    return causes + (family + repeats if type_name == "PodIP" else repeats + family)


def _ips(status: Obj, key: str) -> list[str]:
    return [str((e or {}).get("ip") or "") if isinstance(e, dict) else ""
            for e in status.get(key) or []]


def _state_transitions(new: list[Any], old: list[Any], path: str, policy: str,
                       restartable: Set[str] = frozenset()) -> list[Cause]:
    """``ValidateContainerStateTransition``: unless the policy restarts it, a terminated
    container stays terminated (a failed one may restart under OnFailure). The index is the
    old status's."""
    if policy == "Always":
        return []
    causes: list[Cause] = []
    for i, before in enumerate(old):
        terminated = ((before or {}).get("state") or {}).get("terminated")
        if not isinstance(terminated, dict):
            continue
        if terminated.get("exitCode", 0) != 0 and policy == "OnFailure":
            continue
        name = before.get("name")
        if name in restartable:
            continue
        causes.extend(
            fe.forbidden(f"{path}[{i}].state", "may not be transitioned to non-terminated state")
            for after in new if isinstance(after, dict) and after.get("name") == name
            and not (after.get("state") or {}).get("terminated"))
    return causes


def _annotation_updates(new: Obj, old: Obj) -> list[Cause]:
    """``ValidatePodSpecificAnnotationUpdates``: the mirror pod annotation is the kubelet's
    alone; no update may add, change or remove it."""
    path = f"metadata.annotations[{MIRROR_ANNOTATION}]"
    before = (old["metadata"].get("annotations") or {}).get(MIRROR_ANNOTATION)
    after = (new["metadata"].get("annotations") or {}).get(MIRROR_ANNOTATION)
    if before is not None and before != after:
        return [fe.forbidden(path, "may not remove or update mirror pod annotation")]
    if before is None and after is not None:
        return [fe.forbidden(path, "may not add mirror pod annotation")]
    return []


def validate_pod_status_update(new: Obj, old: Obj) -> list[Cause]:
    """``ValidatePodStatusUpdate`` past its ``ValidateObjectMetaUpdate`` (the caller's)."""
    causes = _annotation_updates(new, old)
    status, old_status = new.get("status") or {}, old.get("status") or {}
    # validatePodConditions is handed the metadata path: the real causes read
    # metadata.conditions[i].Type
    for i, condition in enumerate(status.get("conditions") or []):
        ctype = condition.get("type", "") if isinstance(condition, dict) else ""
        if ctype not in _SYSTEM_CONDITIONS:
            causes.extend(fe.invalid(f"metadata.conditions[{i}].Type", ctype, msg)
                          for msg in names.is_qualified_name(str(ctype)))
    nominated = status.get("nominatedNodeName") or ""
    if nominated and nominated != old_status.get("nominatedNodeName"):
        causes.extend(fe.invalid("status.nominatedNodeName", nominated, msg)
                      for msg in names.name_is_dns_subdomain(nominated, False))
    if (status.get("qosClass") or "") != (old_status.get("qosClass") or ""):
        causes.append(fe.invalid("status.qosClass", status.get("qosClass") or "",
                                 "field is immutable"))
    old_spec = old.get("spec") or {}
    policy = str(old_spec.get("restartPolicy") or "")
    causes += _state_transitions(status.get("containerStatuses") or [],
                                 old_status.get("containerStatuses") or [],
                                 "status.containerStatuses", policy)
    sidecars = {str(c.get("name")) for c in old_spec.get("initContainers") or []
                if isinstance(c, dict) and c.get("restartPolicy") == "Always"}
    causes += _state_transitions(status.get("initContainerStatuses") or [],
                                 old_status.get("initContainerStatuses") or [],
                                 "status.initContainerStatuses", policy, sidecars)
    causes += _state_transitions(status.get("ephemeralContainerStatuses") or [],
                                 old_status.get("ephemeralContainerStatuses") or [],
                                 "status.ephemeralContainerStatuses", "Never")
    causes += _ip_list("status.podIPs", "PodIP", _ips(status, "podIPs"))
    host_ips = _ips(status, "hostIPs")
    if host_ips:
        if (status.get("hostIP") or "") != host_ips[0]:
            causes.append(fe.invalid("status.hostIPs[0].ip", host_ips[0],
                                     "must be equal to `hostIP`"))
        causes += _ip_list("status.hostIPs", "HostIP", host_ips)
    return causes


def prepare_pod_status_update(new: Obj, old: Obj) -> None:
    """``podStatusStrategy.PrepareForUpdate`` beyond the generic resets: the QoS class is
    fixed at creation, so a write that leaves it out keeps the stored one (older kubelets
    dropped it when rejecting a pod)."""
    status = new.get("status")
    old_qos = (old.get("status") or {}).get("qosClass")
    if isinstance(status, dict) and not status.get("qosClass") and old_qos:
        status["qosClass"] = old_qos


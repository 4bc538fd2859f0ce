"""Pod and pod-template validation (``pkg/apis/core/validation``: ValidatePodSpec and kin).

Covers what clients trip over: containers present, named (DNS labels, unique) and with an
image, enumerations (restartPolicy, dnsPolicy, imagePullPolicy, protocols), ports, volume
names, and the Pod update rule that only images, activeDeadlineSeconds, tolerations
(additions) and a negative terminationGracePeriodSeconds may change.
"""

from __future__ import annotations

import copy
from typing import Any

from setpoint.machinery import fielderrors as fe
from setpoint.machinery import names
from setpoint.machinery.errors import Cause
from setpoint.machinery.objects import Obj

RESTART_POLICIES = ("Always", "OnFailure", "Never")
DNS_POLICIES = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
PULL_POLICIES = ("Always", "IfNotPresent", "Never")
TERMINATION_MESSAGE_POLICIES = ("File", "FallbackToLogsOnError")
PROTOCOLS = ("SCTP", "TCP", "UDP")

_UPDATABLE_POD_SPEC_FIELDS = ",".join((
    "`spec.containers[*].image`",
    "`spec.initContainers[*].image`",
    "`spec.activeDeadlineSeconds`",
    "`spec.tolerations` (only additions to existing tolerations)",
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously "
    "negative)",
))


def _enum(path: str, value: Any, allowed: tuple[str, ...]) -> list[Cause]:
    if not value:
        return [fe.required(path)]
    if value not in allowed:
        return [fe.not_supported(path, value, allowed)]
    return []


def _ports(ports: list[Any], path: str) -> list[Cause]:
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, port in enumerate(ports):
        p = f"{path}[{i}]"
        if not isinstance(port, dict):
            continue
        name = port.get("name") or ""
        if name:
            causes.extend(fe.invalid(f"{p}.name", name, m) for m in _port_name_errors(name))
            if name in seen:
                causes.append(fe.duplicate(f"{p}.name", name))
            seen.add(name)
        container_port = port.get("containerPort")
        if container_port is None or container_port == 0:
            causes.append(fe.required(f"{p}.containerPort"))
        elif not 1 <= int(container_port) <= 65535:
            causes.append(fe.invalid(f"{p}.containerPort", container_port,
                                     names.inclusive_range_error(1, 65535)))
        host_port = port.get("hostPort")
        if host_port and not 1 <= int(host_port) <= 65535:
            causes.append(fe.invalid(f"{p}.hostPort", host_port,
                                     names.inclusive_range_error(1, 65535)))
        causes.extend(_enum(f"{p}.protocol", port.get("protocol"), PROTOCOLS))
    return causes


def _port_name_errors(name: str) -> list[str]:
    errs = []
    if len(name) > 15:
        errs.append(names.max_len_error(15))
    if not all(c.isascii() and (c.islower() or c.isdigit() or c == "-") for c in name):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not any("a" <= c <= "z" for c in name):
        errs.append("must contain at least one letter (a-z)")
    if "--" in name:
        errs.append("must not contain consecutive hyphens")
    if name.startswith("-") or name.endswith("-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def _containers(containers: Any, path: str, seen: set[str], required: bool) -> list[Cause]:
    causes: list[Cause] = []
    if not containers:
        return [fe.required(path)] if required else []
    for i, c in enumerate(containers):
        p = f"{path}[{i}]"
        if not isinstance(c, dict):
            continue
        name = c.get("name") or ""
        if not name:
            causes.append(fe.required(f"{p}.name"))
        else:
            causes.extend(fe.invalid(f"{p}.name", name, m) for m in names.is_dns1123_label(name))
            if name in seen:
                causes.append(fe.duplicate(f"{p}.name", name))
            seen.add(name)
        if not c.get("image"):
            causes.append(fe.required(f"{p}.image"))
        causes.extend(_enum(f"{p}.imagePullPolicy", c.get("imagePullPolicy"), PULL_POLICIES))
        causes.extend(_enum(f"{p}.terminationMessagePolicy",
                            c.get("terminationMessagePolicy"), TERMINATION_MESSAGE_POLICIES))
        causes.extend(_ports(c.get("ports") or [], f"{p}.ports"))
    return causes


def validate_pod_spec(spec: Any, path: str) -> list[Cause]:
    """``ValidatePodSpec`` for the fields clients get wrong."""
    if not isinstance(spec, dict):
        return [fe.required(path)]
    causes: list[Cause] = []
    volume_names: set[str] = set()
    for i, volume in enumerate(spec.get("volumes") or []):
        p = f"{path}.volumes[{i}]"
        name = (volume or {}).get("name") or ""
        if not name:
            causes.append(fe.required(f"{p}.name"))
        else:
            causes.extend(fe.invalid(f"{p}.name", name, m) for m in names.is_dns1123_label(name))
            if name in volume_names:
                causes.append(fe.duplicate(f"{p}.name", name))
            volume_names.add(name)
    seen: set[str] = set()
    causes.extend(_containers(spec.get("containers"), f"{path}.containers", seen, True))
    causes.extend(_containers(spec.get("initContainers"), f"{path}.initContainers", seen,
                              False))
    causes.extend(_enum(f"{path}.restartPolicy", spec.get("restartPolicy"), RESTART_POLICIES))
    causes.extend(_enum(f"{path}.dnsPolicy", spec.get("dnsPolicy"), DNS_POLICIES))
    for key in ("terminationGracePeriodSeconds", "activeDeadlineSeconds"):
        value = spec.get(key)
        if key == "activeDeadlineSeconds" and value is not None and value <= 0:
            causes.append(fe.invalid(f"{path}.{key}", value, "must be greater than 0"))
    node_name = spec.get("nodeName")
    if node_name:
        causes.extend(fe.invalid(f"{path}.nodeName", node_name, m)
                      for m in names.is_dns1123_subdomain(node_name))
    service_account = spec.get("serviceAccountName")
    if service_account:
        causes.extend(fe.invalid(f"{path}.serviceAccountName", service_account, m)
                      for m in names.is_dns1123_subdomain(service_account))
    return causes


def validate_pod_template(template: Any, path: str) -> list[Cause]:
    """``ValidatePodTemplateSpec``: template labels and annotations, then its spec."""
    if not isinstance(template, dict):
        return [fe.required(path)]
    meta = template.get("metadata") or {}
    causes = names.validate_labels(meta.get("labels"), f"{path}.metadata.labels")
    causes.extend(names.validate_annotations(meta.get("annotations"),
                                             f"{path}.metadata.annotations"))
    causes.extend(validate_pod_spec(template.get("spec"), f"{path}.spec"))
    return causes


def validate_pod(pod: Obj) -> list[Cause]:
    """The spec part of ``ValidatePodCreate`` (metadata is validated by the caller)."""
    return validate_pod_spec(pod.get("spec"), "spec")


def validate_pod_update(new: Obj, old: Obj) -> list[Cause]:
    """``ValidatePodUpdate``'s immutability rule for the pod spec."""
    new_spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    if new_spec == old_spec:
        return []  # the common case (status and metadata writes): nothing to munge
    munged = copy.deepcopy(new_spec)
    for key in ("containers", "initContainers"):
        old_list = old_spec.get(key) or []
        for i, c in enumerate(munged.get(key) or []):
            if i < len(old_list) and isinstance(c, dict):
                c["image"] = old_list[i].get("image")
    if munged.get("activeDeadlineSeconds") is not None:
        old_deadline = old_spec.get("activeDeadlineSeconds")
        if old_deadline is None or munged["activeDeadlineSeconds"] <= old_deadline:
            munged["activeDeadlineSeconds"] = old_deadline
    old_tolerations = old_spec.get("tolerations") or []
    new_tolerations = munged.get("tolerations") or []
    if all(t in new_tolerations for t in old_tolerations):
        munged["tolerations"] = copy.deepcopy(old_spec.get("tolerations"))
    old_grace = old_spec.get("terminationGracePeriodSeconds")
    if old_grace is not None and old_grace < 0 and munged.get(
            "terminationGracePeriodSeconds") == 1:
        munged["terminationGracePeriodSeconds"] = old_grace
    old_gates = old_spec.get("schedulingGates") or []
    new_gates = munged.get("schedulingGates") or []
    if all(g in old_gates for g in new_gates):
        munged["schedulingGates"] = copy.deepcopy(old_spec.get("schedulingGates"))
    for key in ("activeDeadlineSeconds", "tolerations", "schedulingGates"):
        if munged.get(key) is None and old_spec.get(key) is None:
            munged.pop(key, None)
    if munged == old_spec:
        return []
    changed = sorted(k for k in set(munged) | set(old_spec) if munged.get(k) != old_spec.get(k))
    diff = "\n".join(f"  spec.{k}: {old_spec.get(k)!r} -> {munged.get(k)!r}" for k in changed)
    return [fe.forbidden(
        "spec", f"pod updates may not change fields other than {_UPDATABLE_POD_SPEC_FIELDS}\n"
        f"{diff}")]

"""Pod and pod-template validation (``pkg/apis/core/validation``: ValidatePodSpec,
validatePodMetadataAndSpec, ValidatePodCreate, ValidatePodTemplateSpec, ValidatePodUpdate).

A pod spec is validated in ValidatePodSpec's order: volumes, containers, init containers,
host-network ports, the enumerations, node selector, security context, affinity, DNS
config, readiness and scheduling gates, names, deadlines, hostname and subdomain,
tolerations. Containers are ``validation_containers``'s, volumes ``validation_volumes``'s,
tolerations and affinity ``validation_scheduling``'s. Once created, a pod's spec may only
change its images, lower its activeDeadlineSeconds, add tolerations, remove scheduling gates
and move a negative terminationGracePeriodSeconds to 1.
"""

from __future__ import annotations

import copy
from typing import Any

from setpoint.cluster.registry.validation_containers import (
    PROTOCOLS,
    host_port_conflicts,
    required_enum,
    validate_container_common,
    validate_ids,
    validate_probes_and_lifecycle,
    validate_seccomp_profile,
)
from setpoint.cluster.registry.validation_ephemeral import validate_ephemeral_containers
from setpoint.cluster.registry.validation_hostprocess import (
    validate_host_users,
    validate_windows_host_process_pod,
)
from setpoint.cluster.registry.validation_podannotations import (
    validate_apparmor_annotations_and_fields_match,
    validate_apparmor_profile_field,
    validate_pod_specific_annotations,
)
from setpoint.cluster.registry.validation_podos import validate_os
from setpoint.cluster.registry.validation_podstatus import NOT_AN_IP
from setpoint.cluster.registry.validation_scheduling import (
    validate_affinity,
    validate_only_added_tolerations,
    validate_tolerations,
    validate_topology_spread_constraints,
)
from setpoint.cluster.registry.validation_sysctls import validate_sysctls
from setpoint.cluster.registry.validation_volumes import validate_volumes
from setpoint.machinery import fielderrors as fe
from setpoint.machinery import names
from setpoint.machinery.errors import Cause
from setpoint.machinery.netutils import parse_ip_sloppy
from setpoint.machinery.objects import Obj

__all__ = ["PROTOCOLS", "validate_pod", "validate_pod_create", "validate_pod_spec",
           "validate_pod_template", "validate_pod_update"]

RESTART_POLICIES = ("Always", "OnFailure", "Never")
DNS_POLICIES = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
FS_GROUP_CHANGE_POLICIES = ("Always", "OnRootMismatch")
MAX_INT32 = 2**31 - 1
MAX_DNS_NAMESERVERS = 3
NOT_WITHOUT_RESTART_ALWAYS = "may not be set for init containers without restartPolicy=Always"

_UPDATABLE_POD_SPEC_FIELDS = ",".join((
    "`spec.containers[*].image`",
    "`spec.initContainers[*].image`",
    "`spec.activeDeadlineSeconds`",
    "`spec.tolerations` (only additions to existing tolerations)",
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously "
    "negative)",
))


def _dicts(items: Any) -> list[dict[str, Any]]:
    return [c if isinstance(c, dict) else {} for c in items or []] if isinstance(
        items, list) else []


def _containers(containers: list[dict[str, Any]], volumes: dict[str, Obj], grace: Any,
                path: str, pod_restart: str | None = None) -> list[Cause]:
    """``validateContainers``."""
    if not containers:
        return [fe.required(path)]
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, c in enumerate(containers):
        p = f"{path}[{i}]"
        causes.extend(validate_container_common(c, volumes, p, pod_restart))
        name = c.get("name") or ""
        if name in seen:
            causes.append(fe.duplicate(f"{p}.name", name))
        seen.add(name)
        causes.extend(validate_probes_and_lifecycle(c, grace, p))
        if c.get("restartPolicy") is not None:
            causes.append(fe.forbidden(f"{p}.restartPolicy",
                                       "may not be set for non-init containers"))
    causes.extend(host_port_conflicts(containers, path))
    return causes


def _init_containers(init: list[dict[str, Any]], regular: list[dict[str, Any]],
                     volumes: dict[str, Obj], grace: Any, path: str,
                     pod_restart: str | None = None) -> list[Cause]:
    """``validateInitContainers``: names unique across both lists; probes and lifecycle only
    for restartable (sidecar) init containers."""
    causes: list[Cause] = []
    seen = {c.get("name") or "" for c in regular}
    for i, c in enumerate(init):
        p = f"{path}[{i}]"
        causes.extend(validate_container_common(c, volumes, p, pod_restart))
        policy = c.get("restartPolicy")
        if policy is not None and policy != "Always":
            causes.append(fe.not_supported(f"{p}.restartPolicy", policy, ("Always",)))
        name = c.get("name") or ""
        if name in seen:
            causes.append(fe.duplicate(f"{p}.name", name))
        elif name:
            seen.add(name)
        causes.extend(host_port_conflicts([c], path))
        if policy == "Always":
            causes.extend(validate_probes_and_lifecycle(c, grace, p))
        else:
            for key in ("lifecycle", "livenessProbe", "readinessProbe", "startupProbe"):
                if c.get(key) is not None:
                    causes.append(fe.forbidden(f"{p}.{key}", NOT_WITHOUT_RESTART_ALWAYS))
    return causes


def _host_network_ports(spec: Obj, path: str, is_pod: bool) -> list[Cause]:
    """``validatePodHostNetworkDeps``: on the host's network a port is its host port."""
    if not spec.get("hostNetwork"):
        return []
    causes: list[Cause] = []
    for i, c in enumerate(_dicts(spec.get("containers"))):
        for j, port in enumerate(_dicts(c.get("ports"))):
            host, container = port.get("hostPort") or 0, port.get("containerPort") or 0
            if (is_pod or host != 0) and host != container:
                causes.append(fe.invalid(f"{path}.containers[{i}].ports[{j}].hostPort", host,
                                         "must match `containerPort` when `hostNetwork` is "
                                         "true"))
    return causes


def _pod_security_context(spec: Obj, path: str) -> list[Cause]:
    """``validatePodSpecSecurityContext``'s common checks."""
    context = spec.get("securityContext")
    if not isinstance(context, dict):
        return []
    p = f"{path}.securityContext"
    causes = validate_ids(context, p, ("fsGroup", "runAsUser", "runAsGroup"))
    for i, gid in enumerate(context.get("supplementalGroups") or []):
        if isinstance(gid, int) and not 0 <= gid <= MAX_INT32:
            causes.append(fe.invalid(f"{p}.supplementalGroups[{i}]", gid,
                                     names.inclusive_range_error(0, MAX_INT32)))
    if context.get("shareProcessNamespace") and spec.get("hostPID"):
        causes.append(fe.invalid(f"{p}.shareProcessNamespace", True,
                                 "ShareProcessNamespace and HostPID cannot both be enabled"))
    if context.get("sysctls"):
        causes.extend(validate_sysctls(context["sysctls"], spec, f"{p}.sysctls"))
    policy = context.get("fsGroupChangePolicy")
    if policy is not None and policy not in FS_GROUP_CHANGE_POLICIES:
        causes.append(fe.not_supported(f"{p}.fsGroupChangePolicy", policy,
                                       FS_GROUP_CHANGE_POLICIES))
    causes.extend(validate_seccomp_profile(context.get("seccompProfile"),
                                           f"{p}.seccompProfile"))
    causes.extend(validate_apparmor_profile_field(context.get("appArmorProfile"),
                                                  f"{p}.appArmorProfile"))
    return causes


def _dns_config(spec: Obj, path: str) -> list[Cause]:
    """``validatePodDNSConfig``."""
    config = spec.get("dnsConfig")
    p = f"{path}.dnsConfig"
    if spec.get("dnsPolicy") == "None":
        if not isinstance(config, dict):
            return [fe.required(p, "must provide `dnsConfig` when `dnsPolicy` is None")]
        if not config.get("nameservers"):
            return [fe.required(f"{p}.nameservers", "must provide at least one DNS nameserver "
                                                    "when `dnsPolicy` is None")]
    if not isinstance(config, dict):
        return []
    causes: list[Cause] = []
    servers = config.get("nameservers") or []
    if len(servers) > MAX_DNS_NAMESERVERS:
        causes.append(fe.invalid(f"{p}.nameservers", servers,
                                 f"must not have more than {MAX_DNS_NAMESERVERS} nameservers"))
    for i, option in enumerate(_dicts(config.get("options"))):
        if not option.get("name"):
            causes.append(fe.required(f"{p}.options[{i}]", "must not be empty"))
    return causes


def _gates(spec: Obj, path: str) -> list[Cause]:
    """``validateReadinessGates`` and ``validateSchedulingGates``."""
    causes: list[Cause] = []
    for i, gate in enumerate(_dicts(spec.get("readinessGates"))):
        kind = gate.get("conditionType") or ""
        causes.extend(fe.invalid(f"{path}.readinessGates[{i}].conditionType", kind, m)
                      for m in names.is_qualified_name(kind))
    seen: set[str] = set()
    for i, gate in enumerate(_dicts(spec.get("schedulingGates"))):
        name = gate.get("name") or ""
        causes.extend(fe.invalid(f"{path}.schedulingGates[{i}]", name, m)
                      for m in names.is_qualified_name(name))
        if name in seen:
            causes.append(fe.duplicate(f"{path}.schedulingGates[{i}]", name))
        seen.add(name)
    return causes


def _host_aliases(aliases: Any, path: str) -> list[Cause]:
    """``ValidateHostAliases``: an IP and DNS-subdomain host names."""
    causes: list[Cause] = []
    for i, alias in enumerate(_dicts(aliases)):
        ip = alias.get("ip") or ""
        if parse_ip_sloppy(ip) is None:
            causes.append(fe.invalid(f"{path}[{i}].ip", ip, NOT_AN_IP))
        for j, host in enumerate(alias.get("hostnames") or []):
            causes.extend(fe.invalid(f"{path}[{i}].hostnames[{j}]", host, m)
                          for m in names.is_dns1123_subdomain(str(host)))
    return causes


def _subdomain(spec: Obj, key: str, path: str) -> list[Cause]:
    value = spec.get(key)
    if not value:
        return []
    return [fe.invalid(f"{path}.{key}", value, m)
            for m in names.name_is_dns_subdomain(str(value), False)]


def _label(spec: Obj, key: str, path: str) -> list[Cause]:
    value = spec.get(key)
    if not value:
        return []
    return [fe.invalid(f"{path}.{key}", value, m) for m in names.is_dns1123_label(str(value))]


def validate_pod_spec(spec: Any, path: str, pod_meta: Obj | None = None,
                      is_pod: bool = False) -> list[Cause]:
    """``ValidatePodSpec``."""
    if not isinstance(spec, dict):
        return [fe.required(path)]
    causes: list[Cause] = []
    grace = spec.get("terminationGracePeriodSeconds")
    if grace is None:
        causes.append(fe.required(f"{path}.terminationGracePeriodSeconds"))
    volumes, volume_causes = validate_volumes(spec.get("volumes"), pod_meta, f"{path}.volumes")
    causes.extend(volume_causes)
    containers = _dicts(spec.get("containers"))
    causes.extend(_containers(containers, volumes, grace, f"{path}.containers",
                              spec.get("restartPolicy")))
    init = _dicts(spec.get("initContainers"))
    causes.extend(_init_containers(init, containers, volumes, grace, f"{path}.initContainers",
                                   spec.get("restartPolicy")))
    causes.extend(validate_ephemeral_containers(_dicts(spec.get("ephemeralContainers")),
                                                containers, init, volumes,
                                                f"{path}.ephemeralContainers"))
    causes.extend(_host_network_ports(spec, path, is_pod))
    causes.extend(required_enum(f"{path}.restartPolicy", spec.get("restartPolicy"),
                                RESTART_POLICIES))
    causes.extend(required_enum(f"{path}.dnsPolicy", spec.get("dnsPolicy"), DNS_POLICIES))
    causes.extend(names.validate_labels(spec.get("nodeSelector"), f"{path}.nodeSelector"))
    causes.extend(_pod_security_context(spec, path))
    causes.extend(validate_affinity(spec.get("affinity"), f"{path}.affinity"))
    causes.extend(_dns_config(spec, path))
    causes.extend(_gates(spec, path))
    causes.extend(validate_topology_spread_constraints(spec.get("topologySpreadConstraints"),
                                                       f"{path}.topologySpreadConstraints"))
    causes.extend(validate_windows_host_process_pod(spec, path))
    causes.extend(validate_host_users(spec, path))
    causes.extend(_subdomain(spec, "serviceAccountName", path))
    causes.extend(_subdomain(spec, "nodeName", path))
    deadline = spec.get("activeDeadlineSeconds")
    if isinstance(deadline, int) and not 1 <= deadline <= MAX_INT32:
        causes.append(fe.invalid(f"{path}.activeDeadlineSeconds", deadline,
                                 names.inclusive_range_error(1, MAX_INT32)))
    causes.extend(_label(spec, "hostname", path))
    causes.extend(_label(spec, "subdomain", path))
    causes.extend(validate_tolerations(spec.get("tolerations"), f"{path}.tolerations"))
    causes.extend(_host_aliases(spec.get("hostAliases"), f"{path}.hostAliases"))
    causes.extend(_subdomain(spec, "priorityClassName", path))
    causes.extend(validate_os(spec, path))
    return causes


def validate_pod_template(template: Any, path: str) -> list[Cause]:
    """``ValidatePodTemplateSpec``: template labels and annotations (at ``<path>.labels``:
    Go names the ObjectMeta's fields under the template itself), then its spec."""
    if not isinstance(template, dict):
        return [fe.required(path)]
    meta = template.get("metadata") or {}
    causes = names.validate_labels(meta.get("labels"), f"{path}.labels")
    causes.extend(names.validate_annotations(meta.get("annotations"), f"{path}.annotations"))
    causes.extend(validate_pod_specific_annotations(meta.get("annotations"), template.get("spec"),
                                                    f"{path}.annotations"))
    causes.extend(validate_pod_spec(template.get("spec"), f"{path}.spec"))
    if (template.get("spec") or {}).get("ephemeralContainers"):
        causes.append(fe.forbidden(f"{path}.spec.ephemeralContainers",
                                   "ephemeral containers not allowed in pod template"))
    return causes


def validate_pod(pod: Obj) -> list[Cause]:
    """The spec part of ``validatePodMetadataAndSpec`` (metadata is the caller's): the pod
    spec, then the pod-only rule that images carry no surrounding whitespace."""
    spec = pod.get("spec")
    meta = pod.get("metadata") or {}
    causes = validate_pod_specific_annotations(meta.get("annotations"), spec,
                                               "metadata.annotations")
    causes.extend(validate_pod_spec(spec, "spec", meta, is_pod=True))
    if isinstance(spec, dict):
        for key in ("containers", "initContainers"):
            for i, c in enumerate(_dicts(spec.get(key))):
                image = c.get("image") or ""
                if image != image.strip():
                    causes.append(fe.invalid(f"spec.{key}[{i}].image", image,
                                             "must not have leading or trailing whitespace"))
    return causes


def validate_pod_create(pod: Obj) -> list[Cause]:
    """What ``ValidatePodCreate`` adds for a new pod only."""
    spec = pod.get("spec") or {}
    causes: list[Cause] = []
    if spec.get("ephemeralContainers"):
        causes.append(fe.forbidden("spec.ephemeralContainers", "cannot be set on create"))
    if spec.get("nodeName") and spec.get("schedulingGates"):
        causes.append(fe.forbidden("spec.nodeName",
                                   "cannot be set until all schedulingGates have been cleared"))
    return causes + validate_apparmor_annotations_and_fields_match(pod)


def _container_updates(new: list[dict[str, Any]], old: list[dict[str, Any]], path: str
                       ) -> tuple[list[Cause], bool]:
    """``ValidateContainerUpdates``: same number of containers, each with an image."""
    if len(new) != len(old):
        return [fe.forbidden(path, "pod updates may not add or remove containers")], True
    causes: list[Cause] = []
    for i, c in enumerate(new):
        image = c.get("image") or ""
        if not image:
            causes.append(fe.required(f"{path}[{i}].image"))
        if image != image.strip():
            causes.append(fe.invalid(f"{path}[{i}].image", image,
                                     "must not have leading or trailing whitespace"))
    return causes, False


def _deadline_update(new: Any, old: Any) -> list[Cause]:
    """``activeDeadlineSeconds`` may be set, or lowered, never raised or removed."""
    path = "spec.activeDeadlineSeconds"
    if new is not None:
        if not 0 <= new <= MAX_INT32:
            return [fe.invalid(path, new, names.inclusive_range_error(0, MAX_INT32))]
        if old is not None and old < new:
            return [fe.invalid(path, new, "must be less than or equal to previous value")]
    elif old is not None:
        # field.Error prints a nil pointer as the string "null", quoted
        return [fe.invalid(path, fe.GoValue('"null"'),
                           "must not update from a positive integer to nil value")]
    return []


def _node_selector_mutation(new: Any, old: Any) -> list[Cause]:
    """``validateNodeSelectorMutation``: additions only."""
    new_map = new if isinstance(new, dict) else {}
    for key, value in (old or {}).items():
        if new_map.get(key) != value:
            return [fe.invalid("spec.nodeSelector", fe.go_string_map(new_map if new else None),
                               "only additions to spec.nodeSelector are allowed (no mutations "
                               "or deletions)")]
    return []


def validate_pod_update(new: Obj, old: Obj) -> list[Cause]:
    """``ValidatePodUpdate``'s rules for the spec (the new pod's own validation is the
    caller's)."""
    new_spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    causes: list[Cause] = []
    for key in ("containers", "initContainers"):
        errs, stop = _container_updates(_dicts(new_spec.get(key)), _dicts(old_spec.get(key)),
                                        f"spec.{key}")
        causes.extend(errs)
        if stop:
            return causes
    causes.extend(_deadline_update(new_spec.get("activeDeadlineSeconds"),
                                   old_spec.get("activeDeadlineSeconds")))
    causes.extend(validate_only_added_tolerations(new_spec.get("tolerations"),
                                                  old_spec.get("tolerations"),
                                                  "spec.tolerations"))
    old_gates = {g.get("name") for g in _dicts(old_spec.get("schedulingGates"))}
    for i, gate in enumerate(_dicts(new_spec.get("schedulingGates"))):
        if gate.get("name") not in old_gates:
            causes.append(fe.forbidden(f"spec.schedulingGates[{i}].name",
                                       "only deletion is allowed, but found new scheduling "
                                       f"gate '{gate.get('name')}'"))
    if new_spec == old_spec:
        return causes
    munged = copy.deepcopy(new_spec)
    for key in ("containers", "initContainers"):
        for c, old_c in zip(_dicts(munged.get(key)), _dicts(old_spec.get(key)), strict=False):
            if "image" in old_c:
                c["image"] = old_c["image"]
            else:
                c.pop("image", None)
    for key in ("activeDeadlineSeconds", "schedulingGates", "tolerations"):
        if key in old_spec:
            munged[key] = copy.deepcopy(old_spec[key])
        else:
            munged.pop(key, None)
    old_grace = old_spec.get("terminationGracePeriodSeconds")
    if isinstance(old_grace, int) and old_grace < 0 and munged.get(
            "terminationGracePeriodSeconds") == 1:
        munged["terminationGracePeriodSeconds"] = old_grace
    if old_spec.get("schedulingGates") and munged.get("nodeSelector") != old_spec.get(
            "nodeSelector"):
        # a gated pod may gain node selector terms (validateNodeSelectorMutation)
        causes.extend(_node_selector_mutation(munged.get("nodeSelector"),
                                              old_spec.get("nodeSelector")))
        if "nodeSelector" in old_spec:
            munged["nodeSelector"] = copy.deepcopy(old_spec["nodeSelector"])
        else:
            munged.pop("nodeSelector", None)
    if munged != old_spec:
        # specDiff := cmp.Diff(oldPod.Spec, mungedPodSpec), go-cmp's report of the two
        # (loaded for a refused update only: not at the server's start)
        from setpoint.cluster.registry.podspecdiff import pod_spec_diff

        causes.append(fe.forbidden(
            "spec", f"pod updates may not change fields other than {_UPDATABLE_POD_SPEC_FIELDS}"
            f"\n{pod_spec_diff(old_spec, munged)}"))
    return causes

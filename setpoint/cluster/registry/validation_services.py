"""Service validation (``pkg/apis/core/validation``: ValidateService, validateServicePort,
validateClientIPAffinityConfig, validateServiceExternalTrafficPolicy, ValidateServiceUpdate),
over ``validation_serviceips`` (cluster IPs and families) and ``validation_serviceaccess``
(external IPs, source ranges, load balancer class, traffic policies and distribution).
"""

from __future__ import annotations

from typing import Any

from setpoint.cluster.registry.validation_containers import PROTOCOLS, port_num_or_name
from setpoint.cluster.registry.validation_serviceaccess import (
    ONLY_LOAD_BALANCER,
    validate_class_and_policies,
    validate_external_access_update,
    validate_external_ips,
    validate_source_ranges,
)
from setpoint.cluster.registry.validation_serviceips import (
    validate_cluster_ips_related_fields,
    validate_upgrade_downgrade,
)
from setpoint.machinery import fielderrors as fe
from setpoint.machinery import names
from setpoint.machinery.errors import Cause
from setpoint.machinery.objects import Obj

SERVICE_TYPES = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")
SESSION_AFFINITIES = ("ClientIP", "None")
TRAFFIC_POLICIES = ("Cluster", "Local")
MAX_CLIENT_IP_AFFINITY_SECONDS = 86400
KUBELET_PORT = 10250  # pkg/cluster/ports


def _port(port: dict[str, Any], path: str, require_name: bool, seen: set[str]
          ) -> list[Cause]:
    """``validateServicePort``."""
    causes: list[Cause] = []
    name = port.get("name") or ""
    if require_name and not name:
        causes.append(fe.required(f"{path}.name"))
    elif name:
        causes.extend(fe.invalid(f"{path}.name", name, m) for m in names.is_dns1123_label(name))
        if name in seen:
            causes.append(fe.duplicate(f"{path}.name", name))
        seen.add(name)
    number = port.get("port")
    if not isinstance(number, int) or not 1 <= number <= 65535:
        causes.append(fe.invalid(f"{path}.port", number if number is not None else 0,
                                 names.inclusive_range_error(1, 65535)))
    protocol = port.get("protocol") or ""
    if not protocol:
        causes.append(fe.required(f"{path}.protocol"))
    elif protocol not in PROTOCOLS:
        causes.append(fe.not_supported(f"{path}.protocol", protocol, PROTOCOLS))
    causes.extend(port_num_or_name(port.get("targetPort"), f"{path}.targetPort"))
    app_protocol = port.get("appProtocol")
    if app_protocol is not None:
        causes.extend(fe.invalid(f"{path}.appProtocol", app_protocol, m)
                      for m in names.is_qualified_name(str(app_protocol)))
    return causes


def _affinity(spec: Obj) -> list[Cause]:
    affinity = spec.get("sessionAffinity") or ""
    if not affinity:
        return [fe.required("spec.sessionAffinity")]
    if affinity not in SESSION_AFFINITIES:
        return [fe.not_supported("spec.sessionAffinity", affinity, SESSION_AFFINITIES)]
    config = spec.get("sessionAffinityConfig")
    path = "spec.sessionAffinityConfig"
    if affinity == "None":
        return [fe.forbidden(path, "must not be set when session affinity is None")] \
            if config is not None else []
    when = "when session affinity type is ClientIP"
    if not isinstance(config, dict):
        return [fe.required(path, when)]
    client_ip = config.get("clientIP")
    if not isinstance(client_ip, dict):
        return [fe.required(f"{path}.clientIP", when)]
    timeout = client_ip.get("timeoutSeconds")
    if timeout is None:
        return [fe.required(f"{path}.clientIP.timeoutSeconds", when)]
    if not 0 < timeout <= MAX_CLIENT_IP_AFFINITY_SECONDS:
        return [fe.invalid(f"{path}.clientIP.timeoutSeconds", timeout,
                           f"must be greater than 0 and less than "
                           f"{MAX_CLIENT_IP_AFFINITY_SECONDS}")]
    return []


def _external_traffic_policy(spec: Obj, kind: str) -> list[Cause]:
    """``validateServiceExternalTrafficPolicy``: the policy only on an externally accessible
    Service (apiservice.ExternallyAccessible), where it is required; the health check node
    port only, and always, on a LoadBalancer with the Local policy (NeedsHealthCheck)."""
    causes: list[Cause] = []
    external = spec.get("externalTrafficPolicy") or ""
    accessible = kind in ("LoadBalancer", "NodePort") or (
        kind == "ClusterIP" and bool(spec.get("externalIPs")))
    if not accessible:
        if external:
            causes.append(fe.invalid("spec.externalTrafficPolicy", external,
                                     "may only be set for externally-accessible services"))
    elif not external:
        causes.append(fe.required("spec.externalTrafficPolicy"))
    elif external not in TRAFFIC_POLICIES:
        causes.append(fe.not_supported("spec.externalTrafficPolicy", external,
                                       TRAFFIC_POLICIES))
    health = spec.get("healthCheckNodePort") or 0
    if not (kind == "LoadBalancer" and external == "Local"):
        if health:
            causes.append(fe.invalid(
                "spec.healthCheckNodePort", health, "may only be set when `type` is "
                "'LoadBalancer' and `externalTrafficPolicy` is 'Local'"))
    elif not health:
        causes.append(fe.required("spec.healthCheckNodePort"))
    elif not isinstance(health, int) or not 1 <= health <= 65535:
        causes.append(fe.invalid("spec.healthCheckNodePort", health,
                                 names.inclusive_range_error(1, 65535)))
    return causes


def _type_rules(spec: Obj, kind: str, headless: bool) -> list[Cause]:
    causes: list[Cause] = []
    if kind == "LoadBalancer":
        # (a workaround for clouds that over-open firewalls: ports.KubeletPort)
        causes.extend(fe.invalid(f"spec.ports[{i}]", port.get("port"),
                                 f"may not expose port {KUBELET_PORT} externally since it is "
                                 "used by kubelet")
                      for i, port in enumerate(spec.get("ports") or [])
                      if isinstance(port, dict) and port.get("port") == KUBELET_PORT)
    if kind in ("LoadBalancer", "NodePort") and headless:
        causes.append(fe.invalid("spec.clusterIPs[0]", "None",
                                 f"may not be set to 'None' for {kind} services"))
    if kind == "ExternalName":
        if spec.get("clusterIP") or spec.get("clusterIPs"):
            causes.append(fe.forbidden("spec.clusterIPs",
                                       "may not be set for ExternalName services"))
        if spec.get("ipFamilies"):
            causes.append(fe.forbidden("spec.ipFamilies",
                                       "may not be set for ExternalName services"))
        if spec.get("ipFamilyPolicy") is not None:
            causes.append(fe.forbidden("spec.ipFamilyPolicy",
                                       "may not be set for ExternalName services"))
        cname = str(spec.get("externalName") or "").removesuffix(".")
        if cname:
            causes.extend(fe.invalid("spec.externalName", cname, m)
                          for m in names.is_dns1123_subdomain(cname))
        else:
            causes.append(fe.required("spec.externalName"))
    return causes


def _port_uniqueness(ports: list[dict[str, Any]], kind: str) -> list[Cause]:
    causes: list[Cause] = []
    if kind == "ClusterIP":
        causes.extend(fe.forbidden(f"spec.ports[{i}].nodePort",
                                   "may not be used when `type` is 'ClusterIP'")
                      for i, port in enumerate(ports) if port.get("nodePort"))
    node_ports: set[tuple[Any, Any]] = set()
    for i, port in enumerate(ports):
        if not port.get("nodePort"):
            continue
        key = (port.get("protocol") or "", port["nodePort"])
        if key in node_ports:
            causes.append(fe.duplicate(f"spec.ports[{i}].nodePort", port["nodePort"]))
        node_ports.add(key)
    seen: set[tuple[Any, Any]] = set()
    for i, port in enumerate(ports):
        protocol, number = port.get("protocol") or "", port.get("port") or 0
        if (protocol, number) in seen:
            causes.append(fe.duplicate(f"spec.ports[{i}]", fe.GoValue(
                f"core.ServicePort{{Name:\"\", Protocol:{fe.go_quote(protocol)}, "
                f"AppProtocol:(*string)(nil), Port:{number}, TargetPort:intstr.IntOrString"
                "{Type:0, IntVal:0, StrVal:\"\"}, NodePort:0}")))
        seen.add((protocol, number))
    return causes


def validate_service(obj: Obj) -> list[Cause]:
    """The spec part of ``ValidateService``, in its order."""
    spec = obj.get("spec") or {}
    kind = spec.get("type") or ""
    headless = spec.get("clusterIP") == "None"
    ports = [p if isinstance(p, dict) else {} for p in spec.get("ports") or []]
    causes: list[Cause] = []
    if not ports and not headless and kind != "ExternalName":
        causes.append(fe.required("spec.ports"))
    causes.extend(_type_rules(spec, kind, headless))
    seen: set[str] = set()
    for i, port in enumerate(ports):
        causes.extend(_port(port, f"spec.ports[{i}]", len(ports) > 1, seen))
    if spec.get("selector") is not None:
        causes.extend(names.validate_labels(spec["selector"], "spec.selector"))
    causes.extend(_affinity(spec))
    causes.extend(validate_cluster_ips_related_fields(spec))
    causes.extend(validate_external_ips(spec))
    if not kind:
        causes.append(fe.required("spec.type"))
    elif kind not in SERVICE_TYPES:
        causes.append(fe.not_supported("spec.type", kind, SERVICE_TYPES))
    causes.extend(_port_uniqueness(ports, kind))
    causes.extend(validate_source_ranges(spec, (obj.get("metadata") or {}).get("annotations")))
    if spec.get("allocateLoadBalancerNodePorts") is not None and kind != "LoadBalancer":
        causes.append(fe.forbidden("spec.allocateLoadBalancerNodePorts", ONLY_LOAD_BALANCER))
    causes.extend(validate_class_and_policies(spec, _external_traffic_policy(spec, kind)))
    return causes


def validate_service_update(new: Obj, old: Obj) -> list[Cause]:
    """``ValidateServiceUpdate``'s own rules (before ValidateService's): the primary cluster
    IP and IP family are fixed unless the service is, or becomes, an ExternalName; then the
    load balancer class and health check node port rules of an update."""
    spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    return (validate_upgrade_downgrade(spec, old_spec)
            + validate_external_access_update(spec, old_spec))

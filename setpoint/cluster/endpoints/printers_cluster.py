"""The cells of the apiserver's printers (pkg/printers/internalversion/printers.go) for the
built-in kinds beyond workloads and pods: services, configuration, nodes, events, storage,
networking, RBAC, policy, admission, flow control and autoscaling."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from setpoint.cluster.endpoints.durations import age, human_duration, rfc3339
from setpoint.cluster.endpoints.printers import (
    NONE,
    Cells,
    age_of,
    dig,
    format_labels,
    format_selector,
    int_at,
    name_of,
)
from setpoint.machinery.objects import Obj

# -- services, config, cluster ------------------------------------------------------------

def _join_host_port(host: str, port: Any) -> str:
    """net.JoinHostPort: IPv6 hosts in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _load_balancer_ips(obj: Obj) -> list[str]:
    """loadBalancerStatusStringer (wide, as the server prints): the ingress IPs, else
    hostnames, as a sorted set."""
    found = set()
    for ingress in dig(obj, "status", "loadBalancer", "ingress", default=[]) or []:
        if isinstance(ingress, dict):
            if ingress.get("ip"):
                found.add(str(ingress["ip"]))
            elif ingress.get("hostname"):
                found.add(str(ingress["hostname"]))
    return sorted(found)


def service_cells(obj: Obj, now: datetime) -> Cells:
    """printService with getServiceExternalIP and makePortString."""
    spec = obj.get("spec", {})
    kind = spec.get("type") or ""
    cluster_ips = spec.get("clusterIPs") or ([spec["clusterIP"]] if spec.get("clusterIP")
                                             else [])
    external = [str(ip) for ip in spec.get("externalIPs") or []]
    if kind in ("ClusterIP", "NodePort"):
        external_text = ",".join(external) or NONE
    elif kind == "LoadBalancer":
        lb = _load_balancer_ips(obj)
        external_text = ",".join(lb + external) or "<pending>"
    elif kind == "ExternalName":
        external_text = str(spec.get("externalName") or "")
    else:
        external_text = "<unknown>"
    ports = []
    for p in spec.get("ports") or []:
        text = f"{p.get('port', 0)}/{p.get('protocol', '')}"
        if int_at(p, "nodePort") > 0:
            text = f"{p.get('port', 0)}:{p['nodePort']}/{p.get('protocol', '')}"
        ports.append(text)
    return [name_of(obj), kind, cluster_ips[0] if cluster_ips else NONE, external_text,
            ",".join(ports) or NONE, age_of(obj, now), format_labels(spec.get("selector"))], []


def namespace_cells(obj: Obj, now: datetime) -> Cells:
    return [name_of(obj), dig(obj, "status", "phase", default="") or "", age_of(obj, now)], []


def config_map_cells(obj: Obj, now: datetime) -> Cells:
    count = len(obj.get("data") or {}) + len(obj.get("binaryData") or {})
    return [name_of(obj), count, age_of(obj, now)], []


def secret_cells(obj: Obj, now: datetime) -> Cells:
    return [name_of(obj), obj.get("type") or "", len(obj.get("data") or {}), age_of(obj, now)], []


def service_account_cells(obj: Obj, now: datetime) -> Cells:
    return [name_of(obj), len(obj.get("secrets") or []), age_of(obj, now)], []


def lease_cells(obj: Obj, now: datetime) -> Cells:
    return [name_of(obj), dig(obj, "spec", "holderIdentity") or "", age_of(obj, now)], []


def endpoints_cells(obj: Obj, now: datetime) -> Cells:
    """printEndpoints / formatEndpoints: up to three host:port pairs, then ``+ N more...``;
    ``<none>`` only when there are no subsets."""
    subsets = obj.get("subsets") or []
    if not subsets:
        return [name_of(obj), NONE, age_of(obj, now)], []
    shown: list[str] = []
    count, more = 0, False
    for subset in subsets:
        addresses = [a for a in subset.get("addresses") or [] if isinstance(a, dict)]
        ports = subset.get("ports") or []
        for port in ports or [None]:
            count += len(addresses)
            for a in addresses:
                if len(shown) == 3:
                    more = True
                    break
                ip = str(a.get("ip", ""))
                shown.append(ip if port is None else _join_host_port(ip, port.get("port", 0)))
    text = ",".join(shown)
    if more:
        text = f"{text} + {count - 3} more..."
    return [name_of(obj), text, age_of(obj, now)], []


def node_cells(obj: Obj, now: datetime) -> Cells:
    """printNode: Ready/NotReady (Unknown without the condition), SchedulingDisabled, and
    findNodeRoles' sorted set of node-role.kubernetes.io/ and kubernetes.io/role labels."""
    status, spec, meta = obj.get("status", {}), obj.get("spec", {}), obj.get("metadata", {})
    ready = None
    for condition in status.get("conditions") or []:
        if condition.get("type") == "Ready":
            ready = condition  # the last of a type wins, as in printNode's map
    states = ["Unknown"] if ready is None else [
        "Ready" if ready.get("status") == "True" else "NotReady"]
    if spec.get("unschedulable"):
        states.append("SchedulingDisabled")
    roles = set()
    for key, value in (meta.get("labels") or {}).items():
        if key.startswith("node-role.kubernetes.io/"):
            if key[len("node-role.kubernetes.io/"):]:
                roles.add(key[len("node-role.kubernetes.io/"):])
        elif key == "kubernetes.io/role" and value:
            roles.add(value)
    info = status.get("nodeInfo") or {}
    addresses = status.get("addresses") or []

    def address(kind: str) -> str:
        return next((a.get("address") for a in addresses if a.get("type") == kind), NONE)
    return [name_of(obj), ",".join(states), ",".join(sorted(roles)) or NONE, age_of(obj, now),
            info.get("kubeletVersion", ""), address("InternalIP"), address("ExternalIP"),
            info.get("osImage") or "<unknown>", info.get("kernelVersion") or "<unknown>",
            info.get("containerRuntimeVersion") or "<unknown>"], []


def event_cells(obj: Obj, now: datetime) -> Cells:
    """printEvent: LAST SEEN from lastTimestamp, else the first seen; a series' last
    observation and count win; OBJECT is kind/name lower-cased; SOURCE falls back to the
    reporting controller and instance."""
    first_ts = obj.get("firstTimestamp")
    first = age(first_ts, now) if first_ts else age(obj.get("eventTime"), now)
    last = age(obj.get("lastTimestamp"), now) if obj.get("lastTimestamp") else first
    count = obj.get("count") or 0
    series = obj.get("series")
    if isinstance(series, dict):
        last = age(series.get("lastObservedTime"), now)
        count = series.get("count") or 0
    elif count == 0:
        count = 1
    involved = obj.get("involvedObject") or {}
    kind = str(involved.get("kind") or "").lower()
    target = f"{kind}/{involved['name']}" if involved.get("name") else kind
    source = obj.get("source") or {}
    component = source.get("component") or obj.get("reportingComponent") or ""
    instance = source.get("host") or obj.get("reportingInstance") or ""
    source_text = f"{component}, {instance}" if instance else component
    return [last, obj.get("type", ""), obj.get("reason", ""), target,
            involved.get("fieldPath", ""), source_text, str(obj.get("message") or "").strip(),
            first, count, name_of(obj)], []


def events_v1_cells(obj: Obj, now: datetime) -> Cells:
    """events.k8s.io Events share the core Event's storage and printer (printEvent), on the
    fields they convert to (pkg/apis/events/v1/conversion.go)."""
    core = {"metadata": obj.get("metadata", {}), "eventTime": obj.get("eventTime"),
            "series": obj.get("series"), "reportingComponent": obj.get("reportingController"),
            "reportingInstance": obj.get("reportingInstance"), "type": obj.get("type", ""),
            "reason": obj.get("reason", ""), "message": obj.get("note", ""),
            "involvedObject": obj.get("regarding") or {},
            "source": obj.get("deprecatedSource") or {},
            "firstTimestamp": obj.get("deprecatedFirstTimestamp"),
            "lastTimestamp": obj.get("deprecatedLastTimestamp"),
            "count": obj.get("deprecatedCount") or 0}
    return event_cells(core, now)


def access_modes(modes: Any) -> str:
    """helper.GetAccessModesAsString: RWO, ROX, RWX, RWOP in that order, each once."""
    present = set(modes or [])
    return ",".join(short for mode, short in _ACCESS_MODES.items() if mode in present)


_ACCESS_MODES = {"ReadWriteOnce": "RWO", "ReadOnlyMany": "ROX", "ReadWriteMany": "RWX",
                 "ReadWriteOncePod": "RWOP"}
_BETA_CLASS = "volume.beta.kubernetes.io/storage-class"


def _volume_class(obj: Obj) -> str:
    """helper.GetPersistentVolume(Claim)Class: the beta annotation, else storageClassName."""
    annotations = dig(obj, "metadata", "annotations", default={}) or {}
    if _BETA_CLASS in annotations:
        return str(annotations[_BETA_CLASS])
    return str(dig(obj, "spec", "storageClassName") or "")


def pvc_cells(obj: Obj, now: datetime) -> Cells:
    """printPersistentVolumeClaim: capacity and access modes only once bound to a volume."""
    spec, status = obj.get("spec", {}), obj.get("status", {})
    phase = "Terminating" if dig(obj, "metadata", "deletionTimestamp") else \
        status.get("phase", "")
    capacity = modes = ""
    if spec.get("volumeName"):
        modes = access_modes(status.get("accessModes"))
        capacity = str(dig(status, "capacity", "storage") or "0")
    vac = spec.get("volumeAttributesClassName")
    return [name_of(obj), phase, spec.get("volumeName", ""), capacity, modes,
            _volume_class(obj), "<unset>" if vac is None else vac, age_of(obj, now),
            spec.get("volumeMode") or "<unset>"], []


def pv_cells(obj: Obj, now: datetime) -> Cells:
    """printPersistentVolume."""
    spec, status = obj.get("spec", {}), obj.get("status", {})
    claim = spec.get("claimRef")
    claim_text = f"{claim.get('namespace', '')}/{claim.get('name', '')}" if claim else ""
    phase = "Terminating" if dig(obj, "metadata", "deletionTimestamp") else \
        status.get("phase", "")
    vac = spec.get("volumeAttributesClassName")
    return [name_of(obj), str(dig(spec, "capacity", "storage") or "0"),
            access_modes(spec.get("accessModes")),
            spec.get("persistentVolumeReclaimPolicy", ""), phase, claim_text,
            _volume_class(obj), "<unset>" if vac is None else vac,
            status.get("reason", ""), age_of(obj, now), spec.get("volumeMode") or "<unset>"], []


def ingress_cells(obj: Obj, now: datetime) -> Cells:
    """printIngress with formatHosts (three hosts, then ``+ N more...`` counted over all
    rules) and ingressLoadBalancerStatusStringer."""
    spec = obj.get("spec", {})
    rules = [r for r in spec.get("rules") or [] if isinstance(r, dict)]
    hosts: list[str] = []
    more = False
    for rule in rules:
        if len(hosts) == 3:
            more = True
        if not more and rule.get("host"):
            hosts.append(rule["host"])
    hosts_text = ",".join(hosts) if hosts else "*"
    if hosts and more:
        hosts_text = f"{hosts_text} + {len(rules) - 3} more..."
    ports = "80, 443" if spec.get("tls") else "80"
    return [name_of(obj), spec.get("ingressClassName") or NONE, hosts_text,
            ",".join(_load_balancer_ips(obj)), ports, age_of(obj, now)], []


def network_policy_cells(obj: Obj, now: datetime) -> Cells:
    selector = dig(obj, "spec", "podSelector") or {}
    text = format_selector(selector) if selector else "<none>"
    return [name_of(obj), text, age_of(obj, now)], []


def created_at_cells(obj: Obj, now: datetime) -> Cells:
    return [name_of(obj), rfc3339(dig(obj, "metadata", "creationTimestamp"))], []


def role_binding_cells(obj: Obj, now: datetime) -> Cells:
    subjects = obj.get("subjects") or []
    users = [s.get("name", "") for s in subjects if s.get("kind") == "User"]
    groups = [s.get("name", "") for s in subjects if s.get("kind") == "Group"]
    sas = [f"{s.get('namespace', '')}/{s.get('name', '')}" for s in subjects
           if s.get("kind") == "ServiceAccount"]
    ref = obj.get("roleRef") or {}
    return [name_of(obj), f"{ref.get('kind', '')}/{ref.get('name', '')}", age_of(obj, now),
            ", ".join(users), ", ".join(groups), ", ".join(sas)], []


def storage_class_cells(obj: Obj, now: datetime) -> Cells:
    """printStorageClass; storageutil.IsDefaultAnnotation reads the GA and beta keys."""
    name = name_of(obj)
    annotations = dig(obj, "metadata", "annotations", default={}) or {}
    if annotations.get("storageclass.kubernetes.io/is-default-class") == "true" or \
            annotations.get("storageclass.beta.kubernetes.io/is-default-class") == "true":
        name = f"{name} (default)"
    return [name, obj.get("provisioner", ""), obj.get("reclaimPolicy") or "Delete",
            obj.get("volumeBindingMode") or "Immediate",
            bool(obj.get("allowVolumeExpansion", False)), age_of(obj, now)], []


def pdb_cells(obj: Obj, now: datetime) -> Cells:
    spec = obj.get("spec", {})
    return [name_of(obj), str(spec["minAvailable"]) if "minAvailable" in spec else "N/A",
            str(spec["maxUnavailable"]) if "maxUnavailable" in spec else "N/A",
            int_at(obj, "status", "disruptionsAllowed"), age_of(obj, now)], []


def priority_class_cells(obj: Obj, now: datetime) -> Cells:
    return [name_of(obj), obj.get("value", 0), bool(obj.get("globalDefault", False)),
            age_of(obj, now), obj.get("preemptionPolicy") or ""], []


def controller_revision_cells(obj: Obj, now: datetime) -> Cells:
    owner = next((o for o in dig(obj, "metadata", "ownerReferences", default=[]) or []
                  if o.get("controller")), None)
    controller = NONE
    if owner is not None:
        group = owner.get("apiVersion", "").rpartition("/")[0]
        kind = owner.get("kind", "").lower() + (f".{group}" if group else "")
        controller = f"{kind}/{owner.get('name', '')}"
    return [name_of(obj), controller, obj.get("revision", 0), age_of(obj, now)], []


def webhooks_cells(obj: Obj, now: datetime) -> Cells:
    return [name_of(obj), len(obj.get("webhooks") or []), age_of(obj, now)], []


def ingress_class_cells(obj: Obj, now: datetime) -> Cells:
    """printIngressClass: PARAMETERS is Kind[.apiGroup]/name."""
    params = dig(obj, "spec", "parameters")
    text = NONE
    if isinstance(params, dict):
        text = str(params.get("kind", ""))
        if params.get("apiGroup") is not None:
            text = f"{text}.{params['apiGroup']}"
        text = f"{text}/{params.get('name', '')}"
    return [name_of(obj), dig(obj, "spec", "controller") or "", text, age_of(obj, now)], []


def _hpa_v2_metrics(obj: Obj) -> tuple[list[Obj], list[Obj]]:
    """The metric specs and statuses as autoscaling/v2 spells them; an autoscaling/v1 object
    converts its CPU percentage to a Resource metric (autoscaling/v1 conversion.go)."""
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    if "metrics" in spec or "currentMetrics" in status:
        return list(spec.get("metrics") or []), list(status.get("currentMetrics") or [])
    specs: list[Obj] = []
    statuses: list[Obj] = []
    if spec.get("targetCPUUtilizationPercentage") is not None:
        specs.append({"type": "Resource", "resource": {"name": "cpu", "target": {
            "type": "Utilization",
            "averageUtilization": spec["targetCPUUtilizationPercentage"]}}})
    if status.get("currentCPUUtilizationPercentage") is not None:
        statuses.append({"type": "Resource", "resource": {"name": "cpu", "current": {
            "averageUtilization": status["currentCPUUtilizationPercentage"]}}})
    return specs, statuses


def format_hpa_metrics(specs: list[Obj], statuses: list[Obj]) -> str:
    """formatHPAMetrics: each metric as current/target, two at most then ``+ N more...``."""
    if not specs:
        return NONE
    shown: list[str] = []
    for i, metric in enumerate(specs):
        status = statuses[i] if i < len(statuses) and isinstance(statuses[i], dict) else {}
        kind = metric.get("type")
        key = {"External": "external", "Pods": "pods", "Object": "object",
               "Resource": "resource", "ContainerResource": "containerResource"}.get(str(kind))
        if key is None:
            shown.append("<unknown type>")
            continue
        source = metric.get(key) or {}
        target = source.get("target") or {}
        current_of = status.get(key)
        current = (current_of or {}).get("current") or {}
        if key == "pods":
            now_text = str(current.get("averageValue") or "0") if current_of else "<unknown>"
            shown.append(f"{now_text}/{target.get('averageValue') or '0'}")
        elif key in ("external", "object"):
            if target.get("averageValue") is not None:
                now_text = str(current["averageValue"]) if current_of and \
                    current.get("averageValue") is not None else "<unknown>"
                shown.append(f"{now_text}/{target['averageValue']} (avg)")
            else:
                now_text = str(current.get("value") or "0") if current_of else "<unknown>"
                shown.append(f"{now_text}/{target.get('value') or '0'}")
        else:
            name = source.get("name", "")
            if target.get("averageValue") is not None:
                now_text = str(current.get("averageValue") or "0") if current_of \
                    else "<unknown>"
                shown.append(f"{name}: {now_text}/{target['averageValue']}")
            else:
                now_text = f"{current['averageUtilization']}%" if current_of and \
                    current.get("averageUtilization") is not None else "<unknown>"
                goal = f"{target['averageUtilization']}%" if \
                    target.get("averageUtilization") is not None else "<auto>"
                shown.append(f"{name}: {now_text}/{goal}")
    text = ", ".join(shown[:2])
    return f"{text} + {len(shown) - 2} more..." if len(shown) > 2 else text


def hpa_cells(obj: Obj, now: datetime) -> Cells:
    """printHorizontalPodAutoscaler."""
    spec, status = obj.get("spec", {}), obj.get("status", {})
    ref = spec.get("scaleTargetRef") or {}
    min_pods = spec.get("minReplicas")
    return [name_of(obj), f"{ref.get('kind', '')}/{ref.get('name', '')}",
            format_hpa_metrics(*_hpa_v2_metrics(obj)),
            "<unset>" if min_pods is None else str(min_pods), int_at(spec, "maxReplicas"),
            int_at(status, "currentReplicas"), age_of(obj, now)], []


def apiservice_cells(obj: Obj, now: datetime) -> Cells:
    """kube-aggregator's APIService table (pkg/registry/apiservice/etcd/etcd.go): the
    Service or ``Local``, and the Available condition with its reason unless True."""
    spec = obj.get("spec") or {}
    service = spec.get("service")
    where = f"{service.get('namespace', '')}/{service.get('name', '')}" if service else "Local"
    available = "Unknown"
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Available":
            status, reason = condition.get("status", ""), condition.get("reason", "")
            available = status if status == "True" or not reason else f"{status} ({reason})"
            break
    return [name_of(obj), where, available, age_of(obj, now)], []


# -- kinds whose printers list a few fields ----------------------------------------------

def _more(shown: list[str], count: int, limit: int = 3) -> str:
    """listWithMoreString: ``<unset>`` when empty, ``+ N more...`` past the limit."""
    text = ",".join(shown)
    if count > limit:
        return f"{text} + {count - limit} more..."
    return text or "<unset>"


def endpoint_slice_cells(obj: Obj, now: datetime) -> Cells:
    """printEndpointSlice with formatDiscoveryPorts and formatDiscoveryEndpoints."""
    ports = [p for p in obj.get("ports") or [] if isinstance(p, dict)]
    port_texts = [str(p["port"]) if p.get("port") is not None else
                  str(p["name"]) if p.get("name") is not None else "*" for p in ports[:3]]
    addresses = [str(a) for e in obj.get("endpoints") or [] if isinstance(e, dict)
                 for a in e.get("addresses") or []]
    return [name_of(obj), obj.get("addressType", ""), _more(port_texts, len(ports)),
            _more(addresses[:3], len(addresses)), age_of(obj, now)], []


def pod_template_cells(obj: Obj, now: datetime) -> Cells:
    """printPodTemplate: containers, images and the template's labels."""
    containers = dig(obj, "template", "spec", "containers", default=[]) or []
    return [name_of(obj), ",".join(str(c.get("name", "")) for c in containers),
            ",".join(str(c.get("image", "")) for c in containers),
            format_labels(dig(obj, "template", "metadata", "labels"))], []


def component_status_cells(obj: Obj, now: datetime) -> Cells:
    """printComponentStatus: the Healthy condition's verdict, message and error."""
    for condition in obj.get("conditions") or []:
        if condition.get("type") == "Healthy":
            verdict = "Healthy" if condition.get("status") == "True" else "Unhealthy"
            return [name_of(obj), verdict, condition.get("message", ""),
                    condition.get("error", "")], []
    return [name_of(obj), "Unknown", "", ""], []


def resource_quota_cells(obj: Obj, now: datetime) -> Cells:
    """printResourceQuota: used/hard per resource, limits.* in LIMIT, the rest in REQUEST."""
    hard = dig(obj, "status", "hard", default={}) or {}
    used = dig(obj, "status", "used", default={}) or {}
    request: list[str] = []
    limit: list[str] = []
    for resource in sorted(hard):
        pieces = resource.split(".")
        target = limit if len(pieces) > 1 and pieces[0] == "limits" else request
        target.append(f"{resource}: {used.get(resource) or '0'}/{hard[resource]}")
    return [name_of(obj), ", ".join(request), ", ".join(limit), age_of(obj, now)], []


def csr_cells(obj: Obj, now: datetime) -> Cells:
    """printCertificateSigningRequest with extractCSRStatus."""
    spec = obj.get("spec") or {}
    kinds = {c.get("type") for c in dig(obj, "status", "conditions", default=[]) or []}
    verdict = "Denied" if "Denied" in kinds else "Approved" if "Approved" in kinds \
        else "Pending"
    if "Failed" in kinds:
        verdict += ",Failed"
    if dig(obj, "status", "certificate"):
        verdict += ",Issued"
    seconds = spec.get("expirationSeconds")
    requested = NONE if seconds is None else human_duration(float(seconds))
    return [name_of(obj), age_of(obj, now), spec.get("signerName") or NONE,
            spec.get("username", ""), requested, verdict], []


def flow_schema_cells(obj: Obj, now: datetime) -> Cells:
    """printFlowSchema: MISSINGPL is the Dangling condition's status, ``?`` without one."""
    spec = obj.get("spec") or {}
    method = dig(spec, "distinguisherMethod", "type")
    dangling = next((str(c.get("status", "")) for c in
                     dig(obj, "status", "conditions", default=[]) or []
                     if c.get("type") == "Dangling"), "?")
    return [name_of(obj), dig(spec, "priorityLevelConfiguration", "name") or "",
            int_at(spec, "matchingPrecedence"), method or NONE, age_of(obj, now),
            dangling], []


def flow_schema_order(obj: Obj) -> tuple[int, str]:
    """printFlowSchemaList sorts by FlowSchemaSequence: precedence, then name."""
    return int_at(obj.get("spec") or {}, "matchingPrecedence"), name_of(obj)


def priority_level_cells(obj: Obj, now: datetime) -> Cells:
    """printPriorityLevelConfiguration: the Limited settings, ``<none>`` when Exempt."""
    spec = obj.get("spec") or {}
    limited = spec.get("limited")
    shares: Any = NONE
    queues: Any = NONE
    hand: Any = NONE
    length: Any = NONE
    if isinstance(limited, dict):
        shares = int_at(limited, "nominalConcurrencyShares")
        queuing = dig(limited, "limitResponse", "queuing")
        if isinstance(queuing, dict):
            queues, hand = int_at(queuing, "queues"), int_at(queuing, "handSize")
            length = int_at(queuing, "queueLengthLimit")
    return [name_of(obj), spec.get("type", ""), shares, queues, hand, length,
            age_of(obj, now)], []


def runtime_class_cells(obj: Obj, now: datetime) -> Cells:
    """printRuntimeClass."""
    return [name_of(obj), obj.get("handler", ""), age_of(obj, now)], []


def csi_node_cells(obj: Obj, now: datetime) -> Cells:
    """printCSINode: the number of drivers."""
    return [name_of(obj), len(dig(obj, "spec", "drivers", default=[]) or []),
            age_of(obj, now)], []


def csi_driver_cells(obj: Obj, now: datetime) -> Cells:
    """printCSIDriver, with its defaults for unset flags."""
    spec = obj.get("spec") or {}
    tokens = spec.get("tokenRequests")
    token_text = "<unset>" if tokens is None else ",".join(
        str(t.get("audience", "")) for t in tokens)
    modes = ",".join(str(m) for m in spec.get("volumeLifecycleModes") or []) or NONE
    attach = spec.get("attachRequired")
    return [name_of(obj), True if attach is None else bool(attach),
            bool(spec.get("podInfoOnMount") or False), bool(spec.get("storageCapacity") or False),
            token_text, bool(spec.get("requiresRepublish") or False), modes,
            age_of(obj, now)], []


def csi_storage_capacity_cells(obj: Obj, now: datetime) -> Cells:
    """printCSIStorageCapacity."""
    capacity = obj.get("capacity")
    return [name_of(obj), obj.get("storageClassName", ""),
            "<unset>" if capacity is None else str(capacity)], []


def volume_attachment_cells(obj: Obj, now: datetime) -> Cells:
    """printVolumeAttachment."""
    spec = obj.get("spec") or {}
    return [name_of(obj), spec.get("attacher", ""),
            dig(spec, "source", "persistentVolumeName") or "", spec.get("nodeName", ""),
            bool(dig(obj, "status", "attached") or False), age_of(obj, now)], []


def admission_policy_cells(obj: Obj, now: datetime) -> Cells:
    """printValidatingAdmissionPolicy: the number of validations and the param kind."""
    spec = obj.get("spec") or {}
    kind = spec.get("paramKind")
    param = "<unset>" if not isinstance(kind, dict) else \
        f"{kind.get('apiVersion', '')}/{kind.get('kind', '')}"
    return [name_of(obj), len(spec.get("validations") or []), param, age_of(obj, now)], []


def admission_policy_binding_cells(obj: Obj, now: datetime) -> Cells:
    """printValidatingAdmissionPolicyBinding: PARAMREF as namespace/name (``*`` for no
    namespace) or the selector."""
    spec = obj.get("spec") or {}
    ref = spec.get("paramRef")
    param = "<unset>"
    if isinstance(ref, dict):
        if ref.get("name"):
            param = f"{ref.get('namespace') or '*'}/{ref['name']}"
        elif ref.get("selector") is not None:
            param = format_selector(ref["selector"])
    return [name_of(obj), spec.get("policyName", ""), param, age_of(obj, now)], []

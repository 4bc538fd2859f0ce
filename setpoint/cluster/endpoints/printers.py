"""The columns the apiserver prints for built-in kinds (its pkg/printers/internalversion).

Each printer is a list of column definitions and a function from an object to its cells
(and row conditions). Column descriptions quote the API field documentation, as the real
printers do through SwaggerDoc.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from setpoint.cluster.endpoints.durations import age, human_duration, parse_time, rfc3339
from setpoint.machinery.objects import Obj
from setpoint.machinery.schema import definitions

Cells = tuple[list[Any], list[Obj]]

NONE = "<none>"
CORE = "io.k8s.api.core.v1."
APPS = "io.k8s.api.apps.v1."
META = "io.k8s.apimachinery.pkg.apis.meta.v1."


def doc(definition: str, field: str) -> str:
    """The description of ``field`` in the built-in definition ``definition``."""
    raw = definitions().raw.get(definition, {})
    return str(((raw.get("properties") or {}).get(field) or {}).get("description") or "")


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    description: str
    priority: int = 0
    format: str = ""

    def definition(self) -> Obj:
        return {"name": self.name, "type": self.type, "format": self.format,
                "description": self.description, "priority": self.priority}


@dataclass(frozen=True)
class Printer:
    columns: list[Column]
    cells: Callable[[Obj, datetime], Cells]


def name_column() -> Column:
    return Column("Name", "string", doc(META + "ObjectMeta", "name"), format="name")


def age_column() -> Column:
    return Column("Age", "string", doc(META + "ObjectMeta", "creationTimestamp"))


def _age(obj: Obj, now: datetime) -> str:
    return age(obj.get("metadata", {}).get("creationTimestamp"), now)


def _name(obj: Obj) -> str:
    return str(obj.get("metadata", {}).get("name", ""))


def _get(obj: Any, *path: str, default: Any = None) -> Any:
    for key in path:
        if not isinstance(obj, dict) or key not in obj:
            return default
        obj = obj[key]
    return obj


def _int(obj: Any, *path: str) -> int:
    value = _get(obj, *path)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _containers_images(template_spec: Obj) -> tuple[str, str]:
    containers = template_spec.get("containers") or []
    return (",".join(c.get("name", "") for c in containers),
            ",".join(c.get("image", "") for c in containers))


def format_selector(selector: Obj | None) -> str:
    """A LabelSelector the way metav1.FormatLabelSelector prints it (``<none>`` if empty)."""
    if selector is None:
        return NONE
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key", ""), expr.get("operator", ""), expr.get("values") or []
        if op == "In":
            parts.append(f"{key} in ({','.join(values)})")
        elif op == "NotIn":
            parts.append(f"{key} notin ({','.join(values)})")
        elif op == "Exists":
            parts.append(key)
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
    text = ",".join(parts)
    return text or ("<none>" if not selector else "")


def _map_selector(selector: Obj | None) -> str:
    if not selector:
        return NONE
    return ",".join(f"{k}={v}" for k, v in sorted(selector.items()))


CONTAINERS_COLUMN = Column("Containers", "string", "Names of each container in the template.", 1)
IMAGES_COLUMN = Column("Images", "string",
                       "Images referenced by each container in the template.", 1)


# -- workloads ----------------------------------------------------------------------------

def deployment_cells(obj: Obj, now: datetime) -> Cells:
    spec, status = obj.get("spec", {}), obj.get("status", {})
    desired = spec.get("replicas", 0)
    containers, images = _containers_images(_get(spec, "template", "spec", default={}))
    return [_name(obj), f"{_int(status, 'readyReplicas')}/{desired}",
            _int(status, "updatedReplicas"), _int(status, "availableReplicas"), _age(obj, now),
            containers, images, format_selector(spec.get("selector"))], []


def replica_set_cells(obj: Obj, now: datetime) -> Cells:
    spec, status = obj.get("spec", {}), obj.get("status", {})
    containers, images = _containers_images(_get(spec, "template", "spec", default={}))
    selector = spec.get("selector")
    text = _map_selector(selector) if obj.get("kind") == "ReplicationController" or (
        selector and "matchLabels" not in selector and "matchExpressions" not in selector
    ) else format_selector(selector)
    return [_name(obj), _int(spec, "replicas"), _int(status, "replicas"),
            _int(status, "readyReplicas"), _age(obj, now), containers, images, text], []


def stateful_set_cells(obj: Obj, now: datetime) -> Cells:
    spec, status = obj.get("spec", {}), obj.get("status", {})
    containers, images = _containers_images(_get(spec, "template", "spec", default={}))
    return [_name(obj), f"{_int(status, 'readyReplicas')}/{spec.get('replicas', 0)}",
            _age(obj, now), containers, images], []


def daemon_set_cells(obj: Obj, now: datetime) -> Cells:
    spec, status = obj.get("spec", {}), obj.get("status", {})
    template = _get(spec, "template", "spec", default={})
    containers, images = _containers_images(template)
    return [_name(obj), _int(status, "desiredNumberScheduled"),
            _int(status, "currentNumberScheduled"), _int(status, "numberReady"),
            _int(status, "updatedNumberScheduled"), _int(status, "numberAvailable"),
            _map_selector(template.get("nodeSelector")), _age(obj, now), containers, images,
            format_selector(spec.get("selector"))], []


def _job_status(obj: Obj) -> str:
    for cond in _get(obj, "status", "conditions", default=[]) or []:
        if cond.get("status") != "True":
            continue
        kind = cond.get("type")
        if kind in ("Complete", "Failed", "Suspended"):
            return str(kind)
        if kind == "FailureTarget":
            return "FailureTarget"
        if kind == "SuccessCriteriaMet":
            return "SuccessCriteriaMet"
    if _get(obj, "metadata", "deletionTimestamp"):
        return "Terminating"
    return "Running"


def job_cells(obj: Obj, now: datetime) -> Cells:
    spec, status = obj.get("spec", {}), obj.get("status", {})
    completions = spec.get("completions")
    succeeded = _int(status, "succeeded")
    if completions is not None:
        done = f"{succeeded}/{completions}"
    elif spec.get("parallelism", 1) > 1:
        done = f"{succeeded}/1 of {spec.get('parallelism')}"
    else:
        done = f"{succeeded}/1"
    start, end = parse_time(status.get("startTime")), parse_time(status.get("completionTime"))
    duration = "" if start is None else human_duration(((end or now) - start).total_seconds())
    containers, images = _containers_images(_get(spec, "template", "spec", default={}))
    return [_name(obj), _job_status(obj), done, duration, _age(obj, now), containers, images,
            format_selector(spec.get("selector"))], []


def cron_job_cells(obj: Obj, now: datetime) -> Cells:
    spec, status = obj.get("spec", {}), obj.get("status", {})
    last = status.get("lastScheduleTime")
    template = _get(spec, "jobTemplate", "spec", "template", "spec", default={})
    containers, images = _containers_images(template)
    return [_name(obj), spec.get("schedule", ""), spec.get("timeZone") or NONE,
            bool(spec.get("suspend", False)), len(status.get("active") or []),
            age(last, now) if last else NONE, _age(obj, now), containers, images,
            format_selector(_get(spec, "jobTemplate", "spec", "selector"))], []


# -- pods ---------------------------------------------------------------------------------

def pod_cells(obj: Obj, now: datetime) -> Cells:
    spec, status = obj.get("spec", {}), obj.get("status", {})
    meta = obj.get("metadata", {})
    init_specs = spec.get("initContainers") or []
    sidecars = {c.get("name") for c in init_specs if c.get("restartPolicy") == "Always"}
    total = len(spec.get("containers") or []) + len(sidecars)
    ready = restarts = sidecar_restarts = 0
    last_restart: datetime | None = None
    reason = status.get("reason") or status.get("phase") or ""

    def note_restart(container: Obj) -> None:
        nonlocal last_restart
        finished = parse_time(_get(container, "lastState", "terminated", "finishedAt"))
        if finished is not None and (last_restart is None or finished > last_restart):
            last_restart = finished

    initializing = False
    for i, c in enumerate(status.get("initContainerStatuses") or []):
        restarts += _int(c, "restartCount")
        note_restart(c)
        if c.get("name") in sidecars:
            sidecar_restarts += _int(c, "restartCount")
            if c.get("started") and c.get("ready"):
                ready += 1
        terminated, waiting = _get(c, "state", "terminated"), _get(c, "state", "waiting")
        if terminated is not None and terminated.get("exitCode") == 0:
            continue
        if c.get("name") in sidecars and c.get("started"):
            continue
        if terminated is not None:
            if terminated.get("reason"):
                reason = f"Init:{terminated['reason']}"
            elif terminated.get("signal"):
                reason = f"Init:Signal:{terminated['signal']}"
            else:
                reason = f"Init:ExitCode:{terminated.get('exitCode', 0)}"
        elif waiting is not None and waiting.get("reason") and \
                waiting["reason"] != "PodInitializing":
            reason = f"Init:{waiting['reason']}"
        else:
            reason = f"Init:{i}/{len(init_specs)}"
        initializing = True
        break

    conditions = status.get("conditions") or []
    initialized = any(c.get("type") == "Initialized" and c.get("status") == "True"
                      for c in conditions)
    if not initializing or initialized:
        restarts = sidecar_restarts
        has_running = False
        for c in reversed(status.get("containerStatuses") or []):
            restarts += _int(c, "restartCount")
            note_restart(c)
            waiting, terminated = _get(c, "state", "waiting"), _get(c, "state", "terminated")
            if waiting is not None and waiting.get("reason"):
                reason = waiting["reason"]
            elif terminated is not None and terminated.get("reason"):
                reason = terminated["reason"]
            elif terminated is not None:
                reason = (f"Signal:{terminated['signal']}" if terminated.get("signal")
                          else f"ExitCode:{terminated.get('exitCode', 0)}")
            elif c.get("ready") and _get(c, "state", "running") is not None:
                has_running = True
                ready += 1
        if reason == "Completed" and has_running:
            pod_ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                            for c in conditions)
            reason = "Running" if pod_ready else "NotReady"

    phase = status.get("phase")
    if meta.get("deletionTimestamp") and status.get("reason") == "NodeLost":
        reason = "Unknown"
    elif meta.get("deletionTimestamp") and phase not in ("Succeeded", "Failed"):
        reason = "Terminating"

    restart_text = str(restarts)
    if last_restart is not None:
        restart_text = f"{restarts} ({human_duration((now - last_restart).total_seconds())} ago)"
    ips = [p.get("ip") for p in status.get("podIPs") or [] if p.get("ip")]
    ip = ips[0] if ips else status.get("podIP") or NONE
    gates = spec.get("readinessGates") or []
    if gates:
        gate_types = {g.get("conditionType") for g in gates}
        true = sum(1 for c in conditions if c.get("type") in gate_types
                   and c.get("status") == "True")
        gates_text = f"{true}/{len(gates)}"
    else:
        gates_text = NONE
    row_conditions: list[Obj] = []
    if phase == "Succeeded":
        row_conditions = [{"type": "Completed", "status": "True",
                           "reason": "Succeeded", "message": "The pod has completed successfully."}]
    elif phase == "Failed":
        row_conditions = [{"type": "Completed", "status": "True",
                           "reason": "Failed", "message": "The pod failed."}]
    return [_name(obj), f"{ready}/{total}", reason, restart_text, _age(obj, now), ip,
            spec.get("nodeName") or NONE, status.get("nominatedNodeName") or NONE,
            gates_text], row_conditions


# -- services, config, cluster ------------------------------------------------------------

def service_cells(obj: Obj, now: datetime) -> Cells:
    spec = obj.get("spec", {})
    kind = spec.get("type") or "ClusterIP"
    cluster_ip = spec.get("clusterIP") or NONE
    external = list(spec.get("externalIPs") or [])
    if kind == "LoadBalancer":
        ingress = _get(obj, "status", "loadBalancer", "ingress", default=[]) or []
        lb = [i.get("ip") or i.get("hostname") for i in ingress if i.get("ip") or
              i.get("hostname")]
        external = lb + external
        external_text = ",".join(external) if external else "<pending>"
    elif kind == "ExternalName":
        external_text = spec.get("externalName") or NONE
    else:
        external_text = ",".join(external) if external else NONE
    ports = []
    for p in spec.get("ports") or []:
        text = f"{p.get('port')}/{p.get('protocol', 'TCP')}"
        if p.get("nodePort"):
            text = f"{p.get('port')}:{p['nodePort']}/{p.get('protocol', 'TCP')}"
        ports.append(text)
    return [_name(obj), kind, cluster_ip, external_text, ",".join(ports) or NONE,
            _age(obj, now), _map_selector(spec.get("selector"))], []


def namespace_cells(obj: Obj, now: datetime) -> Cells:
    return [_name(obj), _get(obj, "status", "phase", default="") or "", _age(obj, now)], []


def config_map_cells(obj: Obj, now: datetime) -> Cells:
    count = len(obj.get("data") or {}) + len(obj.get("binaryData") or {})
    return [_name(obj), count, _age(obj, now)], []


def secret_cells(obj: Obj, now: datetime) -> Cells:
    return [_name(obj), obj.get("type") or "", len(obj.get("data") or {}), _age(obj, now)], []


def service_account_cells(obj: Obj, now: datetime) -> Cells:
    return [_name(obj), len(obj.get("secrets") or []), _age(obj, now)], []


def lease_cells(obj: Obj, now: datetime) -> Cells:
    return [_name(obj), _get(obj, "spec", "holderIdentity") or "", _age(obj, now)], []


def endpoints_cells(obj: Obj, now: datetime) -> Cells:
    addrs = []
    for subset in obj.get("subsets") or []:
        ports = [p.get("port") for p in subset.get("ports") or []] or [None]
        for a in subset.get("addresses") or []:
            for port in ports:
                addrs.append(a.get("ip", "") if port is None else f"{a.get('ip', '')}:{port}")
    text = ",".join(addrs[:3]) + (f" + {len(addrs) - 3} more..." if len(addrs) > 3 else "")
    return [_name(obj), text or NONE, _age(obj, now)], []


def node_cells(obj: Obj, now: datetime) -> Cells:
    status, spec, meta = obj.get("status", {}), obj.get("spec", {}), obj.get("metadata", {})
    states = []
    ready = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
    if ready is None:
        states.append("Unknown")
    elif ready.get("status") == "True":
        states.append("Ready")
    else:
        states.append("NotReady")
    if spec.get("unschedulable"):
        states.append("SchedulingDisabled")
    roles = sorted(
        k.split("/", 1)[1] for k in (meta.get("labels") or {})
        if k.startswith("node-role.kubernetes.io/") and k.split("/", 1)[1])
    labels = meta.get("labels") or {}
    if labels.get("kubernetes.io/role"):
        roles.append(labels["kubernetes.io/role"])
    info = status.get("nodeInfo") or {}
    addresses = status.get("addresses") or []

    def address(kind: str) -> str:
        return next((a.get("address") for a in addresses if a.get("type") == kind), NONE)
    return [_name(obj), ",".join(states), ",".join(roles) or NONE, _age(obj, now),
            info.get("kubeletVersion", ""), address("InternalIP"), address("ExternalIP"),
            info.get("osImage") or "<unknown>", info.get("kernelVersion") or "<unknown>",
            info.get("containerRuntimeVersion") or "<unknown>"], []


def event_cells(obj: Obj, now: datetime) -> Cells:
    first = obj.get("firstTimestamp") or obj.get("eventTime") or \
        _get(obj, "metadata", "creationTimestamp")
    last = obj.get("lastTimestamp") or _get(obj, "series", "lastObservedTime") or first
    count = obj.get("count") or _get(obj, "series", "count") or 1
    last_text = age(last, now)
    if count > 1:
        last_text = f"{last_text} (x{count} over {age(first, now)})"
    involved = obj.get("involvedObject") or {}
    source = obj.get("source") or {}
    source_text = source.get("component", "") or obj.get("reportingComponent", "")
    if source.get("host"):
        source_text = f"{source_text}, {source['host']}"
    return [last_text, obj.get("type", ""), obj.get("reason", ""),
            f"{(involved.get('kind') or '').lower()}/{involved.get('name', '')}",
            involved.get("fieldPath", ""), source_text, (obj.get("message") or "").strip(),
            age(first, now), count, _name(obj)], []


def pvc_cells(obj: Obj, now: datetime) -> Cells:
    spec, status = obj.get("spec", {}), obj.get("status", {})
    phase = status.get("phase", "")
    if _get(obj, "metadata", "deletionTimestamp"):
        phase = "Terminating"
    storage = _get(status, "capacity", "storage") or ""
    modes = ",".join(_ACCESS_MODES.get(m, m) for m in status.get("accessModes") or [])
    return [_name(obj), phase, spec.get("volumeName", ""), storage, modes,
            spec.get("storageClassName") or "", status.get("currentVolumeAttributesClassName")
            or spec.get("volumeAttributesClassName") or NONE, _age(obj, now),
            spec.get("volumeMode") or "<unset>"], []


_ACCESS_MODES = {"ReadWriteOnce": "RWO", "ReadOnlyMany": "ROX", "ReadWriteMany": "RWX",
                 "ReadWriteOncePod": "RWOP"}


def pv_cells(obj: Obj, now: datetime) -> Cells:
    spec, status = obj.get("spec", {}), obj.get("status", {})
    claim = spec.get("claimRef")
    claim_text = f"{claim.get('namespace', '')}/{claim.get('name', '')}" if claim else ""
    phase = status.get("phase", "")
    if _get(obj, "metadata", "deletionTimestamp"):
        phase = "Terminating"
    modes = ",".join(_ACCESS_MODES.get(m, m) for m in spec.get("accessModes") or [])
    return [_name(obj), _get(spec, "capacity", "storage") or "", modes,
            spec.get("persistentVolumeReclaimPolicy", ""), phase, claim_text,
            spec.get("storageClassName") or "", spec.get("volumeAttributesClassName") or NONE,
            status.get("reason", ""), _age(obj, now), spec.get("volumeMode") or "<unset>"], []


def ingress_cells(obj: Obj, now: datetime) -> Cells:
    spec = obj.get("spec", {})
    hosts = [r.get("host") for r in spec.get("rules") or [] if r.get("host")]
    hosts_text = ",".join(hosts[:4]) + (f" + {len(hosts) - 4} more..." if len(hosts) > 4
                                         else "") if hosts else "*"
    lbs = _get(obj, "status", "loadBalancer", "ingress", default=[]) or []
    address = ",".join(i.get("ip") or i.get("hostname", "") for i in lbs)
    ports = "80, 443" if spec.get("tls") else "80"
    return [_name(obj), spec.get("ingressClassName") or NONE, hosts_text, address, ports,
            _age(obj, now)], []


def network_policy_cells(obj: Obj, now: datetime) -> Cells:
    selector = _get(obj, "spec", "podSelector") or {}
    text = format_selector(selector) if selector else "<none>"
    return [_name(obj), text, _age(obj, now)], []


def created_at_cells(obj: Obj, now: datetime) -> Cells:
    return [_name(obj), rfc3339(_get(obj, "metadata", "creationTimestamp"))], []


def role_binding_cells(obj: Obj, now: datetime) -> Cells:
    subjects = obj.get("subjects") or []
    users = [s.get("name", "") for s in subjects if s.get("kind") == "User"]
    groups = [s.get("name", "") for s in subjects if s.get("kind") == "Group"]
    sas = [f"{s.get('namespace', '')}/{s.get('name', '')}" for s in subjects
           if s.get("kind") == "ServiceAccount"]
    ref = obj.get("roleRef") or {}
    return [_name(obj), f"{ref.get('kind', '')}/{ref.get('name', '')}", _age(obj, now),
            ", ".join(users), ", ".join(groups), ", ".join(sas)], []


def storage_class_cells(obj: Obj, now: datetime) -> Cells:
    name = _name(obj)
    annotations = _get(obj, "metadata", "annotations", default={}) or {}
    if annotations.get("storageclass.kubernetes.io/is-default-class") == "true":
        name = f"{name} (default)"
    return [name, obj.get("provisioner", ""), obj.get("reclaimPolicy") or "Delete",
            obj.get("volumeBindingMode") or "Immediate",
            bool(obj.get("allowVolumeExpansion", False)), _age(obj, now)], []


def pdb_cells(obj: Obj, now: datetime) -> Cells:
    spec = obj.get("spec", {})
    return [_name(obj), str(spec["minAvailable"]) if "minAvailable" in spec else "N/A",
            str(spec["maxUnavailable"]) if "maxUnavailable" in spec else "N/A",
            _int(obj, "status", "disruptionsAllowed"), _age(obj, now)], []


def priority_class_cells(obj: Obj, now: datetime) -> Cells:
    return [_name(obj), obj.get("value", 0), bool(obj.get("globalDefault", False)),
            _age(obj, now), obj.get("preemptionPolicy") or ""], []


def controller_revision_cells(obj: Obj, now: datetime) -> Cells:
    owner = next((o for o in _get(obj, "metadata", "ownerReferences", default=[]) or []
                  if o.get("controller")), None)
    controller = NONE
    if owner is not None:
        group = owner.get("apiVersion", "").rpartition("/")[0]
        kind = owner.get("kind", "").lower() + (f".{group}" if group else "")
        controller = f"{kind}/{owner.get('name', '')}"
    return [_name(obj), controller, obj.get("revision", 0), _age(obj, now)], []


def webhooks_cells(obj: Obj, now: datetime) -> Cells:
    return [_name(obj), len(obj.get("webhooks") or []), _age(obj, now)], []


def ingress_class_cells(obj: Obj, now: datetime) -> Cells:
    params = _get(obj, "spec", "parameters")
    text = NONE
    if params:
        group = params.get("apiGroup") or "k8s.io"
        text = f"{params.get('kind', '')}.{group}/{params.get('name', '')}"
    return [_name(obj), _get(obj, "spec", "controller") or "", text, _age(obj, now)], []


def hpa_cells(obj: Obj, now: datetime) -> Cells:
    spec, status = obj.get("spec", {}), obj.get("status", {})
    ref = spec.get("scaleTargetRef") or {}
    min_pods = spec.get("minReplicas")
    return [_name(obj), f"{ref.get('kind', '')}/{ref.get('name', '')}",
            "<unknown>" if not spec.get("metrics") else "<unknown>/<unknown>",
            "<unset>" if min_pods is None else min_pods, spec.get("maxReplicas", 0),
            _int(status, "currentReplicas"), _age(obj, now)], []


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
    return [_name(obj), where, available, _age(obj, now)], []

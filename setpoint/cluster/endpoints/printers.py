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

from setpoint.cluster.endpoints.durations import age, human_duration, parse_time
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
    # the sort key of a printer that orders a list's rows itself (printFlowSchemaList)
    order: Callable[[Obj], Any] | None = None


def name_column() -> Column:
    return Column("Name", "string", doc(META + "ObjectMeta", "name"), format="name")


def age_column() -> Column:
    return Column("Age", "string", doc(META + "ObjectMeta", "creationTimestamp"))


def age_of(obj: Obj, now: datetime) -> str:
    return age(obj.get("metadata", {}).get("creationTimestamp"), now)


def name_of(obj: Obj) -> str:
    return str(obj.get("metadata", {}).get("name", ""))


def dig(obj: Any, *path: str, default: Any = None) -> Any:
    for key in path:
        if not isinstance(obj, dict) or key not in obj:
            return default
        obj = obj[key]
    return obj


def int_at(obj: Any, *path: str) -> int:
    value = dig(obj, *path)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def containers_images(template_spec: Obj) -> tuple[str, str]:
    containers = template_spec.get("containers") or []
    return (",".join(c.get("name", "") for c in containers),
            ",".join(c.get("image", "") for c in containers))


def selector_string(selector: Any) -> str | None:
    """metav1.LabelSelectorAsSelector(selector).String(): the requirements sorted by key,
    set values sorted; ``""`` for a nil or empty selector, None when it does not convert."""
    if not isinstance(selector, dict):
        return ""
    requirements: list[tuple[str, str]] = []
    for key, value in (selector.get("matchLabels") or {}).items():
        requirements.append((str(key), f"{key}={value}"))
    for expr in selector.get("matchExpressions") or []:
        if not isinstance(expr, dict):
            return None
        key, op = str(expr.get("key", "")), expr.get("operator", "")
        values = sorted(str(v) for v in expr.get("values") or [])
        if op in ("In", "NotIn"):
            if not values:
                return None
            word = "in" if op == "In" else "notin"
            requirements.append((key, f"{key} {word} ({','.join(values)})"))
        elif op in ("Exists", "DoesNotExist"):
            if values:
                return None
            requirements.append((key, key if op == "Exists" else f"!{key}"))
        else:
            return None
    return ",".join(text for _, text in sorted(requirements, key=lambda r: r[0]))


def format_selector(selector: Any) -> str:
    """metav1.FormatLabelSelector: the selector's string, ``<none>`` when it selects
    everything or nothing, ``<error>`` when it does not convert."""
    text = selector_string(selector)
    if text is None:
        return "<error>"
    return text or NONE


def format_labels(selector: Obj | None) -> str:
    """labels.FormatLabels: ``k=v`` sorted by key, ``<none>`` when empty."""
    if not selector:
        return NONE
    return ",".join(f"{k}={v}" for k, v in sorted(selector.items()))


CONTAINERS_COLUMN = Column("Containers", "string", "Names of each container in the template.", 1)
IMAGES_COLUMN = Column("Images", "string",
                       "Images referenced by each container in the template.", 1)


# -- workloads ----------------------------------------------------------------------------

def deployment_cells(obj: Obj, now: datetime) -> Cells:
    """printDeployment: the selector through LabelSelectorAsSelector, so an empty one is
    ``""`` rather than ``<none>``."""
    spec, status = obj.get("spec", {}), obj.get("status", {})
    desired = int_at(spec, "replicas")
    containers, images = containers_images(dig(spec, "template", "spec", default={}))
    selector = selector_string(spec.get("selector"))
    return [name_of(obj), f"{int_at(status, 'readyReplicas')}/{desired}",
            int_at(status, "updatedReplicas"), int_at(status, "availableReplicas"),
            age_of(obj, now),
            containers, images, "<invalid>" if selector is None else selector], []


def replica_set_cells(obj: Obj, now: datetime) -> Cells:
    """printReplicaSet: the selector through metav1.FormatLabelSelector."""
    spec, status = obj.get("spec", {}), obj.get("status", {})
    containers, images = containers_images(dig(spec, "template", "spec", default={}))
    return [name_of(obj), int_at(spec, "replicas"), int_at(status, "replicas"),
            int_at(status, "readyReplicas"), age_of(obj, now), containers, images,
            format_selector(spec.get("selector"))], []


def replication_controller_cells(obj: Obj, now: datetime) -> Cells:
    """printReplicationController: the map selector through labels.FormatLabels."""
    spec, status = obj.get("spec", {}), obj.get("status", {})
    containers, images = containers_images(dig(spec, "template", "spec", default={}))
    return [name_of(obj), int_at(spec, "replicas"), int_at(status, "replicas"),
            int_at(status, "readyReplicas"), age_of(obj, now), containers, images,
            format_labels(spec.get("selector"))], []


def stateful_set_cells(obj: Obj, now: datetime) -> Cells:
    spec, status = obj.get("spec", {}), obj.get("status", {})
    containers, images = containers_images(dig(spec, "template", "spec", default={}))
    return [name_of(obj), f"{int_at(status, 'readyReplicas')}/{spec.get('replicas', 0)}",
            age_of(obj, now), containers, images], []


def daemon_set_cells(obj: Obj, now: datetime) -> Cells:
    spec, status = obj.get("spec", {}), obj.get("status", {})
    template = dig(spec, "template", "spec", default={})
    containers, images = containers_images(template)
    return [name_of(obj), int_at(status, "desiredNumberScheduled"),
            int_at(status, "currentNumberScheduled"), int_at(status, "numberReady"),
            int_at(status, "updatedNumberScheduled"), int_at(status, "numberAvailable"),
            format_labels(template.get("nodeSelector")), age_of(obj, now), containers, images,
            format_selector(spec.get("selector"))], []


def _job_condition(obj: Obj, kind: str) -> bool:
    """hasJobCondition: the first condition of the type decides."""
    for cond in dig(obj, "status", "conditions", default=[]) or []:
        if isinstance(cond, dict) and cond.get("type") == kind:
            return cond.get("status") == "True"
    return False


def _job_status(obj: Obj) -> str:
    """printJob's STATUS, in its order of precedence."""
    if _job_condition(obj, "Complete"):
        return "Complete"
    if _job_condition(obj, "Failed"):
        return "Failed"
    if dig(obj, "metadata", "deletionTimestamp"):
        return "Terminating"
    if _job_condition(obj, "Suspended"):
        return "Suspended"
    if _job_condition(obj, "FailureTarget"):
        return "FailureTarget"
    return "Running"


def job_cells(obj: Obj, now: datetime) -> Cells:
    spec, status = obj.get("spec", {}), obj.get("status", {})
    completions = spec.get("completions")
    succeeded = int_at(status, "succeeded")
    if completions is not None:
        done = f"{succeeded}/{completions}"
    elif int_at(spec, "parallelism") > 1:
        done = f"{succeeded}/1 of {int_at(spec, 'parallelism')}"
    else:
        done = f"{succeeded}/1"
    start, end = parse_time(status.get("startTime")), parse_time(status.get("completionTime"))
    duration = "" if start is None else human_duration(((end or now) - start).total_seconds())
    containers, images = containers_images(dig(spec, "template", "spec", default={}))
    return [name_of(obj), _job_status(obj), done, duration, age_of(obj, now), containers, images,
            format_selector(spec.get("selector"))], []


def print_bool_ptr(value: Any) -> str:
    """printBoolPtr: ``True``/``False`` as text, ``<unset>`` for a nil pointer."""
    if value is None:
        return "<unset>"
    return "True" if value else "False"


def cron_job_cells(obj: Obj, now: datetime) -> Cells:
    spec, status = obj.get("spec", {}), obj.get("status", {})
    last = status.get("lastScheduleTime")
    template = dig(spec, "jobTemplate", "spec", "template", "spec", default={})
    containers, images = containers_images(template)
    return [name_of(obj), spec.get("schedule", ""), spec.get("timeZone") or NONE,
            print_bool_ptr(spec.get("suspend")), len(status.get("active") or []),
            age(last, now) if last else NONE, age_of(obj, now), containers, images,
            format_selector(dig(spec, "jobTemplate", "spec", "selector"))], []


# -- pods ---------------------------------------------------------------------------------

def pod_cells(obj: Obj, now: datetime) -> Cells:
    """printPod: READY counts ready containers (and started sidecars), STATUS is the last
    container's reason unless an init container is still running, RESTARTS adds how long
    ago the last one happened once there is one."""
    spec, status = obj.get("spec", {}), obj.get("status", {})
    meta = obj.get("metadata", {})
    init_specs = spec.get("initContainers") or []
    sidecars = {c.get("name") for c in init_specs if c.get("restartPolicy") == "Always"}
    total = len(spec.get("containers") or []) + sum(
        1 for c in init_specs if c.get("restartPolicy") == "Always")
    ready = restarts = sidecar_restarts = 0
    last_restart: datetime | None = None
    last_sidecar_restart: datetime | None = None
    phase = status.get("phase") or ""
    reason = status.get("reason") or phase
    for condition in status.get("conditions") or []:
        if condition.get("type") == "PodScheduled" and \
                condition.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"

    def later(current: datetime | None, container: Obj) -> datetime | None:
        finished = parse_time(dig(container, "lastState", "terminated", "finishedAt"))
        if dig(container, "lastState", "terminated") is None or finished is None:
            return current
        return finished if current is None or finished > current else current

    initializing = False
    for i, c in enumerate(status.get("initContainerStatuses") or []):
        restarts += int_at(c, "restartCount")
        last_restart = later(last_restart, c)
        sidecar = c.get("name") in sidecars
        if sidecar:
            sidecar_restarts += int_at(c, "restartCount")
            last_sidecar_restart = later(last_sidecar_restart, c)
        terminated, waiting = dig(c, "state", "terminated"), dig(c, "state", "waiting")
        if terminated is not None and terminated.get("exitCode", 0) == 0:
            continue
        if sidecar and c.get("started"):
            if c.get("ready"):
                ready += 1
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
        restarts, last_restart = sidecar_restarts, last_sidecar_restart
        has_running = False
        for c in reversed(status.get("containerStatuses") or []):
            restarts += int_at(c, "restartCount")
            last_restart = later(last_restart, c)
            waiting, terminated = dig(c, "state", "waiting"), dig(c, "state", "terminated")
            if waiting is not None and waiting.get("reason"):
                reason = waiting["reason"]
            elif terminated is not None and terminated.get("reason"):
                reason = terminated["reason"]
            elif terminated is not None:
                reason = (f"Signal:{terminated['signal']}" if terminated.get("signal")
                          else f"ExitCode:{terminated.get('exitCode', 0)}")
            elif c.get("ready") and dig(c, "state", "running") is not None:
                has_running = True
                ready += 1
        if reason == "Completed" and has_running:
            pod_ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                            for c in conditions)
            reason = "Running" if pod_ready else "NotReady"

    if meta.get("deletionTimestamp") and status.get("reason") == "NodeLost":
        reason = "Unknown"
    elif meta.get("deletionTimestamp") and phase not in ("Succeeded", "Failed"):
        reason = "Terminating"

    restart_text = str(restarts)
    if restarts != 0 and last_restart is not None:
        restart_text = f"{restarts} ({human_duration((now - last_restart).total_seconds())} ago)"
    ips = [p.get("ip") for p in status.get("podIPs") or [] if isinstance(p, dict)]
    ip = (ips[0] if ips else status.get("podIP")) or NONE
    gates = spec.get("readinessGates") or []
    gates_text = NONE
    if gates:
        true = 0
        for gate in gates:
            match = next((c for c in conditions
                          if c.get("type") == gate.get("conditionType")), None)
            if match is not None and match.get("status") == "True":
                true += 1
        gates_text = f"{true}/{len(gates)}"
    row_conditions: list[Obj] = []
    if phase == "Succeeded":
        row_conditions = [{"type": "Completed", "status": "True",
                           "reason": "Succeeded", "message": "The pod has completed successfully."}]
    elif phase == "Failed":
        row_conditions = [{"type": "Completed", "status": "True",
                           "reason": "Failed", "message": "The pod failed."}]
    return [name_of(obj), f"{ready}/{total}", reason, restart_text, age_of(obj, now), ip,
            spec.get("nodeName") or NONE, status.get("nominatedNodeName") or NONE,
            gates_text], row_conditions

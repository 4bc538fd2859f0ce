"""A stack's resource figures: CPU and memory (requests, limits, usage) per pod and
container, and the storage of its PersistentVolumeClaims.

Requests and limits are the containers' ``resources`` (init containers excluded: they do
not run beside the app, as the kubelet's ``PodRequests`` takes the max, not the sum, of
them; we report the running containers). Usage is metrics.k8s.io's PodMetrics, the shape
metrics-server serves (``containers[].usage.cpu|memory``). CPU is in cores, memory and
storage in bytes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from setpoint.client import ApiError, Client, Kind, UnknownResourceError
from setpoint.machinery.quantity import Quantity, QuantityError
from setpoint.platform.graph import Stack

POD_METRICS = Kind("metrics.k8s.io/v1beta1", "PodMetrics")
RESOURCES = ("cpu", "memory")


def quantity(value: Any) -> float:
    """A quantity as a float of its base unit (cores, bytes); 0 when absent or invalid."""
    if value is None:
        return 0.0
    try:
        return Quantity.from_json(value).as_float()
    except (QuantityError, ValueError, TypeError):
        return 0.0


@dataclass
class Figures:
    """CPU (cores) and memory (bytes): requested, limited, used."""

    cpu_requests: float = 0.0
    cpu_limits: float = 0.0
    cpu_usage: float = 0.0
    memory_requests: float = 0.0
    memory_limits: float = 0.0
    memory_usage: float = 0.0

    def add(self, other: Figures) -> None:
        for name, value in asdict(other).items():
            setattr(self, name, getattr(self, name) + value)


@dataclass
class ContainerFigures:
    name: str
    figures: Figures


@dataclass
class PodFigures:
    namespace: str
    name: str
    containers: list[ContainerFigures] = field(default_factory=list)

    @property
    def total(self) -> Figures:
        out = Figures()
        for container in self.containers:
            out.add(container.figures)
        return out


@dataclass
class StackFigures:
    """Everything ``setpoint metrics`` shows for one stack."""

    root: str
    pods: list[PodFigures] = field(default_factory=list)
    storage: dict[str, float] = field(default_factory=dict)
    """Each PersistentVolumeClaim's size: its bound capacity, else its request."""

    @property
    def total(self) -> Figures:
        out = Figures()
        for pod in self.pods:
            out.add(pod.total)
        return out

    @property
    def storage_bytes(self) -> float:
        return sum(self.storage.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "root": self.root, "total": asdict(self.total), "storageBytes": self.storage_bytes,
            "pods": [{"namespace": p.namespace, "name": p.name, "total": asdict(p.total),
                      "containers": [{"name": c.name, **asdict(c.figures)}
                                     for c in p.containers]} for p in self.pods],
            "persistentVolumeClaims": self.storage,
        }


MetricsIndex = Mapping[tuple[str, str], Mapping[str, Any]]


async def pod_metrics(client: Client) -> dict[tuple[str, str], Mapping[str, Any]]:
    """Every PodMetrics by (namespace, name); empty when no metrics API is served."""
    try:
        listed = await client.list(POD_METRICS)
    except (ApiError, UnknownResourceError):
        return {}
    return {((m.get("metadata") or {}).get("namespace", ""),
             (m.get("metadata") or {}).get("name", "")): m for m in listed.items}


def figures(stack: Stack, metrics: MetricsIndex) -> StackFigures:
    out = StackFigures(root=str(stack.root))
    for ref, obj in sorted(stack.objects.items(), key=lambda item: str(item[0])):
        if (ref.group, ref.kind) == ("", "Pod"):
            out.pods.append(_pod(ref.namespace, ref.name, obj, metrics))
        elif (ref.group, ref.kind) == ("", "PersistentVolumeClaim"):
            out.storage[str(ref)] = _claim_bytes(obj)
    return out


def _pod(namespace: str, name: str, pod: Mapping[str, Any], metrics: MetricsIndex) -> PodFigures:
    used = {c.get("name"): c.get("usage") or {}
            for c in (metrics.get((namespace, name)) or {}).get("containers") or ()}
    out = PodFigures(namespace, name)
    for container in (pod.get("spec") or {}).get("containers") or ():
        resources = container.get("resources") or {}
        requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
        usage = used.get(container.get("name")) or {}
        # a limit with no request makes the request equal the limit (API defaulting)
        out.containers.append(ContainerFigures(container.get("name", ""), Figures(
            cpu_requests=quantity(requests.get("cpu", limits.get("cpu"))),
            cpu_limits=quantity(limits.get("cpu")), cpu_usage=quantity(usage.get("cpu")),
            memory_requests=quantity(requests.get("memory", limits.get("memory"))),
            memory_limits=quantity(limits.get("memory")),
            memory_usage=quantity(usage.get("memory")))))
    return out


def _claim_bytes(claim: Mapping[str, Any]) -> float:
    capacity = ((claim.get("status") or {}).get("capacity") or {}).get("storage")
    if capacity is not None:
        return quantity(capacity)
    requests = (((claim.get("spec") or {}).get("resources") or {}).get("requests") or {})
    return quantity(requests.get("storage"))


def cpu_text(cores: float) -> str:
    return f"{round(cores * 1000)}m"


def bytes_text(value: float) -> str:
    for unit, size in (("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
        if value >= size:
            return f"{value / size:.1f}{unit}"
    return f"{int(value)}"


def pretty(figs: StackFigures) -> str:
    head = ("POD/CONTAINER", "CPU REQ", "CPU LIM", "CPU USED", "MEM REQ", "MEM LIM", "MEM USED")
    rows: list[tuple[str, ...]] = [head]

    def row(label: str, f: Figures) -> tuple[str, ...]:
        return (label, cpu_text(f.cpu_requests), cpu_text(f.cpu_limits), cpu_text(f.cpu_usage),
                bytes_text(f.memory_requests), bytes_text(f.memory_limits),
                bytes_text(f.memory_usage))

    for pod in figs.pods:
        rows.append(row(f"{pod.namespace}/{pod.name}", pod.total))
        rows += [row(f"  {c.name}", c.figures) for c in pod.containers]
    rows.append(row("TOTAL", figs.total))
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip()
             for r in rows]
    lines.append("")
    lines.append(f"STORAGE {bytes_text(figs.storage_bytes)}" + "".join(
        f"\n  {name} {bytes_text(size)}" for name, size in sorted(figs.storage.items())))
    return f"Stack {figs.root}\n" + "\n".join(lines) + "\n"


def stack_roots(objects: Iterable[tuple[Any, Mapping[str, Any]]]) -> list[Any]:
    """Objects nothing owns: the roots a chargeback bills."""
    return [ref for ref, obj in objects
            if not (obj.get("metadata") or {}).get("ownerReferences")]

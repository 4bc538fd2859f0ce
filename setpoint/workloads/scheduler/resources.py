"""Resource arithmetic as kube-scheduler does it: what a pod requests, what a node offers.

A pod's request is ``resourcehelper.PodRequests``: the sum over its containers, raised to the
largest init container (restartable "sidecar" init containers add up, as they keep running),
plus ``spec.overhead``. CPU counts in millicores, memory and ephemeral storage in bytes,
extended resources (``example.com/gpu``) and hugepages in units. Scoring uses the "non-zero"
request, where a container without a cpu or memory request counts as 100m and 200Mi so that
best-effort pods still spread.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from setpoint.machinery.quantity import Quantity, QuantityError

CPU, MEMORY, EPHEMERAL_STORAGE, PODS = "cpu", "memory", "ephemeral-storage", "pods"
DEFAULT_MILLI_CPU_REQUEST = 100  # schedutil.DefaultMilliCPURequest
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024  # schedutil.DefaultMemoryRequest


def is_scalar_resource(name: str) -> bool:
    """Extended resources (a domain outside kubernetes.io), hugepages and attachable volume
    limits are counted by the scheduler; other unknown names are ignored."""
    if name.startswith(("hugepages-", "attachable-volumes-")):
        return True
    if "/" not in name:
        return False
    domain = name.split("/", 1)[0]
    return not (domain == "kubernetes.io" or domain.endswith(".kubernetes.io")
                or domain.startswith("requests."))


def _amount(name: str, value: Any) -> int:
    if isinstance(value, str):
        return _amount_of_text(name == CPU, value)
    try:
        q = Quantity.from_json(value)
    except (QuantityError, ValueError):
        return 0
    return q.milli_value() if name == CPU else q.value()


@functools.lru_cache(maxsize=1024)
def _amount_of_text(milli: bool, text: str) -> int:
    """A quantity's text in (milli-)units, remembered: every cycle, assumption and watch
    event of a pod reads its requests again, and a cluster's pods repeat a few texts."""
    try:
        q = Quantity.from_json(text)
    except (QuantityError, ValueError):
        return 0
    return q.milli_value() if milli else q.value()


@dataclass
class Resources:
    """An amount of resources (``framework.Resource``)."""

    milli_cpu: int = 0
    memory: int = 0
    ephemeral_storage: int = 0
    allowed_pods: int = 0
    scalar: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_list(cls, resources: Mapping[str, Any] | None) -> Resources:
        """A ``ResourceList`` (``{"cpu": "500m", ...}``) read as the scheduler reads it."""
        out = cls()
        for name, value in (resources or {}).items():
            out.add_one(name, _amount(name, value))
        return out

    def add_one(self, name: str, amount: int) -> None:
        if name == CPU:
            self.milli_cpu += amount
        elif name == MEMORY:
            self.memory += amount
        elif name == EPHEMERAL_STORAGE:
            self.ephemeral_storage += amount
        elif name == PODS:
            self.allowed_pods += amount
        elif is_scalar_resource(name):
            self.scalar[name] = self.scalar.get(name, 0) + amount

    def add(self, other: Resources) -> None:
        self.milli_cpu += other.milli_cpu
        self.memory += other.memory
        self.ephemeral_storage += other.ephemeral_storage
        self.allowed_pods += other.allowed_pods
        for name, amount in other.scalar.items():
            self.scalar[name] = self.scalar.get(name, 0) + amount

    def subtract(self, other: Resources) -> None:
        self.milli_cpu -= other.milli_cpu
        self.memory -= other.memory
        self.ephemeral_storage -= other.ephemeral_storage
        self.allowed_pods -= other.allowed_pods
        for name, amount in other.scalar.items():
            self.scalar[name] = self.scalar.get(name, 0) - amount

    def set_max(self, other: Resources) -> None:
        self.milli_cpu = max(self.milli_cpu, other.milli_cpu)
        self.memory = max(self.memory, other.memory)
        self.ephemeral_storage = max(self.ephemeral_storage, other.ephemeral_storage)
        for name, amount in other.scalar.items():
            self.scalar[name] = max(self.scalar.get(name, 0), amount)

    def copy(self) -> Resources:
        return Resources(self.milli_cpu, self.memory, self.ephemeral_storage,
                         self.allowed_pods, dict(self.scalar))

    def is_empty(self) -> bool:
        return not (self.milli_cpu or self.memory or self.ephemeral_storage
                    or any(self.scalar.values()))


def _requests(container: Mapping[str, Any]) -> Mapping[str, Any]:
    return (container.get("resources") or {}).get("requests") or {}


def _sum_with_init(spec: Mapping[str, Any],
                   per_container: Any) -> Resources:
    total = Resources()
    for container in spec.get("containers") or ():
        total.add(per_container(container))
    sidecars = Resources()
    init_max = Resources()
    for container in spec.get("initContainers") or ():
        own = per_container(container)
        if container.get("restartPolicy") == "Always":
            total.add(own)
            sidecars.add(own)
            current = sidecars.copy()
        else:
            current = own.copy()
            current.add(sidecars)
        init_max.set_max(current)
    total.set_max(init_max)
    return total


def pod_requests(pod: Mapping[str, Any]) -> Resources:
    """What the pod asks a node for (``resourcehelper.PodRequests`` with overhead)."""
    spec = pod.get("spec") or {}
    total = _sum_with_init(spec, lambda c: Resources.from_list(_requests(c)))
    if spec.get("overhead"):
        total.add(Resources.from_list(spec["overhead"]))
    return total


def _non_zero(container: Mapping[str, Any]) -> Resources:
    requests = _requests(container)
    out = Resources.from_list(requests)
    if CPU not in requests:
        out.milli_cpu = DEFAULT_MILLI_CPU_REQUEST
    if MEMORY not in requests:
        out.memory = DEFAULT_MEMORY_REQUEST
    return out


def pod_non_zero_requests(pod: Mapping[str, Any]) -> Resources:
    """The requests scoring uses: unset cpu/memory count as 100m/200Mi per container."""
    spec = pod.get("spec") or {}
    total = _sum_with_init(spec, _non_zero)
    if spec.get("overhead"):
        total.add(Resources.from_list(spec["overhead"]))
    return total


def host_ports(pod: Mapping[str, Any]) -> list[tuple[str, str, int]]:
    """The (hostIP, protocol, hostPort) triples a pod's containers want on its node."""
    out = []
    containers: Iterable[Mapping[str, Any]] = (pod.get("spec") or {}).get("containers") or ()
    for container in containers:
        for port in container.get("ports") or ():
            host_port = port.get("hostPort") or 0
            if host_port > 0:
                out.append((port.get("hostIP") or "0.0.0.0", port.get("protocol") or "TCP",
                            int(host_port)))
    return out

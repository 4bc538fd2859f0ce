"""Simulated resource usage of pods and nodes, as metrics-server would report it.

A container uses a fraction of what it requests (10% of its CPU and 50% of its memory by
default; of its limits when it requests nothing; a token 1m and 4Mi when it states
neither). A pod can set its total with ``sim.setpoint.dev/usage-cpu`` and
``sim.setpoint.dev/usage-memory``, shared among its containers in proportion to their
default usage. A node uses what its running pods use plus a fixed share for the system.
Values are formatted as metrics-server formats them: CPU in nanocores (``12500000n``),
memory in KiB (``65536Ki``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from setpoint.machinery.quantity import QuantityError, parse_quantity
from setpoint.workloads.kubelet import annotations as ann
from setpoint.workloads.kubelet.options import KubeletOptions

NANO = 10**9
MIN_CPU_NANOS = 1_000_000  # 1m
MIN_MEMORY_BYTES = 4 * 1024 * 1024
SYSTEM_CPU_NANOS = 50_000_000  # what the node's own daemons use
SYSTEM_MEMORY_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class Usage:
    """CPU in nanocores and memory in bytes."""

    cpu_nanos: int = 0
    memory_bytes: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.cpu_nanos + other.cpu_nanos, self.memory_bytes + other.memory_bytes)

    def as_resource_list(self) -> dict[str, str]:
        return {"cpu": f"{self.cpu_nanos}n", "memory": f"{self.memory_bytes // 1024}Ki"}


def _amount(resources: Mapping[str, Any], name: str) -> tuple[int, int] | None:
    """(nano-units, whole units) of a resource in requests, else limits."""
    for section in ("requests", "limits"):
        value = (resources.get(section) or {}).get(name)
        if value is None:
            continue
        try:
            q = parse_quantity(str(value))
        except QuantityError:
            continue
        return q.nanos, q.value()
    return None


def _default(container: Mapping[str, Any], opts: KubeletOptions) -> Usage:
    resources = container.get("resources") or {}
    cpu = _amount(resources, "cpu")
    memory = _amount(resources, "memory")
    cpu_nanos = int(cpu[0] * opts.cpu_fraction) if cpu else MIN_CPU_NANOS
    memory_bytes = int(memory[1] * opts.memory_fraction) if memory else MIN_MEMORY_BYTES
    return Usage(max(cpu_nanos, MIN_CPU_NANOS // 1000), max(memory_bytes, 4096))


def _wanted(pod: Mapping[str, Any], key: str, bytes_: bool) -> int | None:
    raw = ann.annotations_of(pod).get(key)
    if raw is None:
        return None
    try:
        q = parse_quantity(raw.strip())
    except QuantityError:
        return None
    return q.value() if bytes_ else q.nanos


def _share(total: int, weights: list[int]) -> list[int]:
    """``total`` split in proportion to ``weights`` (equally when they are all zero), the
    rounding remainder going to the first."""
    if not weights:
        return []
    whole = sum(weights)
    parts = [total * w // whole for w in weights] if whole else \
        [total // len(weights)] * len(weights)
    parts[0] += total - sum(parts)
    return parts


def container_usage(pod: Mapping[str, Any], names: list[str],
                    opts: KubeletOptions) -> list[tuple[str, Usage]]:
    """The usage of the pod's running containers ``names`` (in that order)."""
    specs = {c.get("name"): c for c in [*((pod.get("spec") or {}).get("initContainers") or ()),
                                        *((pod.get("spec") or {}).get("containers") or ())]}
    defaults = [_default(specs.get(name) or {}, opts) for name in names]
    cpu = [u.cpu_nanos for u in defaults]
    memory = [u.memory_bytes for u in defaults]
    wanted_cpu = _wanted(pod, ann.USAGE_CPU, bytes_=False)
    if wanted_cpu is not None:
        cpu = _share(wanted_cpu, cpu)
    wanted_memory = _wanted(pod, ann.USAGE_MEMORY, bytes_=True)
    if wanted_memory is not None:
        memory = _share(wanted_memory, memory)
    return [(name, Usage(c, m)) for name, c, m in zip(names, cpu, memory, strict=True)]


def node_usage(pods: list[Usage]) -> Usage:
    """What a node uses: its pods, plus the system's share."""
    total = Usage(SYSTEM_CPU_NANOS, SYSTEM_MEMORY_BYTES)
    for usage in pods:
        total = total + usage
    return total

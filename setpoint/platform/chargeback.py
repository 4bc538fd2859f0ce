"""Every stack's figures in the Prometheus text format, and the CPU-seconds and
byte-seconds each stack has used, for a bill over any period (the counters' increase).

The roots billed are the custom resource instances and the workloads (Deployment,
StatefulSet, DaemonSet, Job, CronJob) that nothing owns. The figures are sampled every
``interval`` seconds from a watched cache and the PodMetrics list; between two samples a
stack is charged its last usage times the time elapsed (a left Riemann sum, as
``rate()``-based bills are).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from setpoint.platform.graph import StackGraph
from setpoint.platform.kinds import BUILTIN_KINDS, ObjectRef, group_of
from setpoint.platform.usage import MetricsIndex, StackFigures, figures

LABELS = ("kind", "namespace", "name")
WORKLOADS = {("apps", "Deployment"), ("apps", "StatefulSet"), ("apps", "DaemonSet"),
             ("batch", "Job"), ("batch", "CronJob")}
_BUILTIN = {(group_of(v), k) for v, k, _ in BUILTIN_KINDS}

GAUGES = (
    ("cpu_requests_cores", "CPU requested by the stack's containers, in cores.", "cpu_requests"),
    ("cpu_limits_cores", "CPU limit of the stack's containers, in cores.", "cpu_limits"),
    ("cpu_usage_cores", "CPU the stack's containers use (metrics.k8s.io), in cores.",
     "cpu_usage"),
    ("memory_requests_bytes", "Memory requested by the stack's containers.", "memory_requests"),
    ("memory_limits_bytes", "Memory limit of the stack's containers.", "memory_limits"),
    ("memory_usage_bytes", "Memory the stack's containers use (metrics.k8s.io).",
     "memory_usage"),
)


def roots(graph: StackGraph) -> list[ObjectRef]:
    """Custom resource instances and workloads that no ownerReference points up from."""
    out = []
    for ref, obj in graph.objects():
        gk = (ref.group, ref.kind)
        if gk not in WORKLOADS and gk in _BUILTIN:
            continue
        if not (obj.get("metadata") or {}).get("ownerReferences"):
            out.append(ref)
    return sorted(out, key=str)


@dataclass
class Account:
    cpu_seconds: float = 0.0
    byte_seconds: float = 0.0
    last: StackFigures | None = None
    at: float = 0.0


class Chargeback(Collector):
    """Samples every stack and answers Prometheus scrapes (from any thread) from the last."""

    def __init__(self, graph: StackGraph, clock: Callable[[], float] = time.monotonic) -> None:
        self.graph = graph
        self.accounts: dict[ObjectRef, Account] = {}
        self._clock = clock

    def sample(self, metrics: MetricsIndex) -> None:
        now = self._clock()
        for root in roots(self.graph):
            figs = figures(self.graph.stack(root), metrics)
            account = self.accounts.setdefault(root, Account())
            if account.last is not None:
                elapsed = now - account.at
                account.cpu_seconds += account.last.total.cpu_usage * elapsed
                account.byte_seconds += account.last.total.memory_usage * elapsed
            account.last, account.at = figs, now

    def collect(self) -> Iterator[Metric]:
        accounts = dict(self.accounts)  # a scrape runs on the server's thread
        yield from stack_metrics(
            ((r, a.last) for r, a in accounts.items() if a.last is not None))
        cpu = CounterMetricFamily(
            "setpoint_stack_cpu_seconds",
            "CPU time the stack's containers used since this exporter started.", labels=LABELS)
        mem = CounterMetricFamily(
            "setpoint_stack_memory_byte_seconds",
            "Memory the stack's containers held, integrated over time (byte-seconds).",
            labels=LABELS)
        for ref, account in sorted(accounts.items(), key=lambda item: str(item[0])):
            cpu.add_metric(_labels(ref), account.cpu_seconds)
            mem.add_metric(_labels(ref), account.byte_seconds)
        yield cpu
        yield mem


def _labels(ref: ObjectRef) -> list[str]:
    return [ref.kind, ref.namespace, ref.name]


def stack_metrics(stacks: Iterable[tuple[ObjectRef, StackFigures]]) -> Iterator[Metric]:
    """The gauges of each stack's figures, labelled kind, namespace and name."""
    stacks = sorted(stacks, key=lambda item: str(item[0]))
    for suffix, help_text, attribute in GAUGES:
        family = GaugeMetricFamily(f"setpoint_stack_{suffix}", help_text, labels=LABELS)
        for ref, figs in stacks:
            family.add_metric(_labels(ref), getattr(figs.total, attribute))
        yield family
    storage = GaugeMetricFamily("setpoint_stack_storage_bytes",
                                "Size of the stack's PersistentVolumeClaims.", labels=LABELS)
    pods = GaugeMetricFamily("setpoint_stack_pods", "Pods in the stack.", labels=LABELS)
    for ref, figs in stacks:
        storage.add_metric(_labels(ref), figs.storage_bytes)
        pods.add_metric(_labels(ref), len(figs.pods))
    yield storage
    yield pods


def exposition(stacks: Mapping[ObjectRef, StackFigures]) -> str:
    """The text format of ``stacks``' gauges (one-shot ``-o prometheus``)."""
    from prometheus_client import CollectorRegistry, generate_latest

    class _Once(Collector):
        def collect(self) -> Iterator[Metric]:
            return stack_metrics(stacks.items())

    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Once())
    return generate_latest(registry).decode()

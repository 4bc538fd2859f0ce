"""kube-scheduler's own metrics: scheduling attempts and pending pods per queue.

The names, help texts and labels of pkg/scheduler/metrics/metrics.go (kubernetes 1.32):
``scheduler_schedule_attempts_total{result, profile}``, counted once per scheduling cycle
that ran (``scheduled``, ``unschedulable`` or ``error``), and
``scheduler_pending_pods{queue}`` with the queues ``active``, ``backoff``, ``unschedulable``
and ``gated``. They live in the manager's registry, beside the controller runtime's.

The pending pods are counted when the metrics are read, from the informer's pods and the
unschedulable pods, so that the scheduling cycles, run tens of thousands of times in a
rollout, pay nothing for them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from setpoint.machinery.packageinit import defer_init

# the metric classes without the package's exposition servers (machinery/packageinit.py)
defer_init("prometheus_client")

from prometheus_client.metrics import Counter, Gauge  # noqa: E402
from prometheus_client.registry import CollectorRegistry  # noqa: E402

from setpoint.workloads.scheduler.queue import UnschedulablePods  # noqa: E402

SCHEDULED = "scheduled"
UNSCHEDULABLE = "unschedulable"
ERROR = "error"

QUEUES = ("active", "backoff", "unschedulable", "gated")


class SchedulerMetrics:
    """The scheduler's counters, registered in ``registry``."""

    def __init__(self, registry: CollectorRegistry, profile: str) -> None:
        self.profile = profile
        self.schedule_attempts = Counter(
            "scheduler_schedule_attempts",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod "
            "could not be scheduled, while 'error' means an internal scheduler problem.",
            ["result", "profile"], registry=registry)
        self.pending_pods = Gauge(
            "scheduler_pending_pods",
            "Number of pending pods, by the queue type. 'active' means number of pods in "
            "activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means "
            "number of pods in unschedulablePods that the scheduler attempted to schedule "
            "and failed; 'gated' is the number of unschedulable pods that the scheduler "
            "never attempted to schedule because they are gated.",
            ["queue"], registry=registry)

    def attempt(self, result: str) -> None:
        self.schedule_attempts.labels(result, self.profile).inc()

    def attempts(self, result: str) -> float:
        """The attempts counted so far with ``result`` (for tests and benchmarks)."""
        return float(self.schedule_attempts.labels(result, self.profile)._value.get())

    def watch_queues(self, pending: Callable[[], Mapping[str, int]]) -> None:
        """Count the queues with ``pending`` whenever the gauge is collected."""
        for queue in QUEUES:
            self.pending_pods.labels(queue).set_function(
                lambda queue=queue: float(pending().get(queue, 0)))  # type: ignore[misc]


def pending_pods(pods: Iterable[Mapping[str, Any]], unschedulable: UnschedulablePods,
                 wants_scheduling: Callable[[Mapping[str, Any]], bool],
                 gated: Callable[[Mapping[str, Any]], bool],
                 in_flight: Callable[[str], bool], key_of: Callable[[Mapping[str, Any]], str],
                 ) -> dict[str, int]:
    """The pending pods per queue, as kube-scheduler's ``PriorityQueue`` would hold them: a
    pod parked since its last failed cycle is ``unschedulable``; one an event woke before its
    backoff ended is in ``backoff``; every other pod waiting for a cycle is ``active``."""
    counts = dict.fromkeys(QUEUES, 0)
    for pod in pods:
        if gated(pod):
            counts["gated"] += 1
            continue
        if not wants_scheduling(pod):
            continue
        key = key_of(pod)
        if in_flight(key):
            continue  # assumed: binding, no longer in a queue
        counts[unschedulable.queue_of(key)] += 1
    return counts

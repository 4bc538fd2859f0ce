"""Prometheus metrics with the names controller-runtime and client-go users know.

Each manager has its own :class:`Metrics` (and registry), so several managers in one
process, as in tests, never mix their numbers. Served on ``/metrics`` by the manager; the
webhook server counts its requests here too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from setpoint.client import RequestRecord
from setpoint.machinery.packageinit import defer_init
from setpoint.runtime import _metric_series as series

# the metric classes without the package's exposition servers (machinery/packageinit.py)
defer_init("prometheus_client")

from prometheus_client.core import GaugeMetricFamily, Metric  # noqa: E402
from prometheus_client.metrics import Counter, Gauge, Histogram  # noqa: E402
from prometheus_client.registry import CollectorRegistry  # noqa: E402

# controller-runtime's buckets: reconcile times from 5 ms to a minute
RECONCILE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45,
                     0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0,
                     4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60)
# controller-runtime's workqueue buckets (pkg/metrics/workqueue.go:
# ExponentialBuckets(10e-9, 10, 12)): 10 ns to 1000 s, by powers of ten
QUEUE_BUCKETS = tuple(10.0 ** exp for exp in range(-8, 4))

UnfinishedWork = Callable[[], tuple[float, float]]
"""A queue's work in progress: (seconds summed over held items, seconds of the oldest)."""

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

metrics_registry = CollectorRegistry()
"""The operator's own metrics, as controller-runtime's ``metrics.Registry``: what an
operator registers here (``Gauge(..., registry=metrics_registry)``) is served on every
manager's ``/metrics`` after the runtime's own. One per process, as in controller-runtime;
its names must not repeat the runtime's."""


class Metrics:
    """The runtime's metrics in one registry."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        # the series updated per event are plain numbers rendered per scrape (_metric_series.py);
        # the others stay prometheus_client's
        self.reconcile_total = series.Counter(
            "controller_runtime_reconcile_total",
            "Total number of reconciliations per controller", ["controller", "result"], r)
        self.reconcile_errors = Counter(
            "controller_runtime_reconcile_errors_total",
            "Total number of reconciliation errors per controller", ["controller"], registry=r)
        self.terminal_errors = Counter(
            "controller_runtime_terminal_reconcile_errors_total",
            "Total number of terminal reconciliation errors per controller", ["controller"],
            registry=r)
        self.reconcile_time = series.Histogram(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller", ["controller"], r,
            buckets=RECONCILE_BUCKETS)
        self.reconcile_panics = Counter(
            "controller_runtime_reconcile_panics_total",
            "Total number of reconciliation panics per controller", ["controller"],
            registry=r)
        self.max_concurrent = Gauge(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller", ["controller"],
            registry=r)
        self.active_workers = series.Gauge(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller", ["controller"], r)
        queue_labels = ["name", "controller"]
        self.queue_depth = series.Gauge(
            "workqueue_depth", "Current depth of workqueue", queue_labels, r)
        self.queue_adds = series.Counter(
            "workqueue_adds_total", "Total number of adds handled by workqueue",
            queue_labels, r)
        self.queue_latency = series.Histogram(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            queue_labels, r, buckets=QUEUE_BUCKETS)
        self.work_duration = series.Histogram(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes", queue_labels, r,
            buckets=QUEUE_BUCKETS)
        self.queue_retries = series.Counter(
            "workqueue_retries_total", "Total number of retries handled by workqueue",
            queue_labels, r)
        self._unfinished = _UnfinishedWorkCollector()
        r.register(self._unfinished)
        self.leader = Gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates "
            "backup, 1 indicates master. 'name' is the string used to identify the lease.",
            ["name"], registry=r)
        self.rest_requests = series.Counter(
            "rest_client_requests_total",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            ["code", "method", "host"], r)
        self.rest_latency = series.Histogram(
            "rest_client_request_duration_seconds",
            "Request latency in seconds. Broken down by verb, and host.", ["verb", "host"],
            r, buckets=(0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0))
        # the webhook server's, labelled by path as controller-runtime labels them
        self.webhook_latency = Histogram(
            "controller_runtime_webhook_latency_seconds",
            "Histogram of the latency of processing admission requests", ["webhook"],
            registry=r)
        self.webhook_requests = Counter(
            "controller_runtime_webhook_requests_total",
            "Total number of admission requests by HTTP status code.", ["webhook", "code"],
            registry=r)
        self.webhook_in_flight = Gauge(
            "controller_runtime_webhook_requests_in_flight",
            "Current number of admission requests being served.", ["webhook"], registry=r)
        self._request_children: dict[tuple[int | None, str, str], tuple[
            series.CounterSeries, series.HistogramSeries]] = {}

    def __repr__(self) -> str:
        return "Metrics()"

    def on_request(self, record: RequestRecord) -> None:
        """The client's per-request hook: counts every HTTP attempt as client-go does
        (``<error>`` when no answer came)."""
        key = (record.code, record.method, record.host)
        children = self._request_children.get(key)
        if children is None:
            # a labelled child is looked up once per (code, verb, host), not per request
            code = str(record.code) if record.code is not None else "<error>"
            children = (self.rest_requests.labels(code, record.method, record.host),
                        self.rest_latency.labels(record.method, record.host))
            self._request_children[key] = children
        children[0].inc()
        children[1].observe(record.duration)

    def queue(self, controller: str) -> QueueMetrics:
        """The metrics of one controller's workqueue."""
        return QueueMetrics(self, controller)

    def track_unfinished_work(self, controller: str, unfinished: UnfinishedWork) -> None:
        """Serve ``workqueue_unfinished_work_seconds`` and
        ``workqueue_longest_running_processor_seconds`` of a queue from ``unfinished``,
        read at each scrape (client-go updates them every 500 ms; reading them when asked
        gives the same numbers without a timer)."""
        self._unfinished.queues[controller] = unfinished

    def exposition(self) -> bytes:
        """The runtime's registry, then the operator's (:data:`metrics_registry`), in the
        Prometheus text format."""
        from prometheus_client.exposition import generate_latest  # (at the first scrape)

        return generate_latest(self.registry) + generate_latest(metrics_registry)


class QueueMetrics:
    """``workqueue_*`` for one queue (the workqueue's ``QueueMetrics`` protocol).

    Each method is its series' own bound method (``added`` is the adds counter's ``inc``):
    the queue calls five of them per reconcile, each a Python call fewer than a method
    passing the call on."""

    def __init__(self, metrics: Metrics, name: str) -> None:
        labels = (name, name)
        self._depth = metrics.queue_depth.labels(*labels)
        self._adds = metrics.queue_adds.labels(*labels)
        self._latency = metrics.queue_latency.labels(*labels)
        self._work = metrics.work_duration.labels(*labels)
        self._retries = metrics.queue_retries.labels(*labels)
        self.added: Callable[[], None] = self._adds.inc
        self.depth: Callable[[int], None] = self._depth.set
        self.got: Callable[[float], None] = self._latency.observe
        self.finished: Callable[[float], None] = self._work.observe
        self.retried: Callable[[], None] = self._retries.inc


class _UnfinishedWorkCollector:
    """The two workqueue gauges about items still being worked on, computed per scrape."""

    def __init__(self) -> None:
        self.queues: dict[str, UnfinishedWork] = {}

    def describe(self) -> list[Metric]:
        return []  # nothing to check at registration: the names are fixed and unique

    def collect(self) -> Iterator[Metric]:
        labels = ["name", "controller"]
        unfinished = GaugeMetricFamily(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been "
            "observed by work_duration. Large values indicate stuck threads. One can deduce "
            "the number of stuck threads by observing the rate at which this increases.",
            labels=labels)
        longest = GaugeMetricFamily(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
            labels=labels)
        for name, read in list(self.queues.items()):
            total, oldest = read()
            unfinished.add_metric([name, name], total)
            longest.add_metric([name, name], oldest)
        yield unfinished
        yield longest

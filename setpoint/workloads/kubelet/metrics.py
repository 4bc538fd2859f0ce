"""``metrics.k8s.io/v1beta1``: the PodMetrics and NodeMetrics of the simulated nodes.

On a real cluster metrics-server scrapes every kubelet's resource usage, keeps the last
scrapes in memory and serves them as an aggregated API (kubernetes-sigs/metrics-server
pkg/storage/pod.go, node.go): nothing about usage is written to the API server. Here the
kubelets report their simulated (or, on the process runtime, measured) usage into a
:class:`~setpoint.workloads.metricsserver.storage.MetricsStorage` in the workloads' own
memory, which :mod:`setpoint.workloads.metricsserver` serves the same way. The objects have
metrics-server's shape (``timestamp``, ``window``, ``containers[].usage`` / ``usage`` with
``cpu`` and ``memory``, the pod's or node's labels) so clients read them unchanged.

The points are made when they are read, not when pods change: the storage asks the
publisher to bring them up to date before each get or list (at most once per
``metrics_debounce`` unless a pod started or stopped running since). Publishing on every
change made the workloads' CPU grow with the pods times the length of a rollout: every
change of any pod walked every pod again (36 % of the workloads' samples at 3,000 pods),
while reads (``kubectl top``, chargeback, the HPA controller) are rare. Every point is
measured again, with a fresh ``timestamp``, by the first read once a window
(``metrics_window``; measured usage also every ``metrics_resync`` if shorter) has passed, as
metrics-server scrapes every resolution period: the HPA controller counts a pod's CPU only
from a sample taken a whole window after its readiness last changed
(replica_calculator.go ``groupPods``), so a timestamp kept from a first read would hide a new
pod for the whole CPU initialization period. Between windows a simulated point is reused
while its pod and running containers stay the same.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from setpoint.client import Kind
from setpoint.machinery.metatime import meta_time
from setpoint.runtime._objects import meta, object_key
from setpoint.workloads.kubelet.options import KubeletOptions
from setpoint.workloads.kubelet.podworker import NODE, POD, PodWorkers, node_alive
from setpoint.workloads.kubelet.usage import Usage, container_usage, node_usage
from setpoint.workloads.metricsserver.storage import MetricsStorage

if TYPE_CHECKING:
    from setpoint.runtime import Manager

GROUP, VERSION = "metrics.k8s.io", "v1beta1"
POD_METRICS = Kind(f"{GROUP}/{VERSION}", "PodMetrics")
NODE_METRICS = Kind(f"{GROUP}/{VERSION}", "NodeMetrics")


def _metadata(name: str, namespace: str | None, source: Mapping[str, Any]) -> dict[str, Any]:
    """metrics-server's metadata: the name, and the labels of the pod or node."""
    out: dict[str, Any] = {"name": name}
    if namespace:
        out["namespace"] = namespace
    labels = source.get("labels")
    if labels:
        out["labels"] = dict(labels)
    return out


class MetricsPublisher:
    """Keeps the PodMetrics and NodeMetrics in ``storage`` in step with the pods the
    kubelets run."""

    def __init__(self, workers: PodWorkers, opts: KubeletOptions,
                 storage: MetricsStorage | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.workers = workers
        self.opts = opts
        self.clock = clock
        self.storage = storage if storage is not None else MetricsStorage()
        self._simulated: dict[str, tuple[Any, dict[str, Any], list[tuple[str, Usage]]]] = {}
        """By pod uid: what :meth:`desired` made of a pod with simulated usage, and from
        what (its resourceVersion and running containers)."""
        self._manager: Manager | None = None
        self._changed = True
        self._published_at = self._measured_at = -math.inf
        workers.on_change(self._mark_changed)
        self.storage.before_read = self.bring_up_to_date

    def __repr__(self) -> str:
        return f"MetricsPublisher({self.storage!r})"

    async def run(self, manager: Manager) -> None:
        """Read the manager's caches while it runs (a manager runnable)."""
        self._manager = manager
        try:
            await asyncio.Event().wait()
        finally:
            self._manager = None

    def _mark_changed(self) -> None:
        self._changed = True

    def bring_up_to_date(self) -> None:
        """Publish before a read: when a pod started or stopped running since the last
        publication, or when it is older than ``metrics_debounce``; every point is measured
        again (a new timestamp) once per window."""
        if self._manager is None:
            return
        now = time.monotonic()
        if not self._changed and now - self._published_at < self.opts.metrics_debounce:
            return
        window = self.opts.metrics_window
        if self.workers.runtime.runs_processes:
            window = min(window, self.opts.metrics_resync)
        refresh = now - self._measured_at >= window
        if refresh:
            self._measured_at = now
        self._changed = False
        self._published_at = now
        self.publish(self._manager, refresh=refresh)

    def desired(self, manager: Manager) -> dict[tuple[str, str, str], dict[str, Any]]:
        """Every metrics object that should exist now, by (kind, namespace, name)."""
        cache = manager.cache
        pods = cache.store_for(POD)
        out: dict[tuple[str, str, str], dict[str, Any]] = {}
        nodes = cache.store_for(NODE)
        per_node: dict[str, list[Usage]] = {}
        simulated: dict[str, tuple[Any, dict[str, Any], list[tuple[str, Usage]]]] = {}
        for record in list(self.workers.records.values()):
            node = nodes.get(record.node)
            if record.terminal or node is None or not node_alive(node):
                continue  # nothing scrapes a kubelet that is down
            running = [cr.name for cr in record.all_containers() if cr.running]
            pod = pods.get(object_key(record.namespace, record.name))
            if not running or pod is None:
                continue
            measured = self.workers.runtime.measured_usage(record.uid)
            # simulated usage follows from the pod and its running containers alone: kept
            # while they stay the same, so a publication costs a lookup per unchanged pod
            signature = (meta(pod).get("resourceVersion"), tuple(running))
            known = self._simulated.get(record.uid) if measured is None else None
            if known is not None and known[0] == signature:
                content, usages = known[1], known[2]
            else:
                usages = ([(name, measured.get(name, Usage())) for name in running]
                          if measured is not None
                          else container_usage(pod, running, self.opts))
                content = {
                    "metadata": _metadata(record.name, record.namespace, meta(pod)),
                    "containers": [{"name": name, "usage": u.as_resource_list()}
                                   for name, u in usages]}
            if measured is None:
                simulated[record.uid] = (signature, content, usages)
            out[("PodMetrics", record.namespace, record.name)] = content
            per_node.setdefault(record.node, []).extend(u for _, u in usages)
        for node in nodes:
            if not node_alive(node):
                continue
            name = str(meta(node).get("name"))
            out[("NodeMetrics", "", name)] = {
                "metadata": _metadata(name, None, meta(node)),
                "usage": node_usage(per_node.get(name, [])).as_resource_list()}
        self._simulated = simulated
        return out

    def publish(self, manager: Manager, *, refresh: bool = False) -> None:
        """Take what changed since the last publication (everything, with a new timestamp,
        when ``refresh``) and forget what no longer runs."""
        self.storage.store(self.desired(manager), timestamp=meta_time(self.clock()),
                           window=f"{self.opts.metrics_window:g}s", refresh=refresh)

"""``metrics.k8s.io/v1beta1``: the PodMetrics and NodeMetrics of the simulated nodes.

On a real cluster metrics-server scrapes every kubelet's resource usage, keeps the last
scrapes in memory and serves them as an aggregated API (kubernetes-sigs/metrics-server
pkg/storage/pod.go, node.go): nothing about usage is written to the API server. Here the
kubelets report their simulated (or, on the process runtime, measured) usage into a
:class:`~setpoint.workloads.metricsserver.storage.MetricsStorage` in the workloads' own
memory, which :mod:`setpoint.workloads.metricsserver` serves the same way. The objects have
metrics-server's shape (``timestamp``, ``window``, ``containers[].usage`` / ``usage`` with
``cpu`` and ``memory``, the pod's or node's labels) so clients read them unchanged.

A background loop takes what changed, at most once per ``metrics_debounce``, and looks
again every ``metrics_resync``. Simulated usage is constant while a pod and its running
containers stay the same, so an object's ``timestamp`` says when its values last changed;
measured usage changes by itself and is measured again every window, as metrics-server
scrapes.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from setpoint.client import Kind
from setpoint.runtime._objects import meta, object_key
from setpoint.workloads.kubelet.options import KubeletOptions
from setpoint.workloads.kubelet.podstatus import rfc3339
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
        self._dirty = asyncio.Event()
        self._simulated: dict[str, tuple[Any, dict[str, Any], list[tuple[str, Usage]]]] = {}
        """By pod uid: what :meth:`desired` made of a pod with simulated usage, and from
        what (its resourceVersion and running containers)."""
        workers.on_change(self._dirty.set)
        self.published = asyncio.Event()
        """Set after each publication (tests wait on it)."""

    def __repr__(self) -> str:
        return f"MetricsPublisher({self.storage!r})"

    async def run(self, manager: Manager) -> None:
        """The publication loop (a manager runnable)."""
        self._dirty.set()
        # measured usage changes by itself: measure again every window, as metrics-server
        # scrapes the kubelets every 15 s (its --metric-resolution)
        resync = (min(self.opts.metrics_window, self.opts.metrics_resync)
                  if self.workers.runtime.runs_processes else self.opts.metrics_resync)
        while True:
            # asyncio.timeout, not wait_for: 3.11's wait_for can swallow a cancellation that
            # arrives as the event is set, and the manager could then never stop this loop
            try:
                async with asyncio.timeout(resync):
                    await self._dirty.wait()
                fresh = False
            except TimeoutError:
                # new timestamps only when the usage is measured: unchanged simulated usage
                # was last measured when it changed (see the module's docstring)
                fresh = self.workers.runtime.runs_processes
            self._dirty.clear()
            self.publish(manager, refresh=fresh)
            await asyncio.sleep(self.opts.metrics_debounce)

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
            # (it runs every few tenths of a second while pods change, over every pod)
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
        self.storage.store(self.desired(manager), timestamp=rfc3339(self.clock()),
                           window=f"{self.opts.metrics_window:g}s", refresh=refresh)
        self.published.set()

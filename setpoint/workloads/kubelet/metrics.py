"""``metrics.k8s.io/v1beta1``: PodMetrics and NodeMetrics of the simulated nodes.

On a real cluster metrics-server serves this group (an aggregated API): it scrapes every
kubelet's resource usage and answers ``get``/``list`` of ``pods`` (PodMetrics, namespaced)
and ``nodes`` (NodeMetrics, cluster-scoped), which is what ``kubectl top`` and the
HorizontalPodAutoscaler read. Here the kubelets publish the simulated usage themselves, as
objects of two custom resources in that group, registered when the kubelets start (as
installing metrics-server adds the group to a cluster). The objects have metrics-server's
shape (``timestamp``, ``window``, ``containers[].usage`` / ``usage`` with ``cpu`` and
``memory``, the pod's or node's labels) so clients read them unchanged.

Publication is off the pods' critical path: a background loop writes what changed, at most
once per ``metrics_debounce``, and looks again every ``metrics_resync``.

What is written is only what changed. metrics-server writes nothing to the API server: it
keeps its scrapes in memory and serves them itself (kubernetes-sigs/metrics-server
pkg/storage/pod.go, pkg/storage/podmetrics/reststorage.go), so every write here is the
simulation's own cost, one the floor's cluster would not pay. Simulated usage is constant
while a pod and its running containers stay the same, so its objects are written when that
changes and not rewritten on the resync only to move their ``timestamp`` (that was one write
per running pod per minute, idle or not: 1,000 writes a minute at 1,000 pods, more than a
whole rollout's pod writes when it lasted a few minutes). The ``timestamp`` of a simulated
object says when its values were last measured. Measured usage (the process runtime)
changes by itself and is measured and rewritten every window, as metrics-server scrapes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from setpoint.client import AlreadyExistsError, ApiError, Client, Kind, NotFoundError
from setpoint.runtime._logs import format_fields
from setpoint.runtime._objects import meta, object_key
from setpoint.workloads.kubelet.options import KubeletOptions
from setpoint.workloads.kubelet.podstatus import rfc3339
from setpoint.workloads.kubelet.podworker import NODE, POD, PodWorkers, node_alive
from setpoint.workloads.kubelet.usage import Usage, container_usage, node_usage

if TYPE_CHECKING:
    from setpoint.runtime import Manager

log = logging.getLogger("setpoint.workloads.kubelet.metrics")

GROUP, VERSION = "metrics.k8s.io", "v1beta1"
POD_METRICS = Kind(f"{GROUP}/{VERSION}", "PodMetrics")
NODE_METRICS = Kind(f"{GROUP}/{VERSION}", "NodeMetrics")
CRD = Kind("apiextensions.k8s.io/v1", "CustomResourceDefinition")
FIELD_MANAGER = "kubelet"
WRITE_CONCURRENCY = 16

_QUANTITY = {"anyOf": [{"type": "integer"}, {"type": "string"}],
             "x-kubernetes-int-or-string": True}
_RESOURCE_LIST = {"type": "object", "additionalProperties": _QUANTITY}
_COMMON = {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
           "metadata": {"type": "object"},
           "timestamp": {"type": "string", "format": "date-time"},
           "window": {"type": "string"}}


def _crd(plural: str, kind: str, scope: str, properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}", "annotations": {
            "api-approved.kubernetes.io":
                "unapproved, metrics.k8s.io as metrics-server serves it, simulated by "
                "setpoint's kubelets"}},
        "spec": {
            "group": GROUP, "scope": scope,
            "names": {"plural": plural, "singular": kind.lower(), "kind": kind,
                      "listKind": f"{kind}List"},
            "versions": [{"name": VERSION, "served": True, "storage": True, "schema": {
                "openAPIV3Schema": {"type": "object",
                                    "properties": {**_COMMON, **properties}}}}],
        },
    }


def metrics_crds() -> list[dict[str, Any]]:
    """The two CustomResourceDefinitions that serve ``metrics.k8s.io/v1beta1``."""
    container = {"type": "object", "required": ["name", "usage"], "properties": {
        "name": {"type": "string"}, "usage": _RESOURCE_LIST}}
    return [
        _crd("pods", "PodMetrics", "Namespaced",
             {"containers": {"type": "array", "items": container}}),
        _crd("nodes", "NodeMetrics", "Cluster", {"usage": _RESOURCE_LIST}),
    ]


async def register(client: Client, timeout: float = 30.0) -> None:
    """Serve ``metrics.k8s.io/v1beta1`` (create the CRDs unless they exist) and return
    once both resources are in discovery."""
    for crd in metrics_crds():
        with contextlib.suppress(AlreadyExistsError):
            await client.create(crd)
    deadline = time.monotonic() + timeout
    while True:
        try:
            listed = await client.request("GET", f"/apis/{GROUP}/{VERSION}")
            names = {r.get("name") for r in (listed or {}).get("resources") or ()}
            if {"pods", "nodes"} <= names:
                break
        except NotFoundError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"{GROUP}/{VERSION} was not served within {timeout}s")
        await asyncio.sleep(0.05)
    client.discovery.invalidate(f"{GROUP}/{VERSION}")


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
    """Keeps PodMetrics and NodeMetrics in step with the pods the kubelets run."""

    def __init__(self, workers: PodWorkers, opts: KubeletOptions,
                 clock: Callable[[], float] = time.time) -> None:
        self.workers = workers
        self.opts = opts
        self.clock = clock
        self._dirty = asyncio.Event()
        self._written: dict[tuple[str, str, str], Any] = {}  # (kind, ns, name) -> content
        self._simulated: dict[str, tuple[Any, dict[str, Any], list[tuple[str, Usage]]]] = {}
        """By pod uid: what :meth:`desired` made of a pod with simulated usage, and from
        what (its resourceVersion and running containers)."""
        workers.on_change(self._dirty.set)
        self.published = asyncio.Event()
        """Set after each publication (tests wait on it)."""

    def __repr__(self) -> str:
        return f"MetricsPublisher(objects={len(self._written)})"

    async def run(self, manager: Manager) -> None:
        """The publication loop (a manager runnable)."""
        client = manager.client
        await register(client)
        await self._load(client)
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
                # rewrite everything (fresh timestamps) only when the usage is measured:
                # unchanged simulated usage would cost a write per pod per resync and tell
                # nobody anything new (see the module's docstring)
                fresh = self.workers.runtime.runs_processes
            self._dirty.clear()
            try:
                await self.publish(client, manager, refresh=fresh)
            except ApiError as exc:
                log.warning("metrics_publish_failed %s", format_fields({"error": exc.message}))
                self._dirty.set()
            await asyncio.sleep(self.opts.metrics_debounce)

    async def _load(self, client: Client) -> None:
        """Take what a previous kubelet published, so stale objects get deleted."""
        for kind, label in ((POD_METRICS, "PodMetrics"), (NODE_METRICS, "NodeMetrics")):
            listed = await client.list_all(kind)
            for item in listed.items:
                m = meta(item)
                self._written[(label, str(m.get("namespace") or ""), str(m.get("name")))] = None

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

    async def publish(self, client: Client, manager: Manager, *, refresh: bool = False) -> None:
        """Write what changed since the last publication (everything when ``refresh``) and
        delete what no longer runs."""
        desired = self.desired(manager)
        now = rfc3339(self.clock())
        window = f"{self.opts.metrics_window:g}s"
        gate = asyncio.Semaphore(WRITE_CONCURRENCY)

        async def write(key: tuple[str, str, str], content: dict[str, Any]) -> None:
            kind = POD_METRICS if key[0] == "PodMetrics" else NODE_METRICS
            body = {"apiVersion": kind.api_version, "kind": kind.kind, **content,
                    "timestamp": now, "window": window}
            async with gate:
                await client.apply(body, field_manager=FIELD_MANAGER, force=True)
            self._written[key] = content

        async def delete(key: tuple[str, str, str]) -> None:
            kind = POD_METRICS if key[0] == "PodMetrics" else NODE_METRICS
            async with gate:
                with contextlib.suppress(NotFoundError):
                    await client.delete(kind, key[2], namespace=key[1] or None)
            self._written.pop(key, None)

        jobs = [write(key, content) for key, content in desired.items()
                if refresh or self._written.get(key) != content]
        jobs += [delete(key) for key in list(self._written) if key not in desired]
        results = await asyncio.gather(*jobs, return_exceptions=True)
        self.published.set()
        for result in results:
            if isinstance(result, BaseException):
                raise result

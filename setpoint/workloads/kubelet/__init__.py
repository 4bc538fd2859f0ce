"""The simulated kubelet: runs the pods bound to the embedded cluster's nodes.

Like kwok, and like a real kubelet seen from the API server, it takes each bound pod from
Pending to Running with the status a real kubelet writes (conditions, IPs, complete
container statuses), runs init containers first, completes the pods of Jobs, honours
graceful deletion, carries out faults asked for by annotation (restart a container, fail a
pod, delay or withhold readiness: see :mod:`~setpoint.workloads.kubelet.annotations`) and
reports simulated resource usage to an in-process metrics-server
(:mod:`setpoint.workloads.metricsserver`) so that ``kubectl top`` works.

The containers run in a :class:`~setpoint.workloads.kubelet.runtime.ContainerRuntime`;
the simulated one is the default (``WorkloadSettings.runtime``), and :data:`RUNTIMES` is
where another one registers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from setpoint.machinery.objects import Obj
from setpoint.runtime import Controller, Funcs, Manager
from setpoint.workloads import metricsserver
from setpoint.workloads.kubelet.events import KubeletEvents
from setpoint.workloads.kubelet.metrics import MetricsPublisher
from setpoint.workloads.kubelet.options import KubeletOptions
from setpoint.workloads.kubelet.podworker import (
    CONTROLLER_NAME,
    NODE,
    NODE_INDEX,
    POD,
    PodWorkers,
    index_by_node,
    internal_ip,
    node_alive,
)
from setpoint.workloads.kubelet.runtime import ContainerRuntime, SimulatedRuntime
from setpoint.workloads.kubelet.volumemounts import CONFIGMAP, PV, PVC, SECRET
from setpoint.workloads.settings import WorkloadSettings

__all__ = [
    "RUNTIMES",
    "ContainerRuntime",
    "KubeletOptions",
    "MetricsPublisher",
    "PodWorkers",
    "SimulatedRuntime",
    "install",
]

def _process_runtime(settings: WorkloadSettings) -> ContainerRuntime:
    from setpoint.workloads.kubelet.process import from_settings

    return from_settings(settings)


RUNTIMES: dict[str, Callable[[WorkloadSettings], ContainerRuntime]] = {
    "simulated": lambda _settings: SimulatedRuntime(),
    "process": _process_runtime,
}
"""Container runtimes by the name ``WorkloadSettings.runtime`` gives."""


def _node_matters(old: Obj, new: Obj) -> bool:
    """A node change its pods must hear of: its kubelet came or went, or its addresses."""
    return (node_alive(old) != node_alive(new) or internal_ip(old) != internal_ip(new)
            or (old.get("spec") or {}).get("podCIDR") != (new.get("spec") or {}).get("podCIDR"))


def _bound(pod: Obj) -> bool:
    """A pod some node's kubelet runs. A kubelet watches only the pods bound to its node (the
    ``spec.nodeName=<node>`` field selector of pkg/kubelet/config/apiserver.go
    ``NewSourceApiserver``): an unbound pod's create, changes and deletion never reach it.
    Here one informer serves every node and the scheduler, so the kubelet's controller takes
    the selector's place; a bound pod never becomes unbound, so a bound pod's deletion is
    still heard."""
    return bool((pod.get("spec") or {}).get("nodeName"))


def install(manager: Manager, settings: WorkloadSettings,
            options: KubeletOptions | None = None) -> PodWorkers:
    """Add the kubelets of every simulated node to ``manager``: the pod workers (a
    controller named ``kubelet``), the metrics publication and the event recorders.
    Returns the pod workers (tests look at them)."""
    factory = RUNTIMES.get(settings.runtime)
    if factory is None:
        raise ValueError(f"unknown container runtime {settings.runtime!r} "
                         f"(known: {', '.join(sorted(RUNTIMES))})")
    opts = options or KubeletOptions.from_extra(settings.extra)
    events = KubeletEvents(manager.client)
    runtime = factory(settings)
    workers = PodWorkers(manager, runtime, opts, events)
    if runtime.runs_processes:
        from setpoint.workloads.kubelet.addresses import AddressAllocator
        from setpoint.workloads.kubelet.process import ProcessRuntime, attach
        from setpoint.workloads.loopbacknet import LoopbackNetwork

        assert isinstance(runtime, ProcessRuntime)
        workers.addresses = AddressAllocator(LoopbackNetwork(settings.loopback_network).pods)
        attach(manager, runtime, settings)
    manager.cache.store_for(POD, create=True).add_indexer(NODE_INDEX, index_by_node)
    controller = (Controller.for_(POD, name=CONTROLLER_NAME, predicates=[Funcs(
                      create=_bound, update=lambda _old, new: _bound(new), delete=_bound)])
                  .watches(NODE, map_func=workers.pods_on_node,
                           predicates=[Funcs(update=_node_matters)])
                  # what the volume manager reads to set a pod's volumes up
                  .reads(CONFIGMAP, SECRET, PVC, PV)
                  .reconciler(workers))
    manager.add(controller)
    if opts.metrics:
        publisher = MetricsPublisher(workers, opts)
        manager.add_runnable(publisher.run)
        metricsserver.install(manager, publisher.storage)

    async def flush_events(_: Manager) -> None:
        """Hold the event recorders open while the manager runs; flush them at stop."""
        try:
            await asyncio.Event().wait()
        finally:
            await events.stop()

    manager.add_runnable(flush_events)
    return workers

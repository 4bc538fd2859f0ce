"""The default scheduler: binds pending pods to nodes through ``pods/binding``.

A controller over Pods that have no node yet and ask for ``default-scheduler``. Each
reconcile is one scheduling cycle: read the scheduler cache, decide (see
:mod:`.algorithm`), and either assume the pod on the chosen node and bind it (event
``Scheduled``), or record ``FailedScheduling`` and write ``PodScheduled=False``, reason
``Unschedulable``, through ``pods/status``, parking the pod until a cluster event may help
(see :mod:`.queue`). Deciding and assuming happen without awaiting, so concurrent cycles see
each other's choices.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from typing import Any

from setpoint.client import ApiError, ConflictError, Kind, NotFoundError, PatchType
from setpoint.machinery.metatime import meta_time
from setpoint.machinery.objects import Obj
from setpoint.runtime import Controller, Funcs, Manager, Request, Result, SeriesEventRecorder
from setpoint.runtime._objects import object_key
from setpoint.workloads.scheduler.algorithm import schedule
from setpoint.workloads.scheduler.cache import SchedulerCache, is_terminal, pod_key
from setpoint.workloads.scheduler.metrics import (
    ERROR,
    SCHEDULED,
    UNSCHEDULABLE,
    SchedulerMetrics,
    pending_pods,
)
from setpoint.workloads.scheduler.queue import (
    FLUSH_AFTER,
    FREED_BY_POD_REMOVAL,
    HELPED_BY_POD_ARRIVAL,
    RequeueUnschedulable,
    UnschedulablePods,
    assigned,
    assigned_pod_arrived,
    assigned_pod_freed,
    node_changed,
)
from setpoint.workloads.scheduler.volumebinder import (
    VolumeBindingError,
    VolumeChanges,
    bind_pod_volumes,
)
from setpoint.workloads.scheduler.volumebinding import PLUGIN as VOLUME_BINDING
from setpoint.workloads.scheduler.volumebinding import VolumeBindingState
from setpoint.workloads.volumeclaims import claim_names

log = logging.getLogger(__name__)

POD = Kind("v1", "Pod")
NODE = Kind("v1", "Node")
NAMESPACE = Kind("v1", "Namespace")
PVC = Kind("v1", "PersistentVolumeClaim")
PV = Kind("v1", "PersistentVolume")
STORAGE_CLASS = Kind("storage.k8s.io/v1", "StorageClass")
# what the VolumeBinding plugin's rejections wait for (its EventsToRegister)
HELPED_BY_VOLUMES = frozenset({VOLUME_BINDING})
SCHEDULER_NAME = "default-scheduler"


def wants_scheduling(pod: Mapping[str, Any]) -> bool:
    """A pod this scheduler must place: unassigned, alive, ungated, and asking for it."""
    spec = pod.get("spec") or {}
    return (not spec.get("nodeName")
            and (spec.get("schedulerName") or SCHEDULER_NAME) == SCHEDULER_NAME
            and not spec.get("schedulingGates")
            and not (pod.get("metadata") or {}).get("deletionTimestamp")
            and not is_terminal(pod))


def gated(pod: Mapping[str, Any]) -> bool:
    """A pod of this scheduler held back by its scheduling gates (never tried)."""
    spec = pod.get("spec") or {}
    return (bool(spec.get("schedulingGates")) and not spec.get("nodeName")
            and (spec.get("schedulerName") or SCHEDULER_NAME) == SCHEDULER_NAME
            and not is_terminal(pod))


def _scheduling_input_changed(old: Obj, new: Obj) -> bool:
    """Status writes (ours included) do not call for a new scheduling cycle."""
    if not wants_scheduling(new):
        return False
    if not wants_scheduling(old):
        return True
    return old.get("spec") != new.get("spec") or \
        (old.get("metadata") or {}).get("labels") != (new.get("metadata") or {}).get("labels")


class PodFeeder:
    """Keeps the :class:`SchedulerCache` in step with the Pod informer."""

    def __init__(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler

    def on_add(self, obj: Obj) -> None:
        self.on_update(obj, obj)

    def on_update(self, old: Obj, new: Obj) -> None:
        self.scheduler.cache.observe_pod(new)
        if assigned(new) or not wants_scheduling(new):
            self.scheduler.unschedulable.remove(pod_key(new))

    def on_delete(self, obj: Obj) -> None:
        key = pod_key(obj)
        self.scheduler.cache.remove_pod(key)
        self.scheduler.unschedulable.remove(key)


class NodeFeeder:
    """Keeps the :class:`SchedulerCache` in step with the Node informer."""

    def __init__(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler

    def on_add(self, obj: Obj) -> None:
        self.scheduler.cache.set_node(obj)

    def on_update(self, old: Obj, new: Obj) -> None:
        self.scheduler.cache.set_node(new)

    def on_delete(self, obj: Obj) -> None:
        self.scheduler.cache.remove_node(str((obj.get("metadata") or {}).get("name")))


class Scheduler:
    """kube-scheduler's default profile, as a controller in a :class:`Manager`."""

    def __init__(self, manager: Manager) -> None:
        self.manager = manager
        self.cache = SchedulerCache()
        self.unschedulable = UnschedulablePods()
        self.recorder: SeriesEventRecorder | None = None
        self.next_start_node_index = 0
        """Where the next cycle starts filtering (``nextStartNodeIndex``)."""
        self.metrics = SchedulerMetrics(manager.metrics.registry, SCHEDULER_NAME)
        self.metrics.watch_queues(self.pending_pods)
        self.volume_changes = VolumeChanges()
        self.controller = self._controller()

    def __repr__(self) -> str:
        return f"Scheduler({self.cache!r}, {self.unschedulable!r})"

    def _controller(self) -> Controller[Obj]:
        pods = self.unschedulable
        ctrl: Controller[Obj] = (
            Controller.for_(POD, name="scheduler", predicates=[Funcs(
                create=wants_scheduling, update=_scheduling_input_changed,
                delete=lambda _: False)])
            .watches(NODE, handler=RequeueUnschedulable(pods), predicates=[Funcs(
                update=node_changed, delete=lambda _: False)])
            .watches(POD, handler=RequeueUnschedulable(pods, FREED_BY_POD_REMOVAL),
                     predicates=[Funcs(create=lambda _: False, update=assigned_pod_freed,
                                       delete=assigned)])
            .watches(POD, handler=RequeueUnschedulable(pods, HELPED_BY_POD_ARRIVAL),
                     predicates=[Funcs(create=assigned, update=assigned_pod_arrived,
                                       delete=lambda _: False)])
            .watches(PVC, handler=RequeueUnschedulable(pods, HELPED_BY_VOLUMES),
                     predicates=[Funcs(delete=lambda _: False)])
            .watches(PV, handler=RequeueUnschedulable(pods, HELPED_BY_VOLUMES),
                     predicates=[Funcs(delete=lambda _: False)])
            .watches(STORAGE_CLASS, handler=RequeueUnschedulable(pods, HELPED_BY_VOLUMES),
                     predicates=[Funcs(delete=lambda _: False)])
            .reads(NAMESPACE)
        )
        # a cycle reads the pod and never changes it: the informer's object, not a copy of it
        # per cycle (most cycles of a rollout fail and are repeated at each backoff's end)
        ctrl.reconciler(self)
        return ctrl

    def install(self, manager: Manager) -> None:
        """Add the controller, the cache feeds and the event recorder to ``manager``."""
        manager.informer_for(NODE).add_handler(NodeFeeder(self))
        manager.informer_for(POD).add_handler(PodFeeder(self))
        manager.informer_for(PVC).add_handler(self.volume_changes)
        manager.informer_for(PV).add_handler(self.volume_changes)
        manager.add(self.controller)
        manager.add_runnable(self._run_recorder)

    async def _run_recorder(self, manager: Manager) -> None:
        recorder = self._recorder()
        await recorder.start()
        try:
            await asyncio.Event().wait()
        finally:
            await recorder.stop(timeout=2.0)

    def _recorder(self) -> SeriesEventRecorder:
        # kube-scheduler writes events.k8s.io/v1 (cmd/kube-scheduler/app/server.go's
        # events.NewEventBroadcasterAdapter), unlike the controllers and kubelet
        if self.recorder is None:
            self.recorder = SeriesEventRecorder(self.manager.client,
                                                reporting_controller=SCHEDULER_NAME)
        return self.recorder

    def pending_pods(self) -> dict[str, int]:
        """The pending pods per queue of ``scheduler_pending_pods``."""
        return pending_pods(self.manager.cache.store_for(POD), self.unschedulable,
                            wants_scheduling, gated, self.cache.is_assumed, pod_key)

    def namespace_labels(self, name: str) -> Mapping[str, str]:
        namespace = self.manager.cache.store_for(NAMESPACE).get(name)
        return ((namespace or {}).get("metadata") or {}).get("labels") or {}

    # -- what the VolumeBinding plugin reads (volumebinding.VolumeObjects) -----------------

    def claim(self, namespace: str, name: str) -> Obj | None:
        return self.manager.cache.get(PVC, name, namespace)  # type: ignore[no-any-return]

    def volume(self, name: str) -> Obj | None:
        return self.manager.cache.get(PV, name)  # type: ignore[no-any-return]

    def volumes(self) -> list[Obj]:
        return self.manager.cache.list_raw(PV)

    def storage_class(self, name: str) -> Obj | None:
        return self.manager.cache.get(STORAGE_CLASS, name)  # type: ignore[no-any-return]

    # -- one scheduling cycle --------------------------------------------------------------

    async def reconcile(self, request: Request) -> Result:
        pod = self.manager.cache.store_for(POD).get(object_key(request.namespace, request.name))
        if pod is None:
            return Result()
        key = pod_key(pod)
        if not wants_scheduling(pod):
            self.unschedulable.remove(key)
            return Result()
        if self.cache.node_of(key) is not None:
            return Result()  # assumed: its binding is in flight or not yet seen
        wait = self.unschedulable.backoff_left(key)
        if wait > 0:
            return Result(requeue_after=wait)  # woken during its backoff: try when it ends
        nodes = self.cache.node_infos()
        volumes = VolumeBindingState(pod, self) if claim_names(pod) else None
        decision = schedule(pod, nodes, self.namespace_labels, self.next_start_node_index,
                            volumes)
        if nodes:
            self.next_start_node_index = \
                (self.next_start_node_index + decision.processed) % len(nodes)
        if decision.node is None:
            self.metrics.attempt(UNSCHEDULABLE)
            self.unschedulable.add(key, decision.rejectors)
            self._recorder().warning(pod, "FailedScheduling", decision.message,
                                     action="Scheduling")
            await self._mark_unschedulable(pod, decision.message)
            return Result(requeue_after=FLUSH_AFTER)
        node_name = decision.node.name
        to_bind = volumes.find_pod_volumes(decision.node)[1] \
            if volumes is not None and volumes.to_bind else None
        self.cache.assume(pod, node_name)
        self.unschedulable.remove(key)
        if to_bind:
            try:
                await bind_pod_volumes(self.manager.client, self.manager.cache.get,
                                       self.volume_changes, pod, node_name, to_bind)
            except (VolumeBindingError, ApiError) as exc:
                # handleBindingCycleError: the assumption undone, the pod back in the queue
                self.cache.forget(key)
                self.metrics.attempt(ERROR)
                self.unschedulable.add(key, HELPED_BY_VOLUMES)
                message = f'running PreBind plugin "{VOLUME_BINDING}": {exc}'
                self._recorder().warning(pod, "FailedScheduling", message,
                                         action="Scheduling")
                await self._mark_unschedulable(pod, message, reason="SchedulerError")
                return Result(requeue_after=self.unschedulable.backoff_left(key))
        try:
            await self._bind(pod, node_name)
        except (NotFoundError, ConflictError) as exc:
            # deleted, or bound meanwhile: nothing left to do for this pod
            self.cache.forget(key)
            self.metrics.attempt(ERROR)
            log.info("binding of %s to %s rejected: %s", key, node_name, exc)
            return Result()
        except Exception:
            self.cache.forget(key)
            self.metrics.attempt(ERROR)
            raise
        self.metrics.attempt(SCHEDULED)
        metadata = pod.get("metadata") or {}
        self._recorder().normal(
            pod, "Scheduled", f"Successfully assigned {metadata.get('namespace')}/"
            f"{metadata.get('name')} to {node_name}", action="Binding")
        return Result()

    async def _bind(self, pod: Obj, node_name: str) -> None:
        metadata = pod.get("metadata") or {}
        namespace, name = metadata.get("namespace"), metadata.get("name")
        body = {"apiVersion": "v1", "kind": "Binding",
                "metadata": {"name": name, "namespace": namespace, "uid": metadata.get("uid")},
                "target": {"apiVersion": "v1", "kind": "Node", "name": node_name}}
        await self.manager.client.request(
            "POST", f"/api/v1/namespaces/{namespace}/pods/{name}/binding", body=body)

    async def _mark_unschedulable(self, pod: Obj, message: str,
                                  reason: str = "Unschedulable") -> None:
        """``PodScheduled=False`` with ``reason`` (handleSchedulingFailure: Unschedulable
        for a FitError, SchedulerError for any other failure) unless it already says so."""
        conditions = (pod.get("status") or {}).get("conditions") or ()
        current = next((c for c in conditions if c.get("type") == "PodScheduled"), None)
        if current is not None and current.get("status") == "False" and \
                current.get("reason") == reason and current.get("message") == message:
            return
        transition = current.get("lastTransitionTime") if current is not None and \
            current.get("status") == "False" else meta_time()
        condition = {"type": "PodScheduled", "status": "False", "lastProbeTime": None,
                     "lastTransitionTime": transition, "reason": reason,
                     "message": message}
        metadata = pod.get("metadata") or {}
        with contextlib.suppress(NotFoundError):
            await self.manager.client.patch_status(
                POD, str(metadata.get("name")), {"status": {"conditions": [condition]}},
                patch_type=PatchType.STRATEGIC, namespace=metadata.get("namespace"))

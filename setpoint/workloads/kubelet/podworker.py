"""The pod workers: the kubelet of every simulated node, as one reconciler of Pods.

A pod is taken on once it is bound (``spec.nodeName``) to a node this process simulates and
that node's kubelet is alive (its Ready condition, when it has one, is True). Each sync reads
the pod from the shared cache, drives its containers through the runtime (see
:mod:`~setpoint.workloads.kubelet.lifecycle`), generates the status the real kubelet would
report (:mod:`~setpoint.workloads.kubelet.podstatus`) and writes it through ``pods/status``
only when it differs, as the kubelet's status manager does. Everything that happened since
the last write goes out in one merge patch, so a plain pod costs one status write from
Pending to Running and Ready. A sync is requeued for the next thing due (a readiness delay,
a restart back-off); containers that exit on their own wake their pod through the runtime's
exit listener.

Deletion follows the kubelet: a pod with a ``deletionTimestamp`` has its containers stopped
within its grace period (capped, see :class:`KubeletOptions`), its terminal status written,
and is then deleted for good with ``gracePeriodSeconds=0`` and its uid as a precondition.
A terminal pod being deleted is deleted at once.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from setpoint.client import ConflictError, Kind, NotFoundError
from setpoint.machinery.objects import Obj
from setpoint.runtime import Request, Result
from setpoint.runtime._objects import meta, object_key
from setpoint.workloads.kubelet import annotations as ann
from setpoint.workloads.kubelet import lifecycle, resize
from setpoint.workloads.kubelet.addresses import AddressAllocator, AddressesExhausted
from setpoint.workloads.kubelet.events import KubeletEvents
from setpoint.workloads.kubelet.images import ImageManager
from setpoint.workloads.kubelet.options import KubeletOptions
from setpoint.workloads.kubelet.podstatus import TERMINAL_PHASES, pod_status
from setpoint.workloads.kubelet.record import ContainerRecord, PodRecord
from setpoint.workloads.kubelet.runtime import (
    ContainerRuntime,
    ContainerState,
    ContainerStatus,
    SandboxConfig,
)
from setpoint.workloads.kubelet.volumemounts import mount_failures, retry_after
from setpoint.workloads.nodes import GONE as NODE_GONE
from setpoint.workloads.nodes import READY_ANNOTATION as NODE_READY_ANNOTATION

if TYPE_CHECKING:
    from setpoint.runtime import Manager

log = logging.getLogger("setpoint.workloads.kubelet")

POD = Kind("v1", "Pod")
NODE = Kind("v1", "Node")
NODE_INDEX = "kubelet.spec.nodeName"
CONTROLLER_NAME = "kubelet"
EPSILON = 0.001  # "at once" for a requeue (0 means no requeue)
RESIZE_RETRY = 1.0  # how soon a deferred resize is tried again (seconds)


def index_by_node(pod: Obj) -> Iterable[str]:
    node = (pod.get("spec") or {}).get("nodeName")
    return (node,) if node else ()


def node_alive(node: Obj) -> bool:
    """Whether the node's kubelet is up: not stopped by the node fault
    (``sim.setpoint.dev/ready: unknown``), and its Ready condition, if any, is True."""
    if (meta(node).get("annotations") or {}).get(NODE_READY_ANNOTATION) == NODE_GONE:
        return False
    for cond in (node.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "Ready":
            return bool(cond.get("status") == "True")
    return True


def internal_ip(node: Obj) -> str | None:
    for address in (node.get("status") or {}).get("addresses") or ():
        if address.get("type") == "InternalIP" and address.get("address"):
            return str(address["address"])
    return None


def _parse_time(value: Any) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


class PodWorkers:
    """The kubelets of all simulated nodes (a low-level reconciler of Pods: it also hears
    of pods that are gone, to free what they held)."""

    def __init__(self, manager: Manager, runtime: ContainerRuntime, opts: KubeletOptions,
                 events: KubeletEvents, clock: Callable[[], float] = time.time) -> None:
        self.manager = manager
        self.runtime = runtime
        self.opts = opts
        self.events = events
        self.clock = clock
        self.addresses = AddressAllocator()
        self.images = ImageManager()
        self.records: dict[tuple[str, str], PodRecord] = {}
        self._by_uid: dict[str, tuple[str, str]] = {}
        self._listeners: list[Callable[[], None]] = []
        runtime.on_exit(self._on_exit)
        runtime.on_event(self._on_runtime_event)

    def __repr__(self) -> str:
        return f"PodWorkers(pods={len(self.records)}, runtime={self.runtime.name})"

    def on_change(self, listener: Callable[[], None]) -> None:
        """Call ``listener()`` whenever a pod starts or stops running (metrics use it)."""
        self._listeners.append(listener)

    # -- wiring ------------------------------------------------------------------------

    def pods_on_node(self, node: Obj) -> list[Request]:
        """Requests for every pod bound to ``node`` (when the node changes)."""
        store = self.manager.cache.store_for(POD)
        name = str(meta(node).get("name") or "")
        return [Request(str(meta(p).get("namespace") or ""), str(meta(p).get("name") or ""))
                for p in store.by_index(NODE_INDEX, name)]

    def _on_exit(self, pod_uid: str) -> None:
        key = self._by_uid.get(pod_uid)
        if key is None:
            return
        for rc in self.manager.running_controllers:
            if rc.name == CONTROLLER_NAME:
                rc.enqueue(Request(*key))

    def _on_runtime_event(self, pod_uid: str, type_: str, reason: str, message: str) -> None:
        key = self._by_uid.get(pod_uid)
        pod = self.manager.cache.store_for(POD).get(object_key(*key)) if key else None
        if pod is None:
            return
        if type_ == "Warning":
            self.events.warning(pod, reason, message)
        else:
            self.events.normal(pod, reason, message)

    def _changed(self) -> None:
        for listener in self._listeners:
            listener()

    # -- the sync ----------------------------------------------------------------------

    async def reconcile(self, request: Request) -> Result:
        key = (request.namespace, request.name)
        cache = self.manager.cache
        pod = cache.store_for(POD).get(object_key(request.namespace, request.name))
        record = self.records.get(key)
        if record is not None and (pod is None or meta(pod).get("uid") != record.uid):
            await self._forget(record)
            record = None
        if pod is None:
            return Result()
        node_name = (pod.get("spec") or {}).get("nodeName")
        if not node_name:
            return Result()
        node = cache.store_for(NODE).get(str(node_name))
        if node is None or not node_alive(node):
            if record is not None and self.runtime.runs_processes and \
                    record.sandbox_id is not None:
                # a node that stops takes its processes with it
                await self.runtime.stop_pod_sandbox(record.sandbox_id)
            return Result()
        phase = (pod.get("status") or {}).get("phase")
        deleting = bool(meta(pod).get("deletionTimestamp"))
        if record is None:
            if phase in TERMINAL_PHASES:
                if deleting:
                    await self._delete(pod)
                return Result()
            record = await self._accept(pod, node)
        return await self._sync(pod, record, deleting)

    async def _sync(self, pod: Obj, record: PodRecord, deleting: bool) -> Result:
        runtime, opts = self.runtime, self.opts
        now = self.clock()
        await lifecycle.refresh(runtime, record)
        if deleting and not record.terminating and not record.terminal:
            for name in await lifecycle.begin_termination(runtime, pod, record, opts):
                self.events.normal(pod, "Killing", f"Stopping container {name}")
            await lifecycle.refresh(runtime, record)
        if not record.terminating and not record.terminal:
            await self._faults(pod, record, now)
        mount_wait = None
        if not record.volumes_ready and not record.terminating and not record.terminal:
            mount_wait = self._set_up_volumes(pod, record)
        if mount_wait is None and not record.terminating and not record.terminal \
                and record.failure is None:
            record.add_ephemeral((pod.get("spec") or {}).get("ephemeralContainers"))
            if not await self._ensure_sandbox(pod, record):
                return Result(requeue_after=5.0)
            starter = lifecycle.Starter(runtime, self.images, opts,
                                        functools.partial(self._container_event, pod))
            for name in await lifecycle.sync_containers(runtime, pod, record, now, opts,
                                                        starter):
                self.events.warning(pod, "BackOff", f"Back-off restarting failed container "
                                    f"{name} in pod {record.name}_{record.namespace}"
                                    f"({record.uid})")
            node = self.manager.cache.store_for(NODE).get(record.node)
            if node is not None:
                # the node's other pods are read only to decide a resize: lazily, as a
                # list of them per sync is a scan of every pod of the process per pod
                others = (r for r in self.records.values()
                          if r.node == record.node and r.uid != record.uid and not r.terminal)
                resize.sync_resize(pod, record, node, others)
        await lifecycle.finish_if_done(runtime, pod, record)
        now = self.clock()  # what just started must count as started
        status, changes_at = pod_status(pod, record, now=now, opts=opts)
        body = {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": record.name, "namespace": record.namespace},
                "status": status}
        try:
            await self.manager.writer.update_status(body)
        except NotFoundError:
            await self._forget(record)
            return Result()
        runtime.update_pod(record.uid, {**pod, "status": status})
        backing_off = False
        for cr in record.all_containers():
            if cr.exited and not cr.exit_published:
                cr.exit_published = True
                # the written status shows the exit; a back-off is then shown as waiting,
                # and a restart not planned yet (the container failed as it was created,
                # within this sync) is planned by the next sync
                backing_off |= cr.restart_at is None or cr.restart_at > now
        self._changed()
        if record.restart_handled:
            await self._ack_restart(pod, record)
        if record.terminal:
            await self._release(record)
            if deleting:
                await self._delete(pod)
                await self._forget(record)
            return Result()
        if backing_off or record.resize == resize.IN_PROGRESS:
            return Result(requeue_after=EPSILON)
        if mount_wait is not None:
            return Result(requeue_after=mount_wait)
        due = self._next_due(record, changes_at, now)
        if any(cr.start_error for cr in record.all_containers()):
            # a failed SyncPod is retried after the pod workers' back-off
            # (pkg/kubelet/pod_workers.go completeWork: backOffPeriod, 10 s)
            retry = self.opts.start_retry
            due = min(due, retry) if due is not None else retry
        if record.resize == resize.DEFERRED:  # retried until the node has room
            due = min(due or RESIZE_RETRY, RESIZE_RETRY)
        return Result(requeue_after=due)

    def _set_up_volumes(self, pod: Obj, record: PodRecord) -> float | None:
        """One attempt at the pod's volumes (the process runtime mounts its own, for real):
        None once they are set up, else when to try again, each failure reported."""
        if self.runtime.runs_processes:
            record.volumes_ready = True
            return None
        failures, waiting = mount_failures(pod, self._read_cached)
        if not waiting:
            record.volumes_ready = True
            return None
        record.mount_attempts += 1
        for message in failures:
            self.events.warning(pod, "FailedMount", message)
        return retry_after(record.mount_attempts)

    def _read_cached(self, kind: Kind, name: str, namespace: str | None) -> Obj | None:
        """The cached object itself, read and not changed (a volume's check reads a few
        fields: ``Cache.get``'s copy of every pod's ``kube-root-ca.crt`` cost more)."""
        found: Obj | None = self.manager.cache.store_for(kind).get(object_key(namespace, name))
        return found

    def _next_due(self, record: PodRecord, changes_at: float | None,
                  now: float) -> float | None:
        due = [t for t in (changes_at,) if t is not None]
        due += [cr.restart_at for cr in record.all_containers() if cr.restart_at is not None]
        deadline = self._deadline(record)
        if deadline is not None:
            due.append(deadline)
        if not due:
            return None
        return max(EPSILON, min(due) - now + EPSILON)

    # -- accepting and forgetting pods -------------------------------------------------

    async def _accept(self, pod: Obj, node: Obj) -> PodRecord:
        """Take the pod on: a new record, or one rebuilt from the pod's status when a
        previous kubelet already ran it (its containers are taken back from the runtime)."""
        m, spec = meta(pod), pod.get("spec") or {}
        node_name = str(meta(node).get("name"))
        pod_cidr = (node.get("spec") or {}).get("podCIDR")
        status = pod.get("status") or {}
        host_ip = internal_ip(node) or self.addresses.bridge_address(node_name, pod_cidr)
        record = PodRecord(
            uid=str(m.get("uid")), namespace=str(m.get("namespace") or ""),
            name=str(m.get("name")), node=node_name,
            start_time=_parse_time(status.get("startTime")) or self.clock(), host_ip=host_ip)
        record.init = [ContainerRecord(str(c.get("name")), c, init=True)
                       for c in spec.get("initContainers") or ()]
        record.containers = [ContainerRecord(str(c.get("name")), c)
                             for c in spec.get("containers") or ()]
        record.add_ephemeral(spec.get("ephemeralContainers"))
        self.records[record.key] = record
        self._by_uid[record.uid] = record.key
        if status.get("podIP") and any(cs.get("containerID") for cs in [
                *(status.get("containerStatuses") or ()),
                *(status.get("initContainerStatuses") or ())]):
            await self._adopt(pod, record, pod_cidr)
        return record

    async def _adopt(self, pod: Obj, record: PodRecord, pod_cidr: str | None) -> None:
        status = pod.get("status") or {}
        record.ip = str(status.get("podIP"))
        if not (pod.get("spec") or {}).get("hostNetwork"):
            self.addresses.reserve(record.node, record.uid, record.ip, pod_cidr)
        record.sandbox_id = await self.runtime.restore_pod_sandbox(self._sandbox(pod, record))
        api = {cs.get("name"): cs for cs in [*(status.get("initContainerStatuses") or ()),
                                             *(status.get("containerStatuses") or ()),
                                             *(status.get("ephemeralContainerStatuses") or ())]}
        now = self.clock()
        for cr in record.all_containers():
            cs = api.get(cr.name)
            if cs is None or not cs.get("containerID"):
                continue
            cr.restart_count = int(cs.get("restartCount") or 0)
            cr.last_terminated = (cs.get("lastState") or {}).get("terminated")
            cr.exit_published = True
            state = cs.get("state") or {}
            cr.container_id = None
            if "terminated" in state:
                cr.status = _frozen(cr, cs, state["terminated"], now)
                continue
            # the node kept the images its containers run from
            self.images.mark_present(record.node, str(cr.spec.get("image", "")),
                                     str(cs.get("imageID") or ""))
            started = _parse_time((state.get("running") or {}).get("startedAt")) or now
            config = lifecycle.container_config(pod, cr, self.opts)
            container_id = str(cs["containerID"])
            if record.sandbox_id is not None and await self.runtime.restore_container(
                    record.sandbox_id, config, container_id, started):
                cr.container_id = container_id
            else:
                # the runtime lost it: reported as exited 137 and restarted as a crash
                cr.status = replace(lifecycle.unknown_status(cr, now), id=container_id)
                cr.exit_published = False

    async def _forget(self, record: PodRecord) -> None:
        """The pod is gone: tear its sandbox down and free its address."""
        self.records.pop(record.key, None)
        self._by_uid.pop(record.uid, None)
        await self._release(record)
        if record.sandbox_id is not None:
            await self.runtime.remove_pod_sandbox(record.sandbox_id)
            record.sandbox_id = None
        self._changed()

    async def _release(self, record: PodRecord) -> None:
        if record.sandbox_id is not None:
            await self.runtime.stop_pod_sandbox(record.sandbox_id)
        self.addresses.release(record.uid)

    def _sandbox(self, pod: Obj, record: PodRecord) -> SandboxConfig:
        host_network = bool((pod.get("spec") or {}).get("hostNetwork"))
        return SandboxConfig(pod_uid=record.uid, namespace=record.namespace,
                             name=record.name, node=record.node, ip=record.ip,
                             host_network=host_network, pod=pod)

    async def _ensure_sandbox(self, pod: Obj, record: PodRecord) -> bool:
        if record.sandbox_id is not None:
            return True
        if (pod.get("spec") or {}).get("hostNetwork"):
            record.ip = record.host_ip
        else:
            node = self.manager.cache.store_for(NODE).get(record.node) or {}
            try:
                record.ip = self.addresses.allocate(
                    record.node, record.uid, (node.get("spec") or {}).get("podCIDR"))
            except AddressesExhausted as exc:
                self.events.warning(pod, "FailedCreatePodSandBox",
                                    f"Failed to create pod sandbox: {exc}")
                return False
        record.sandbox_id = await self.runtime.run_pod_sandbox(self._sandbox(pod, record))
        record.fallback = self.runtime.fallback_reason(record.sandbox_id)
        if record.fallback is not None:
            self.events.warning(pod, record.fallback[0], record.fallback[1])
        return True

    # -- faults and deadlines ----------------------------------------------------------

    def _deadline(self, record: PodRecord) -> float | None:
        pod = self.manager.cache.store_for(POD).get(object_key(record.namespace, record.name))
        seconds = ((pod or {}).get("spec") or {}).get("activeDeadlineSeconds")
        return record.start_time + float(seconds) if seconds else None

    async def _faults(self, pod: Obj, record: PodRecord, now: float) -> None:
        """Carry out what the pod's fault annotations ask, and its active deadline."""
        annotations = ann.annotations_of(pod)
        if record.failure is None and ann.FAIL in annotations:
            reason = annotations[ann.FAIL].strip() or "SimulatedFailure"
            message = annotations.get(ann.FAIL_MESSAGE) or "The pod was failed by a " \
                "simulated fault."
            await lifecycle.fail(self.runtime, record, reason, message)
            self.events.warning(pod, reason, message)
            return
        deadline = self._deadline(record)
        if record.failure is None and deadline is not None and now >= deadline:
            message = "Pod was active on the node longer than the specified deadline"
            await lifecycle.fail(self.runtime, record, "DeadlineExceeded", message)
            self.events.warning(pod, "DeadlineExceeded", message)
            return
        names = ann.restart_request(pod)
        if names is not None and not record.restart_handled:
            for name in await lifecycle.kill_for_restart(self.runtime, record, names):
                self.events.normal(pod, "Killing",
                                   f"Container {name} was killed by a simulated fault, "
                                   "will be restarted")
            record.restart_handled = True
        for name in lifecycle.apply_pause(self.runtime, record, ann.pause_request(pod),
                                          record.paused):
            self.events.warning(pod, "Paused", f"Container {name} was stopped (SIGSTOP) by "
                                               "a simulated hang")

    async def _ack_restart(self, pod: Obj, record: PodRecord) -> None:
        """Remove the carried-out restart request (once its effect is written)."""
        try:
            result = await self.manager.client.patch(
                POD, record.name, {"metadata": {
                    "annotations": {ann.RESTART: None}}},
                namespace=record.namespace)
        except (NotFoundError, ConflictError):
            return
        record.restart_handled = False
        self.manager.writer.record(result)

    # -- events and deletion -----------------------------------------------------------

    def _container_event(self, pod: Obj, cr: ContainerRecord, type_: str, reason: str,
                         message: str) -> None:
        """An event of a container's start; the Normal ones (Pulling, Pulled, Created,
        Started) only with ``lifecycle_events`` (scale benchmarks turn them off)."""
        if type_ == "Normal" and not self.opts.lifecycle_events:
            return
        self.events.about_container(pod, cr.field_path, type_, reason, message)

    async def _delete(self, pod: Obj) -> None:
        """Delete the pod for good, as the status manager does once it has stopped."""
        m = meta(pod)
        with contextlib.suppress(NotFoundError, ConflictError):
            await self.manager.client.delete(POD, str(m.get("name")),
                                             namespace=str(m.get("namespace")),
                                             grace_period_seconds=0, uid=str(m.get("uid")))


def _frozen(cr: ContainerRecord, api: Obj, terminated: Obj, now: float) -> ContainerStatus:
    """A runtime status standing for a terminated container the API reported."""
    finished = _parse_time(terminated.get("finishedAt")) or now
    return ContainerStatus(
        id=str(terminated.get("containerID") or api.get("containerID") or ""), name=cr.name,
        image=str(api.get("image") or cr.spec.get("image", "")),
        image_ref=str(api.get("imageID") or ""), state=ContainerState.EXITED,
        created_at=finished, started_at=_parse_time(terminated.get("startedAt")) or finished,
        finished_at=finished, exit_code=int(terminated.get("exitCode") or 0),
        reason=str(terminated.get("reason") or ""), message=str(terminated.get("message") or ""))

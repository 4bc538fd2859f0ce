"""Driving one pod's containers through the runtime: start, order, restart, stop.

These are the kubelet's ``SyncPod``/``SyncTerminatingPod`` decisions for the simulation:
init containers run one at a time in spec order (sidecars, init containers with
``restartPolicy: Always``, only need to have started), then the regular containers start
together; exited containers restart by the pod's restart policy with the kubelet's
CrashLoopBackOff; a pod being deleted has its containers stopped within the grace period.
Each function only changes the :class:`PodRecord` and the runtime; the pod worker turns the
record into a status.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from setpoint.workloads.kubelet import annotations as ann
from setpoint.workloads.kubelet import probes
from setpoint.workloads.kubelet.images import NORMAL, ImageManager, ImageNeverPull
from setpoint.workloads.kubelet.options import KubeletOptions
from setpoint.workloads.kubelet.podstatus import terminated_state
from setpoint.workloads.kubelet.record import ContainerRecord, PodRecord
from setpoint.workloads.kubelet.runtime import (
    Behaviour,
    ContainerConfig,
    ContainerRuntime,
    ContainerState,
    ContainerStatus,
)


def is_job_pod(pod: Mapping[str, Any]) -> bool:
    """A pod a Job controls (kwok's pod-complete stage selects the same pods)."""
    refs = (pod.get("metadata") or {}).get("ownerReferences") or ()
    return any(ref.get("kind") == "Job" and ref.get("controller") for ref in refs)


def behaviour_for(pod: Mapping[str, Any], record: ContainerRecord,
                  opts: KubeletOptions) -> Behaviour:
    """What the simulated container does, from the pod's annotations and kind."""
    stop_after = ann.duration(pod, ann.STOP_AFTER)
    exit_code = ann.integer(pod, ann.EXIT_CODE) or 0
    if record.init and not record.sidecar:
        return Behaviour(run_for=ann.duration(pod, ann.INIT_DURATION) or 0.0,
                         stop_after=stop_after)
    if record.sidecar:
        return Behaviour(stop_after=stop_after)
    run_for = ann.duration(pod, ann.RUN_FOR)
    if run_for is None and is_job_pod(pod):
        run_for = opts.job_run_for
    return Behaviour(run_for=run_for, exit_code=exit_code, stop_after=stop_after)


def container_config(pod: Mapping[str, Any], record: ContainerRecord,
                     opts: KubeletOptions) -> ContainerConfig:
    spec = record.spec
    env = tuple((str(e.get("name")), str(e.get("value", ""))) for e in spec.get("env") or ()
                if isinstance(e, Mapping))
    ports = tuple(int(p["containerPort"]) for p in spec.get("ports") or ()
                  if isinstance(p, Mapping) and p.get("containerPort"))
    return ContainerConfig(
        name=record.name, image=str(spec.get("image", "")),
        command=tuple(spec.get("command") or ()), args=tuple(spec.get("args") or ()),
        env=env, ports=ports, behaviour=behaviour_for(pod, record, opts), spec=spec)


async def refresh(runtime: ContainerRuntime, record: PodRecord) -> None:
    """Read every known container's status from the runtime."""
    for cr in record.all_containers():
        if cr.container_id is not None:
            status = await runtime.container_status(cr.container_id)
            if status is not None:
                cr.status = status


ContainerEvent = Callable[[ContainerRecord, str, str, str], None]
"""Records ``(type, reason, message)`` about one container of the pod being synced."""


class Starter:
    """kuberuntime_container.go ``startContainer``: ensure the image (by its pull policy),
    create the container, start it; each step records its event about the container in
    that order (``Pulling``/``Pulled``, ``Created``, ``Started``)."""

    def __init__(self, runtime: ContainerRuntime, images: ImageManager, opts: KubeletOptions,
                 event: ContainerEvent) -> None:
        self.runtime, self.images, self.opts, self.event = runtime, images, opts, event

    def __repr__(self) -> str:
        return f"Starter({self.runtime.name}, {self.images!r})"

    async def __call__(self, pod: Mapping[str, Any], record: PodRecord,
                       cr: ContainerRecord) -> None:
        await start(self.runtime, pod, record, cr, self.opts, self)


async def start(runtime: ContainerRuntime, pod: Mapping[str, Any], record: PodRecord,
                cr: ContainerRecord, opts: KubeletOptions, starter: Starter) -> None:
    """Create and start a new instance of the container (its status read back). An image
    the pull policy forbids to pull leaves it waiting (``start_error``) for a later sync."""
    assert record.sandbox_id is not None
    config = container_config(pod, cr, opts)

    def event(type_: str, reason: str, message: str) -> None:
        starter.event(cr, type_, reason, message)

    try:
        await starter.images.ensure(record.node, cr.spec, runtime.pull_image, event)
    except ImageNeverPull as exc:
        # startContainer records the runtime error as Failed "Error: <its message>", and
        # the container waits with the image manager's reason and message
        event("Warning", "Failed", f"Error: {exc.reason}")
        cr.start_error = (exc.reason, str(exc))
        return
    cr.start_error = None
    container_id = await runtime.create_container(record.sandbox_id, config)
    event(NORMAL, "Created", f"Created container: {cr.name}")
    await runtime.start_container(container_id)
    cr.container_id = container_id
    cr.status = await runtime.container_status(container_id)
    if cr.status is None or cr.status.reason != "StartError":
        # a start the runtime refused is the runtime's Failed event instead
        event(NORMAL, "Started", f"Started container {cr.name}")
    cr.exit_published = False
    cr.restart_at = None
    cr.waiting_message = None


def _should_restart(policy: str, cr: ContainerRecord) -> bool:
    if cr.sidecar:
        return True
    if cr.status is None or cr.status.state is not ContainerState.EXITED:
        return False
    if policy == "Always":
        return True
    return policy == "OnFailure" and cr.status.exit_code != 0


def _plan_restart(pod: Mapping[str, Any], cr: ContainerRecord, now: float,
                  opts: KubeletOptions, immediate: bool) -> float:
    """Decide when an exited container restarts (the kubelet's back-off); returns the
    delay. The first restart is immediate, later ones wait 10s, 20s, … up to 5 minutes,
    and a container that ran for 10 minutes starts over."""
    st = cr.status
    ran = (st.finished_at or now) - (st.started_at or now) if st is not None else 0.0
    if ran >= opts.backoff_reset:
        cr.backoff = 0.0
    delay = 0.0 if immediate else cr.backoff
    if not immediate:
        cr.backoff = opts.backoff_base if cr.backoff == 0 else min(cr.backoff * 2,
                                                                   opts.backoff_cap)
    cr.restart_at = now + delay
    if delay > 0:
        m = pod.get("metadata") or {}
        cr.waiting_message = (f"back-off {_go_seconds(delay)} restarting failed container="
                              f"{cr.name} pod={m.get('name')}_{m.get('namespace')}"
                              f"({m.get('uid')})")
    return delay


def _go_seconds(delay: float) -> str:
    seconds = int(delay)
    if seconds >= 60:
        minutes, rest = divmod(seconds, 60)
        return f"{minutes}m{rest}s" if rest else f"{minutes}m0s"
    return f"{seconds}s"


async def _restart_due(runtime: ContainerRuntime, pod: Mapping[str, Any], record: PodRecord,
                       cr: ContainerRecord, now: float, opts: KubeletOptions,
                       starter: Starter) -> tuple[bool, str | None]:
    """Restart ``cr`` if its time has come; returns (restarted, the container's name when
    a back-off just began)."""
    backoff_began = None
    if cr.restart_at is None:
        delay = _plan_restart(pod, cr, now, opts, cr.restart_now)
        cr.restart_now = False
        if delay > 0:
            backoff_began = cr.name
    if not cr.exit_published or cr.restart_at is None or cr.restart_at > now:
        return False, backoff_began
    cr.last_terminated = terminated_state(cr)
    cr.restart_count += 1
    if cr.container_id is not None:
        await runtime.remove_container(cr.container_id)
    await starter(pod, record, cr)
    return True, backoff_began


async def sync_containers(runtime: ContainerRuntime, pod: Mapping[str, Any],
                          record: PodRecord, now: float, opts: KubeletOptions,
                          starter: Starter) -> list[str]:
    """Start what should run and restart what should restart; returns the names of the
    containers that just entered CrashLoopBackOff."""
    policy = (pod.get("spec") or {}).get("restartPolicy") or "Always"
    notes: list[str] = []
    # computePodActions (kuberuntime_manager.go): an ephemeral container is started once,
    # even before initialization completes, and never restarted
    for cr in record.ephemeral:
        if cr.status is None:
            await starter(pod, record, cr)
    initialized = True
    for cr in record.init:
        if cr.status is None:
            await starter(pod, record, cr)
        if cr.sidecar:
            if cr.exited:
                _, note = await _restart_due(runtime, pod, record, cr, now, opts,
                                               starter)
                if note:
                    notes.append(note)
            st = cr.status
            if st is None or st.state is not ContainerState.RUNNING or st.started_at is None \
                    or now < st.started_at + probes.startup_delay(pod, cr.spec, opts):
                initialized = False
                break
            continue
        if cr.succeeded:
            continue
        if cr.exited and policy != "Never":
            _, note = await _restart_due(runtime, pod, record, cr, now, opts,
                                               starter)
            if note:
                notes.append(note)
        initialized = False
        break
    if not initialized:
        return notes
    for cr in record.containers:
        if cr.status is None:
            await starter(pod, record, cr)
        elif cr.exited and _should_restart(policy, cr):
            _, note = await _restart_due(runtime, pod, record, cr, now, opts,
                                               starter)
            if note:
                notes.append(note)
    return notes


def init_failed(pod: Mapping[str, Any], record: PodRecord) -> bool:
    """A regular init container failed and the policy forbids retrying it."""
    policy = (pod.get("spec") or {}).get("restartPolicy") or "Always"
    return policy == "Never" and any(
        cr.exited and not cr.succeeded for cr in record.init if not cr.sidecar)


async def finish_if_done(runtime: ContainerRuntime, pod: Mapping[str, Any],
                         record: PodRecord) -> None:
    """Mark the pod terminal when nothing in it will run again: its regular containers
    are done for good (sidecars are then stopped), or an init container failed for
    good, or its containers stopped after a deletion or a failure."""
    if record.terminal:
        return
    if record.terminating or record.failure is not None or init_failed(pod, record):
        if all(cr.status is None or cr.exited for cr in record.all_containers()):
            record.terminal = True
        return
    if record.regular_done((pod.get("spec") or {}).get("restartPolicy") or "Always"):
        # the pod's end stops its sidecars and its ephemeral containers
        sidecars = [*(cr for cr in record.init if cr.sidecar), *record.ephemeral]
        for cr in sidecars:
            if cr.running and cr.container_id is not None:
                await runtime.stop_container(cr.container_id, 0.0)
        await refresh(runtime, record)
        if all(not cr.running for cr in sidecars):
            record.terminal = True


def grace_period(pod: Mapping[str, Any], opts: KubeletOptions, exact: bool = False) -> float:
    """The stop timeout: the pod's grace period, capped unless the pod asks for exact
    timing, says how long its containers take to stop, or runs real programs (``exact``)."""
    m = pod.get("metadata") or {}
    grace = m.get("deletionGracePeriodSeconds")
    if grace is None:
        grace = (pod.get("spec") or {}).get("terminationGracePeriodSeconds", 30)
    seconds = float(grace or 0)
    if exact or ann.flag(pod, ann.EXACT_TIMING) is True or \
            ann.duration(pod, ann.STOP_AFTER) is not None:
        return seconds
    return min(seconds, opts.grace_cap)


async def begin_termination(runtime: ContainerRuntime, pod: Mapping[str, Any],
                            record: PodRecord, opts: KubeletOptions) -> list[str]:
    """Ask every running container to stop (SIGTERM, SIGKILL at the grace period);
    returns the names of the containers asked."""
    record.terminating = True
    timeout = grace_period(pod, opts, exact=runtime.runs_processes)
    stopped = []
    for cr in record.all_containers():
        if cr.container_id is not None and not cr.exited:
            await runtime.stop_container(cr.container_id, timeout)
            stopped.append(cr.name)
        cr.restart_at = None
    return stopped


async def fail(runtime: ContainerRuntime, record: PodRecord, reason: str,
               message: str) -> list[str]:
    """Fail the pod: kill its containers at once; returns the names killed."""
    record.failure = (reason, message)
    killed = []
    for cr in record.all_containers():
        if cr.container_id is not None and not cr.exited:
            await runtime.kill_container(cr.container_id)
            killed.append(cr.name)
        cr.restart_at = None
    await refresh(runtime, record)
    return killed


async def kill_for_restart(runtime: ContainerRuntime, record: PodRecord,
                           names: set[str]) -> list[str]:
    """The restart fault: kill the running containers named (``*``: all); the kubelet then
    restarts them at once. Returns the names killed."""
    killed = []
    for cr in [*record.init, *record.containers]:
        if cr.init and not cr.sidecar:
            continue
        if ("*" in names or cr.name in names) and cr.running and cr.container_id is not None:
            await runtime.kill_container(cr.container_id)
            cr.restart_now = True
            killed.append(cr.name)
    await refresh(runtime, record)
    return killed


def apply_pause(runtime: ContainerRuntime, record: PodRecord, names: set[str],
                paused: set[str]) -> list[str]:
    """The pause fault: stop the running containers named (``*``: all) and continue those
    no longer named. ``paused`` holds the container ids stopped so far (updated); returns
    the names newly stopped. Only a runtime with processes (``pause_container``) can."""
    pause = getattr(runtime, "pause_container", None)
    if pause is None:
        return []
    stopped = []
    for cr in [*record.init, *record.containers]:
        if cr.container_id is None or not cr.running:
            continue
        wanted = "*" in names or cr.name in names
        if wanted and cr.container_id not in paused and pause(cr.container_id, True):
            paused.add(cr.container_id)
            stopped.append(cr.name)
        elif not wanted and cr.container_id in paused:
            pause(cr.container_id, False)
            paused.discard(cr.container_id)
    return stopped


def unknown_status(cr: ContainerRecord, now: float) -> ContainerStatus:
    """The status of a container the runtime lost (a kubelet restart with a runtime whose
    processes died): exited, 137, as the kubelet reports a container it cannot locate."""
    return ContainerStatus(id=cr.container_id or "", name=cr.name,
                           image=str(cr.spec.get("image", "")), image_ref="",
                           state=ContainerState.EXITED, created_at=now, started_at=now,
                           finished_at=now, exit_code=137, reason="ContainerStatusUnknown",
                           message="The container could not be located when the pod was "
                                   "terminated")

"""The pod status the kubelet reports, generated as the real kubelet generates it.

This is the simulated counterpart of the kubelet's ``generateAPIPodStatus`` with
``convertToAPIContainerStatuses``, ``getPhase`` and the status package's condition
generators (pkg/kubelet/kubelet_pods.go, pkg/kubelet/status/generate.go, v1.32): the same
fields, condition types in the same order (PodReadyToStartContainers, Initialized, Ready,
ContainersReady, PodScheduled, after any condition the kubelet does not own), the same
reasons and messages, container statuses sorted by name (init containers in spec order),
``lastTransitionTime`` kept while a condition's status does not change, and ``lastProbeTime``
null, as the API returns a Go zero time (so a status that did not change compares equal).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from setpoint.machinery.gofmt import format_v
from setpoint.machinery.metatime import meta_time
from setpoint.machinery.objects import Obj
from setpoint.workloads.kubelet import probes, resize
from setpoint.workloads.kubelet.options import KubeletOptions
from setpoint.workloads.kubelet.record import ContainerRecord, PodRecord
from setpoint.workloads.kubelet.runtime import ContainerState, normalize_image

KUBELET_CONDITIONS = ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady",
                      "PodScheduled")
TERMINAL_PHASES = ("Succeeded", "Failed")
FALLBACK_CONDITION = "sim.setpoint.dev/ProcessRuntime"
"""False, with the reason, on a pod the process runtime runs simulated (an image it cannot
run); a condition type the kubelet does not own, so it is kept as written."""


def _volume_mounts(spec: Mapping[str, Any]) -> list[Obj]:
    out = []
    for mount in spec.get("volumeMounts") or ():
        entry: Obj = {"name": mount.get("name"), "mountPath": mount.get("mountPath")}
        if mount.get("readOnly"):
            entry["readOnly"] = True
            # a runtime without recursive read-only support resolves every mode to Disabled
            entry["recursiveReadOnly"] = "Disabled"
        out.append(entry)
    return out


def terminated_state(record: ContainerRecord) -> Obj:
    """The API ``terminated`` state of the record's exited instance."""
    st = record.status
    assert st is not None and st.finished_at is not None
    state: Obj = {"exitCode": st.exit_code or 0, "reason": st.reason,
                  "startedAt": meta_time(st.started_at or st.finished_at),
                  "finishedAt": meta_time(st.finished_at), "containerID": st.id}
    if st.message:
        state["message"] = st.message
    return state


def container_status(pod: Mapping[str, Any], record: ContainerRecord, *, has_init: bool,
                     now: float, opts: KubeletOptions) -> tuple[Obj, float | None]:
    """One ``ContainerStatus`` and when it will change by itself (readiness), if it will."""
    spec = record.spec
    out: Obj = {"name": record.name, "state": {}, "lastState": {}, "ready": False,
                "restartCount": record.restart_count, "image": spec.get("image", ""),
                "imageID": "", "started": False}
    if record.last_terminated:
        out["lastState"] = {"terminated": record.last_terminated}
    mounts = _volume_mounts(spec)
    if mounts:
        out["volumeMounts"] = mounts
    st = record.status
    if st is None:
        if record.start_error is not None:
            # convertToAPIContainerStatuses: a container whose start failed waits with the
            # reason cache's error (kuberuntime_container.go startContainer's message)
            reason, message = record.start_error
            out["state"] = {"waiting": {"reason": reason, "message": message}}
            return out, None
        reason = "PodInitializing" if has_init else "ContainerCreating"
        out["state"] = {"waiting": {"reason": reason}}
        return out, None
    out["image"] = normalize_image(st.image)
    out["imageID"] = st.image_ref
    out["containerID"] = st.id
    changes_at: float | None = None
    if st.state is ContainerState.RUNNING and st.started_at is not None:
        out["state"] = {"running": {"startedAt": meta_time(st.started_at)}}
        if not record.ephemeral and (not record.init or record.sidecar):
            # convertContainerStatusResources: a resizable running container's allocation
            out["resources"] = resize.status_resources(record)
        started_at = st.started_at + probes.startup_delay(pod, spec, opts)
        ready_at = st.started_at + probes.readiness_delay(pod, spec, opts)
        out["started"] = now >= started_at if st.started is None else st.started
        regular_init = record.init and not record.sidecar
        ready_now = now >= ready_at if st.ready is None else st.ready
        out["ready"] = bool(not regular_init and ready_now and not probes.held_unready(pod))
        pending = [t for t in (started_at, ready_at) if t > now and st.ready is None]
        if pending and not regular_init:
            changes_at = min(pending)
    elif st.state is ContainerState.EXITED:
        terminated = terminated_state(record)
        if record.exit_published and record.restart_at is not None and record.restart_at > now:
            out["state"] = {"waiting": {"reason": "CrashLoopBackOff",
                                        "message": record.waiting_message or ""}}
            out["lastState"] = {"terminated": terminated}
        elif st.reason == "StartError" and _restarts(pod, record):
            # kuberuntime_container.go startContainer returns ErrRunContainer with the
            # runtime's message; convertToAPIContainerStatuses shows a container that
            # will be restarted as waiting with the reason cache's entry (the exit moves
            # to lastState); the back-off that follows shows CrashLoopBackOff
            out["state"] = {"waiting": {"reason": "RunContainerError",
                                        "message": terminated.get("message", "")}}
            out["lastState"] = {"terminated": terminated}
        else:
            out["state"] = {"terminated": terminated}
        out["ready"] = record.init and not record.sidecar and st.exit_code == 0
    else:
        out["state"] = {"waiting": {}}
    return out, changes_at


def _restarts(pod: Mapping[str, Any], record: ContainerRecord) -> bool:
    """kubecontainer.ShouldContainerBeRestarted for an exited container."""
    if record.ephemeral:
        return False
    if record.sidecar:
        return True
    policy = (pod.get("spec") or {}).get("restartPolicy") or "Always"
    code = record.status.exit_code if record.status is not None else 0
    return policy == "Always" or (policy == "OnFailure" and code != 0)


def ephemeral_container_status(pod: Mapping[str, Any], record: ContainerRecord, *,
                               has_init: bool, now: float, opts: KubeletOptions) -> Obj:
    """An ephemeral container's status: converted as any container's
    (convertToAPIContainerStatuses), but no prober looks at it (the probe manager's
    UpdatePodStatus sets ``ready`` and ``started`` for regular and init containers only),
    so it is never ready and carries no ``started``."""
    out, _ = container_status(pod, record, has_init=has_init, now=now, opts=opts)
    out["ready"] = False
    out.pop("started", None)
    return out


def _running(status: Mapping[str, Any]) -> bool:
    return "running" in (status.get("state") or {})


def _terminated(status: Mapping[str, Any]) -> Mapping[str, Any] | None:
    return (status.get("state") or {}).get("terminated")


def _waiting(status: Mapping[str, Any]) -> bool:
    return "waiting" in (status.get("state") or {})


def _last_terminated(status: Mapping[str, Any]) -> Mapping[str, Any] | None:
    return (status.get("lastState") or {}).get("terminated")


def _regular_started(spec: Mapping[str, Any], by_name: Mapping[str, Obj]) -> bool:
    for c in spec.get("containers") or ():
        st = by_name.get(c.get("name"))
        if st is not None and (_running(st) or _terminated(st) is not None):
            return True
    return False


def phase_of(spec: Mapping[str, Any], by_name: Mapping[str, Obj], terminal: bool) -> str:
    """The kubelet's ``getPhase`` over the generated container statuses."""
    pending_init = failed_init = 0
    unknown = running = waiting = stopped = succeeded = 0
    for c in spec.get("initContainers") or ():
        st = by_name.get(c.get("name"))
        sidecar = c.get("restartPolicy") == "Always"
        if st is None:
            if sidecar:
                unknown += 1
            else:
                pending_init += 1
            continue
        term, last = _terminated(st), _last_terminated(st)
        if sidecar:
            if _running(st):
                if not st.get("started"):
                    pending_init += 1
                running += 1
            elif _waiting(st) and last is None:
                pending_init += 1
                waiting += 1
            continue
        if _running(st):
            pending_init += 1
        elif term is not None:
            if term.get("exitCode"):
                failed_init += 1
        elif _waiting(st):
            if last is not None:
                if last.get("exitCode"):
                    failed_init += 1
            else:
                pending_init += 1
        else:
            pending_init += 1
    for c in spec.get("containers") or ():
        st = by_name.get(c.get("name"))
        if st is None:
            unknown += 1
            continue
        term = _terminated(st)
        if _running(st):
            running += 1
        elif term is not None:
            stopped += 1
            if not term.get("exitCode"):
                succeeded += 1
        elif _waiting(st):
            if _last_terminated(st) is not None:
                stopped += 1
            else:
                waiting += 1
        else:
            unknown += 1
    policy = spec.get("restartPolicy") or "Always"
    if failed_init and policy == "Never":
        return "Failed"
    if (pending_init and not _regular_started(spec, by_name)) or waiting:
        return "Pending"
    if running and not unknown:
        return "Running"
    if not running and stopped and not unknown:
        if terminal:
            return "Succeeded" if stopped == succeeded else "Failed"
        if policy == "Always":
            return "Running"
        if stopped == succeeded:
            return "Succeeded"
        return "Failed" if policy == "Never" else "Running"
    return "Pending"


def _initialized(spec: Mapping[str, Any], by_name: Mapping[str, Obj], phase: str) -> Obj:
    unknown, incomplete = [], []
    for c in spec.get("initContainers") or ():
        st = by_name.get(c.get("name"))
        if st is None:
            unknown.append(c.get("name"))
        elif c.get("restartPolicy") == "Always":
            if not st.get("started"):
                incomplete.append(c.get("name"))
        elif not st.get("ready"):
            incomplete.append(c.get("name"))
    if phase == "Succeeded" and not unknown:
        return {"type": "Initialized", "status": "True", "reason": "PodCompleted"}
    if _regular_started(spec, by_name):
        return {"type": "Initialized", "status": "True"}
    messages = []
    if unknown:
        messages.append(f"containers with unknown status: {format_v(unknown)}")
    if incomplete:
        messages.append(f"containers with incomplete status: {format_v(incomplete)}")
    if messages:
        return {"type": "Initialized", "status": "False", "reason": "ContainersNotInitialized",
                "message": ", ".join(messages)}
    return {"type": "Initialized", "status": "True"}


def _containers_ready(spec: Mapping[str, Any], by_name: Mapping[str, Obj], phase: str) -> Obj:
    unknown, unready = [], []
    wanted = [c for c in spec.get("initContainers") or () if c.get("restartPolicy") == "Always"]
    for c in [*wanted, *(spec.get("containers") or ())]:
        st = by_name.get(c.get("name"))
        if st is None:
            unknown.append(c.get("name"))
        elif not st.get("ready"):
            unready.append(c.get("name"))
    if phase == "Succeeded" and not unknown:
        return {"type": "ContainersReady", "status": "False", "reason": "PodCompleted"}
    if phase == "Failed":
        return {"type": "ContainersReady", "status": "False", "reason": "PodFailed"}
    messages = []
    if unknown:
        messages.append(f"containers with unknown status: {format_v(unknown)}")
    if unready:
        messages.append(f"containers with unready status: {format_v(unready)}")
    if messages:
        return {"type": "ContainersReady", "status": "False", "reason": "ContainersNotReady",
                "message": ", ".join(messages)}
    return {"type": "ContainersReady", "status": "True"}


def _ready(spec: Mapping[str, Any], conditions: list[Obj], containers_ready: Obj) -> Obj:
    if containers_ready["status"] != "True":
        return {**containers_ready, "type": "Ready"}
    messages = []
    by_type = {c.get("type"): c for c in conditions}
    for gate in spec.get("readinessGates") or ():
        ctype = gate.get("conditionType")
        cond = by_type.get(ctype)
        if cond is None:
            messages.append(f"corresponding condition of pod readiness gate \"{ctype}\" "
                            "does not exist.")
        elif cond.get("status") != "True":
            messages.append(f"the status of pod readiness gate \"{ctype}\" is not \"True\", "
                            f"but {cond.get('status')}")
    if messages:
        return {"type": "Ready", "status": "False", "reason": "ReadinessGatesNotReady",
                "message": ", ".join(messages)}
    return {"type": "Ready", "status": "True"}


def conditions_of(spec: Mapping[str, Any], old: list[Obj], by_name: Mapping[str, Obj],
                  phase: str, sandbox_ready: bool, now: float) -> list[Obj]:
    """The pod's conditions: those the kubelet does not own, then its own five."""
    kept = [c for c in old if c.get("type") not in KUBELET_CONDITIONS]
    containers_ready = _containers_ready(spec, by_name, phase)
    own = [
        {"type": "PodReadyToStartContainers", "status": "True" if sandbox_ready else "False"},
        _initialized(spec, by_name, phase),
        _ready(spec, kept, containers_ready),
        containers_ready,
        {"type": "PodScheduled", "status": "True"},
    ]
    previous = {c.get("type"): c for c in old}
    for cond in own:
        # a Go value field, unset: the API returns it as null, so the status written
        # compares equal to its echo and a sync that changes nothing writes nothing
        cond["lastProbeTime"] = None
        before = previous.get(cond["type"])
        if before is not None and before.get("status") == cond["status"] and \
                before.get("lastTransitionTime"):
            cond["lastTransitionTime"] = before["lastTransitionTime"]
        else:
            cond["lastTransitionTime"] = meta_time(now)
    return kept + own


def pod_status(pod: Mapping[str, Any], record: PodRecord, *, now: float,
               opts: KubeletOptions) -> tuple[Obj, float | None]:
    """The whole status the kubelet wants the pod to have (fields it does not own are
    kept from the current status) and when it will next change by itself, if it will."""
    spec = pod.get("spec") or {}
    old: Obj = dict(pod.get("status") or {})
    has_init = bool(spec.get("initContainers"))
    changes: list[float] = []
    init_statuses = []
    for cr in record.init:
        st, at = container_status(pod, cr, has_init=has_init, now=now, opts=opts)
        init_statuses.append(st)
        if at is not None:
            changes.append(at)
    statuses = []
    for cr in record.containers:
        st, at = container_status(pod, cr, has_init=has_init, now=now, opts=opts)
        statuses.append(st)
        if at is not None:
            changes.append(at)
    statuses.sort(key=lambda s: s["name"])
    ephemeral = sorted((ephemeral_container_status(pod, cr, has_init=has_init, now=now,
                                                   opts=opts) for cr in record.ephemeral),
                       key=lambda s: s["name"])
    by_name = {s["name"]: s for s in [*init_statuses, *statuses]}
    phase = phase_of(spec, by_name, record.terminal)
    old_phase = old.get("phase")
    if record.failure is not None:
        phase = "Failed"
    if old_phase in TERMINAL_PHASES:
        phase = old_phase  # a terminal phase never changes again
    status = old
    status["phase"] = phase
    if record.failure is not None and old_phase not in TERMINAL_PHASES:
        status["reason"], status["message"] = record.failure
    elif phase != old_phase:
        status.pop("reason", None)
        status.pop("message", None)
    sandbox_ready = record.sandbox_id is not None and not record.terminal \
        and phase not in TERMINAL_PHASES
    status["conditions"] = conditions_of(spec, list(old.get("conditions") or []), by_name,
                                         phase, sandbox_ready, now)
    if record.fallback is not None and not any(
            c.get("type") == FALLBACK_CONDITION for c in status["conditions"]):
        reason, message = record.fallback
        status["conditions"].insert(0, {"type": FALLBACK_CONDITION, "status": "False",
                                        "reason": reason, "message": message,
                                        "lastProbeTime": None,
                                        "lastTransitionTime": meta_time(now)})
    if record.host_ip:
        status["hostIP"] = record.host_ip
        status["hostIPs"] = [{"ip": record.host_ip}]
    if record.ip:
        status["podIP"] = record.ip
        status["podIPs"] = [{"ip": record.ip}]
    status["startTime"] = old.get("startTime") or meta_time(record.start_time)
    if has_init:
        status["initContainerStatuses"] = init_statuses
    status["containerStatuses"] = statuses
    if record.resize:
        status["resize"] = record.resize
    else:
        status.pop("resize", None)
    if ephemeral:
        status["ephemeralContainerStatuses"] = ephemeral
    if phase in TERMINAL_PHASES:
        changes = []
    return status, (min(changes) if changes else None)

"""The Job controller: run pods until enough of them succeed, or give up.

A port of ``pkg/controller/job`` (1.32 behaviour):

- pods come from the template with the ``batch.kubernetes.io/job-tracking`` finalizer (the
  Job's server-side defaults label them ``batch.kubernetes.io/controller-uid`` and
  ``job-name``); at most ``parallelism`` run at once, and no more than the completions still
  missing;
- ``completionMode: Indexed`` gives each pod an index in ``[0, completions)`` (annotation and
  label ``batch.kubernetes.io/job-completion-index``, hostname ``<job>-<index>``, env
  ``JOB_COMPLETION_INDEX``) and tracks ``completedIndexes``;
- finished pods are counted exactly once: first recorded in
  ``status.uncountedTerminatedPods``, then their finalizer is removed, then they move into
  ``succeeded``/``failed``;
- more failures than ``backoffLimit`` (or running past ``activeDeadlineSeconds``) fails the
  Job: ``FailureTarget``, its pods deleted, then ``Failed`` (reason
  ``BackoffLimitExceeded``/``DeadlineExceeded``); new pods after failures wait an
  exponential back-off (10 s doubling, at most 6 min);
- success adds ``SuccessCriteriaMet`` and, once no pod runs, ``Complete`` (reason
  ``CompletionsReached``) with ``completionTime``;
- ``suspend`` deletes the active pods and sets ``Suspended``.

Pods of Jobs are run to completion by the simulated kubelet.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from setpoint.client import Kind, NotFoundError, PatchType
from setpoint.machinery.metatime import meta_time, parse_time
from setpoint.machinery.objects import Obj
from setpoint.runtime import Controller, EventRecorder, Manager, Request, Result
from setpoint.runtime._objects import clone, meta, name_of, namespace_of
from setpoint.workloads.controllers.controllerref import claim, is_controlled_by, recheck_owner
from setpoint.workloads.controllers.podcontrol import (
    component_recorder,
    create_pod,
    is_pod_ready,
    pod_from_template,
    selector_of,
)
from setpoint.workloads.settings import WorkloadSettings

JOB = Kind("batch/v1", "Job")
POD = Kind("v1", "Pod")

TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
INDEX_KEY = "batch.kubernetes.io/job-completion-index"
INDEX_ENV = "JOB_COMPLETION_INDEX"
DEFAULT_BACKOFF_LIMIT = 6
DEFAULT_POD_BACKOFF = 10.0
MAX_POD_BACKOFF = 360.0
COMPLETIONS_REACHED = ("CompletionsReached", "Reached expected number of succeeded pods")
BACKOFF_EXCEEDED = ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
DEADLINE_EXCEEDED = ("DeadlineExceeded", "Job was active longer than specified deadline")


# -- reading a Job ----------------------------------------------------------------------------

def condition(job: Obj, type_: str) -> Obj | None:
    return next((c for c in (job.get("status") or {}).get("conditions") or []
                 if c.get("type") == type_), None)


def is_true(job: Obj, type_: str) -> bool:
    found = condition(job, type_)
    return found is not None and found.get("status") == "True"


def is_finished(job: Obj) -> bool:
    return is_true(job, "Complete") or is_true(job, "Failed")


def is_indexed(job: Obj) -> bool:
    return (job.get("spec") or {}).get("completionMode") == "Indexed"


def index_of(pod: Obj) -> int | None:
    value = (meta(pod).get("annotations") or {}).get(INDEX_KEY)
    if value is None or not str(value).isdigit():
        return None
    return int(value)


def format_indexes(indexes: set[int]) -> str:
    """``completedIndexes``: ``1,3-5,7``."""
    out: list[str] = []
    ordered = sorted(indexes)
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        out.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(out)


def parse_indexes(text: str | None) -> set[int]:
    out: set[int] = set()
    for part in (text or "").split(","):
        if not part:
            continue
        low, _, high = part.partition("-")
        out.update(range(int(low), int(high or low) + 1))
    return out


def pod_succeeded(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") == "Succeeded"


def pod_failed(pod: Obj) -> bool:
    """Failed, or deleted before it could succeed (counted as a failure)."""
    phase = (pod.get("status") or {}).get("phase")
    return phase == "Failed" or (bool(meta(pod).get("deletionTimestamp"))
                                 and phase != "Succeeded")


def is_active(pod: Obj) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not meta(pod).get("deletionTimestamp")


def new_condition(type_: str, reason: str, message: str, status: str = "True") -> Obj:
    stamp = meta_time()
    return {"type": type_, "status": status, "lastProbeTime": stamp,
            "lastTransitionTime": stamp, "reason": reason, "message": message}


def set_job_condition(status: Obj, cond: Obj) -> None:
    conditions = status.setdefault("conditions", [])
    for i, existing in enumerate(conditions):
        if existing.get("type") == cond["type"]:
            if existing.get("status") != cond["status"] or existing.get("reason") != \
                    cond["reason"]:
                conditions[i] = cond
            return
    conditions.append(cond)


# -- the controller ---------------------------------------------------------------------------

class JobReconciler:
    """``syncJob`` for one Job per reconcile."""

    def __init__(self, manager: Manager, events: EventRecorder | None = None,
                 pod_backoff: float = DEFAULT_POD_BACKOFF) -> None:
        self.manager = manager
        self.events = events
        self.pod_backoff = pod_backoff
        self._last_failure: dict[str, tuple[int, float]] = {}

    def __repr__(self) -> str:
        return "JobReconciler()"

    def _event(self, obj: Obj, type_: str, reason: str, note: str) -> None:
        if self.events is not None:
            self.events.event(obj, type_, reason, note)

    async def reconcile(self, request: Request) -> Result:
        job = self.manager.cache.get(JOB, request.name, request.namespace)
        if job is None:
            self._last_failure.pop(str(request), None)
            return Result()
        selector = selector_of((job.get("spec") or {}).get("selector"))
        candidates = self.manager.cache.list_raw(POD, namespace=request.namespace)
        if is_finished(job) or meta(job).get("deletionTimestamp"):
            owned = [p for p in candidates if is_controlled_by(p, job)]
            await self._count_finished(job, owned, clone(job.get("status") or {}))
            return Result()
        pods = await claim(self.manager.client, job, POD, candidates, selector,
                           can_adopt=recheck_owner(self.manager.client, job, JOB),
                           record=self.manager.writer.record)
        status = clone(job.get("status") or {})
        spec = job.get("spec") or {}
        suspended = bool(spec.get("suspend"))
        if not suspended and not status.get("startTime"):
            status["startTime"] = meta_time()
        status = await self._count_finished(job, pods, status)
        job = {**job, "status": status}
        active = [p for p in pods if is_active(p)]
        requeue: float | None = None
        failure = self._failure(job)
        if failure is not None or is_true(job, "FailureTarget"):
            target = condition(job, "FailureTarget") or {}
            reason, message = failure or (str(target.get("reason") or ""),
                                          str(target.get("message") or ""))
            if not is_true(job, "FailureTarget"):
                set_job_condition(status, new_condition("FailureTarget", reason, message))
            await self._delete_pods(job, active)
            if not any(not _terminal(p) for p in pods if _has_finalizer(p)):
                set_job_condition(status, new_condition("Failed", reason, message))
                self._event(job, "Warning", reason, message)
        elif self._succeeded(job, active) or is_true(job, "SuccessCriteriaMet"):
            if not is_true(job, "SuccessCriteriaMet"):
                set_job_condition(status, new_condition("SuccessCriteriaMet",
                                                        *COMPLETIONS_REACHED))
            await self._delete_pods(job, active)
            if not any(not _terminal(p) for p in pods if _has_finalizer(p)):
                set_job_condition(status, new_condition("Complete", *COMPLETIONS_REACHED))
                status["completionTime"] = meta_time()
                self._event(job, "Normal", "Completed", "Job completed")
        elif suspended:
            await self._delete_pods(job, active)
            if not is_true(job, "Suspended"):
                set_job_condition(status, new_condition("Suspended", "JobSuspended",
                                                        "Job suspended"))
                self._event(job, "Normal", "Suspended", "Job suspended")
        else:
            if is_true(job, "Suspended"):
                set_job_condition(status, new_condition("Suspended", "JobResumed",
                                                        "Job resumed", "False"))
                self._event(job, "Normal", "Resumed", "Job resumed")
            requeue = await self._manage(job, pods, active)
            requeue = _min(requeue, self._deadline_in(job))
        await self._write_status(job, pods, status)
        return Result(requeue_after=requeue)

    # -- counting finished pods -------------------------------------------------------------

    async def _count_finished(self, job: Obj, pods: list[Obj], status: Obj) -> Obj:
        """Record finished pods in ``uncountedTerminatedPods``, remove their finalizers,
        then add them to ``succeeded``/``failed`` (``trackJobStatusAndRemoveFinalizers``)."""
        uncounted = status.setdefault("uncountedTerminatedPods", {})
        seen = {*uncounted.get("succeeded", []), *uncounted.get("failed", [])}
        finished = [p for p in pods if _has_finalizer(p) and (pod_succeeded(p) or pod_failed(p))
                    and _terminal_or_deleting(p)]
        fresh = [p for p in finished if meta(p).get("uid") not in seen]
        indexed = is_indexed(job)
        completions = (job.get("spec") or {}).get("completions")
        done = parse_indexes(status.get("completedIndexes"))
        for pod in fresh:
            key = "succeeded" if pod_succeeded(pod) else "failed"
            if key == "succeeded" and indexed:
                index = index_of(pod)
                if index is None or completions is None or index >= completions \
                        or index in done:
                    continue
                done.add(index)
            uncounted.setdefault(key, []).append(meta(pod).get("uid"))
        if fresh:
            await self._put_status(job, status)
        for pod in finished:
            await self._remove_finalizer(pod)
        added = uncounted.get("succeeded", []), uncounted.get("failed", [])
        if added[0] or added[1]:
            if added[0]:
                status["succeeded"] = int(status.get("succeeded") or 0) + len(added[0])
            if added[1]:
                status["failed"] = int(status.get("failed") or 0) + len(added[1])
                self._last_failure[_key(job)] = (int(status["failed"]), time.monotonic())
            if indexed:
                status["completedIndexes"] = format_indexes(done)
            status["uncountedTerminatedPods"] = {}
            await self._put_status(job, status)
        return status

    async def _remove_finalizer(self, pod: Obj) -> None:
        # as ``removeTrackingFinalizerPatch``: no resourceVersion, only this finalizer
        patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": [TRACKING_FINALIZER]}}
        with contextlib.suppress(NotFoundError):
            updated = await self.manager.client.patch(POD, name_of(pod), patch,
                                                      patch_type=PatchType.STRATEGIC,
                                                      namespace=namespace_of(pod))
            self.manager.writer.record(updated)

    # -- deciding ---------------------------------------------------------------------------

    def _failure(self, job: Obj) -> tuple[str, str] | None:
        spec, status = job.get("spec") or {}, job.get("status") or {}
        limit = spec.get("backoffLimit")
        limit = DEFAULT_BACKOFF_LIMIT if limit is None else int(limit)
        if int(status.get("failed") or 0) > limit:
            return BACKOFF_EXCEEDED
        if self._deadline_in(job) == 0.0:
            return DEADLINE_EXCEEDED
        return None

    def _deadline_in(self, job: Obj) -> float | None:
        """Seconds left before ``activeDeadlineSeconds`` (0: passed), None without one."""
        deadline = (job.get("spec") or {}).get("activeDeadlineSeconds")
        started = parse_time((job.get("status") or {}).get("startTime"))
        if deadline is None or started is None or (job.get("spec") or {}).get("suspend"):
            return None
        return max(0.0, started + int(deadline) - time.time())

    def _succeeded(self, job: Obj, active: list[Obj]) -> bool:
        spec, status = job.get("spec") or {}, job.get("status") or {}
        completions: int | None = spec.get("completions")
        if is_indexed(job):
            return completions is not None and \
                len(parse_indexes(status.get("completedIndexes"))) >= completions
        succeeded = int(status.get("succeeded") or 0)
        if completions is None:
            return succeeded > 0 and not active
        return succeeded >= completions

    async def _manage(self, job: Obj, pods: list[Obj], active: list[Obj]) -> float | None:
        """``manageJob``: create or delete pods towards the wanted number of active ones."""
        spec, status = job.get("spec") or {}, job.get("status") or {}
        wanted = spec.get("parallelism")
        parallelism = int(wanted) if wanted is not None else 1
        completions = spec.get("completions")
        succeeded = int(status.get("succeeded") or 0)
        if is_indexed(job):
            busy = {index_of(p) for p in active}
            done = parse_indexes(status.get("completedIndexes"))
            missing = [i for i in range(int(completions or 0)) if i not in busy | done]
            extra = [p for p in active if index_of(p) is None or index_of(p) in done]
            want = min(parallelism, len(active) - len(extra) + len(missing))
        else:
            missing = []
            extra = []
            if completions is None:
                want = parallelism if succeeded == 0 else min(len(active), parallelism)
            else:
                want = min(parallelism, max(0, int(completions) - succeeded))
        surplus = len(active) - want
        if extra or surplus > 0:
            doomed = extra + [p for p in _deletion_order(active) if p not in extra]
            await self._delete_pods(job, doomed[:max(len(extra), surplus)])
            return None
        to_create = want - len(active)
        if to_create <= 0:
            return None
        wait = self._backoff_left(job)
        if wait > 0:
            return wait
        indexes: list[int | None] = list(missing[:to_create]) if is_indexed(job) \
            else [None] * to_create
        for index in indexes:
            await create_pod(self.manager.client, job, self._new_pod(job, index),
                             record=self.manager.writer.record, events=self.events)
        return None

    def _backoff_left(self, job: Obj) -> float:
        failed = int((job.get("status") or {}).get("failed") or 0)
        last = self._last_failure.get(_key(job))
        if not failed or last is None:
            return 0.0
        delay: float = min(MAX_POD_BACKOFF, self.pod_backoff * 2 ** (max(1, last[0]) - 1))
        return max(0.0, last[1] + delay - time.monotonic())

    def _new_pod(self, job: Obj, index: int | None) -> Obj:
        template = (job.get("spec") or {}).get("template") or {}
        pod = pod_from_template(template, job)
        metadata = pod["metadata"]
        metadata["finalizers"] = [*(metadata.get("finalizers") or []), TRACKING_FINALIZER]
        if index is not None:
            metadata["generateName"] = f"{name_of(job)}-{index}-"
            metadata.setdefault("annotations", {})[INDEX_KEY] = str(index)
            metadata.setdefault("labels", {})[INDEX_KEY] = str(index)
            spec = pod["spec"]
            spec["hostname"] = f"{name_of(job)}-{index}"
            env_var = {"name": INDEX_ENV, "valueFrom": {"fieldRef": {
                "fieldPath": f"metadata.annotations['{INDEX_KEY}']"}}}
            for key in ("initContainers", "containers"):
                for container in spec.get(key) or []:
                    env = [e for e in container.get("env") or [] if e.get("name") != INDEX_ENV]
                    container["env"] = [*env, env_var]
        return pod

    async def _delete_pods(self, job: Obj, pods: list[Obj]) -> None:
        for pod in pods:
            try:
                answer = await self.manager.client.delete(POD, name_of(pod),
                                                          namespace=namespace_of(pod))
            except NotFoundError:
                continue
            if answer.get("kind") == "Pod":
                self.manager.writer.record(answer)
            self._event(job, "Normal", "SuccessfulDelete", f"Deleted pod: {name_of(pod)}")

    # -- status -----------------------------------------------------------------------------

    async def _write_status(self, job: Obj, pods: list[Obj], status: Obj) -> None:
        active = [p for p in pods if is_active(p)]
        status["active"] = len(active) or None
        status["ready"] = sum(1 for p in active if is_pod_ready(p))
        status["terminating"] = sum(1 for p in pods if meta(p).get("deletionTimestamp")
                                    and not _terminal(p))
        status.setdefault("uncountedTerminatedPods", {})
        if is_true({"status": status}, "Failed") or is_true({"status": status}, "Complete"):
            status["active"] = None
        await self._put_status(job, {k: v for k, v in status.items() if v is not None})

    async def _put_status(self, job: Obj, status: Obj) -> None:
        body = clone(job)
        body["status"] = {k: v for k, v in status.items() if v is not None}
        await self.manager.writer.update_status(body)


def _key(job: Obj) -> str:
    return f"{namespace_of(job)}/{name_of(job)}"


def _min(a: float | None, b: float | None) -> float | None:
    values = [v for v in (a, b) if v is not None]
    return min(values) if values else None


def _has_finalizer(pod: Obj) -> bool:
    return TRACKING_FINALIZER in (meta(pod).get("finalizers") or [])


def _terminal(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def _terminal_or_deleting(pod: Obj) -> bool:
    return _terminal(pod) or bool(meta(pod).get("deletionTimestamp"))


def _deletion_order(pods: list[Obj]) -> list[Obj]:
    """Not-ready before ready, then the newest first (``activePods`` sorting)."""
    def key(pod: Obj) -> tuple[Any, ...]:
        scheduled = bool((pod.get("spec") or {}).get("nodeName"))
        return (scheduled, is_pod_ready(pod), -(parse_time(
            meta(pod).get("creationTimestamp")) or 0.0))
    return sorted(pods, key=key)


def install(manager: Manager, settings: WorkloadSettings) -> None:
    """Add the Job controller (events from ``job-controller``). ``settings.extra``
    ``job_pod_backoff_seconds`` overrides the 10 s base of the failure back-off."""
    backoff = float(settings.extra.get("job_pod_backoff_seconds", DEFAULT_POD_BACKOFF))
    events = component_recorder(manager, "job-controller")
    manager.add(Controller.for_(JOB, name="job")
                .owns(POD)
                .reconciler(JobReconciler(manager, events, backoff)))

"""The CronJob controller: create a CronJob's Jobs at their scheduled times.

A port of ``pkg/controller/cronjob`` (cronjob_controllerv2.go ``sync``, ``syncCronJob``,
``cleanupFinishedJobs``; utils.go ``mostRecentScheduleTime``, ``nextScheduleTimeDuration``,
``getJobFromTemplate2``), 1.32 behaviour:

- the Jobs of a CronJob are those whose controller reference names it; one that finished
  leaves ``status.active`` (``SawCompletedJob``), one that succeeded moves
  ``lastSuccessfulTime``, an unfinished one the controller did not start (``kubectl create
  job --from=cronjob/...``) is reported ``UnexpectedJob`` and not adopted, and an active
  one that is gone is ``MissingJob``;
- finished Jobs beyond ``successfulJobsHistoryLimit``/``failedJobsHistoryLimit`` are
  deleted, oldest start first (``SuccessfulDelete``);
- unless suspended, the most recent unmet schedule time (no earlier than
  ``startingDeadlineSeconds`` ago, else ``MissSchedule``) gets the Job ``<name>-<unix
  minutes>`` from ``jobTemplate``, annotated ``batch.kubernetes.io/cronjob-scheduled-
  timestamp`` (``SuccessfulCreate``), subject to ``concurrencyPolicy`` (``Forbid``:
  ``JobAlreadyActive``; ``Replace``: the active Jobs deleted first);
- the CronJob is synced again 100 ms after its next schedule time.

Schedules run in UTC unless ``spec.timeZone`` (or a ``TZ=`` prefix) names a zone.
"""

from __future__ import annotations

import datetime as dt
import email.utils
from collections.abc import Mapping
from typing import Any

from setpoint.client import AlreadyExistsError, Kind, NotFoundError
from setpoint.machinery.objects import Obj
from setpoint.runtime import Controller, EventRecorder, Manager, Request, Result
from setpoint.runtime._objects import clone, meta, name_of, namespace_of, object_key
from setpoint.runtime._ownership import controller_of, owner_reference
from setpoint.workloads.controllers import cronschedule
from setpoint.workloads.controllers.podcontrol import component_recorder
from setpoint.workloads.settings import WorkloadSettings

CRON_JOB = Kind("batch/v1", "CronJob")
JOB = Kind("batch/v1", "Job")
SCHEDULED_TIMESTAMP = "batch.kubernetes.io/cronjob-scheduled-timestamp"
NEXT_SCHEDULE_DELTA = 0.1
MANY_MISSED = 100
UTC = dt.UTC


def _parse(text: object) -> dt.datetime | None:
    if not text:
        return None
    return dt.datetime.fromisoformat(str(text).replace("Z", "+00:00"))


def _rfc3339(t: dt.datetime) -> str:
    """Go's ``time.RFC3339`` of ``t`` in its own zone (``Z`` for UTC)."""
    text = t.replace(microsecond=0).isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def _finished(job: Mapping[str, Any]) -> str | None:
    """``getFinishedStatus``: ``Complete`` or ``Failed`` once that condition is True."""
    for condition in (job.get("status") or {}).get("conditions") or []:
        if condition.get("type") in ("Complete", "Failed") and condition.get("status") == "True":
            return str(condition["type"])
    return None


def most_recent_schedule_time(
        cj: Mapping[str, Any], now: dt.datetime, schedule: cronschedule.Schedule,
        include_deadline: bool) -> tuple[dt.datetime, dt.datetime | None, int]:
    """``mostRecentScheduleTime``: the earliest time considered, the most recent schedule
    time not after ``now`` (None: none since), and how many were missed (an estimate)."""
    earliest = _parse((cj.get("status") or {}).get("lastScheduleTime")) or \
        _parse(meta(cj).get("creationTimestamp")) or now
    deadline = (cj.get("spec") or {}).get("startingDeadlineSeconds")
    if include_deadline and deadline is not None:
        earliest = max(earliest, now - dt.timedelta(seconds=int(deadline)))
    t1 = schedule.next(earliest)
    t2 = schedule.next(t1) if t1 is not None else None
    if t1 is None or now < t1:
        return earliest, None, 0
    if t2 is None or now < t2:
        return earliest, t1, 0
    between = round((t2 - t1).total_seconds())
    if between < 1:
        raise cronschedule.ScheduleError(
            "time difference between two schedules is less than 1 second")
    missed = int((now - t1).total_seconds()) // between + 1
    most_recent: dt.datetime | None = None
    t: dt.datetime | None = schedule.next(t1 + dt.timedelta(seconds=(missed - 2) * between))
    while t is not None and t <= now:
        most_recent = t
        t = schedule.next(t)
    return earliest, most_recent, missed


def next_schedule_delay(cj: Mapping[str, Any], now: dt.datetime,
                        schedule: cronschedule.Schedule) -> float | None:
    """``nextScheduleTimeDuration``: seconds until 100 ms past the next schedule time."""
    try:
        earliest, recent, missed = most_recent_schedule_time(cj, now, schedule, False)
    except cronschedule.ScheduleError:
        recent = now
    else:
        if recent is None:
            recent = earliest if missed == 0 else now
    following = schedule.next(recent)
    if following is None:
        return None
    return max((following - now).total_seconds() + NEXT_SCHEDULE_DELTA, 0.0)


def job_from_template(cj: Mapping[str, Any], scheduled: dt.datetime,
                      zone: cronschedule.Schedule) -> Obj:
    """``getJobFromTemplate2``."""
    template = (cj.get("spec") or {}).get("jobTemplate") or {}
    template_meta = template.get("metadata") or {}
    annotations = dict(template_meta.get("annotations") or {})
    annotations[SCHEDULED_TIMESTAMP] = _rfc3339(scheduled.astimezone(zone.zone))
    metadata: Obj = {"name": f"{name_of(cj)}-{int(scheduled.timestamp()) // 60}",
                     "namespace": namespace_of(cj), "annotations": annotations,
                     "ownerReferences": [owner_reference(cj)]}
    if template_meta.get("labels"):
        metadata["labels"] = dict(template_meta["labels"])
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata,
            "spec": clone(template.get("spec") or {})}


def _job_ref(job: Mapping[str, Any]) -> Obj:
    """``ref.GetReference`` of a Job."""
    m = meta(job)
    return {"kind": "Job", "namespace": m.get("namespace"), "name": m.get("name"),
            "uid": m.get("uid"), "apiVersion": "batch/v1",
            "resourceVersion": m.get("resourceVersion")}


class CronJobReconciler:
    """Syncs one CronJob per request (``sync``)."""

    def __init__(self, manager: Manager, events: EventRecorder) -> None:
        self.manager = manager
        self.events = events

    async def reconcile(self, request: Request) -> Result:
        cached = self.manager.cache.store_for(CRON_JOB).get(
            object_key(request.namespace, request.name))
        if cached is None:
            return Result()
        cj = clone(cached)
        jobs = [j for j in self.manager.cache.list_raw(JOB, namespace=request.namespace)
                if (controller_of(j) or {}).get("name") == name_of(cj)]
        changed = await self._cleanup_finished(cj, jobs)
        error: Exception | None = None
        delay: float | None = None
        try:
            delay, synced = await self._sync(cj, jobs)
            changed = changed or synced
        except Exception as exc:  # the status collected so far is still written
            error = exc
        if changed:
            updated: Obj = await self.manager.client.update_status(cj)
            self.manager.writer.record(updated)
        if error is not None and delay is None:
            raise error
        return Result(requeue_after=delay)

    async def _cleanup_finished(self, cj: Obj, jobs: list[Obj]) -> bool:
        spec = cj.get("spec") or {}
        changed = False
        for limit_key, wanted in (("successfulJobsHistoryLimit", "Complete"),
                                  ("failedJobsHistoryLimit", "Failed")):
            limit = spec.get(limit_key)
            finished = [j for j in jobs if _finished(j) == wanted]
            if limit is None or len(finished) <= int(limit):
                continue
            finished.sort(key=_by_start_time)
            for job in finished[:len(finished) - int(limit)]:
                changed = await self._delete_job(cj, job) or changed
        return changed

    async def _delete_job(self, cj: Obj, job: Mapping[str, Any]) -> bool:
        """``deleteJob``: the Job (background propagation) and its active reference."""
        try:
            await self.manager.client.delete(JOB, name_of(job), namespace=namespace_of(job),
                                             propagation_policy="Background")
        except Exception as exc:
            self.events.warning(cj, "FailedDelete", f"Deleted job: {exc}")
            return False
        _drop_active(cj, str(meta(job).get("uid")))
        self.events.normal(cj, "SuccessfulDelete", f"Deleted job {name_of(job)}")
        return True

    async def _sync(self, cj: Obj, jobs: list[Obj]) -> tuple[float | None, bool]:
        """``syncCronJob``: (seconds until the next sync or None, whether the status
        changed)."""
        now = dt.datetime.now(UTC)
        status = cj.setdefault("status", {})
        changed = False
        children = {str(meta(j).get("uid")) for j in jobs}
        for job in jobs:
            uid = str(meta(job).get("uid"))
            found = any(ref.get("uid") == uid for ref in status.get("active") or [])
            finished = _finished(job)
            if not found and finished is None:
                self.events.warning(cj, "UnexpectedJob", "Saw a job that the controller did "
                                    f"not create or forgot: {name_of(job)}")
            elif found and finished is not None:
                _drop_active(cj, uid)
                self.events.normal(cj, "SawCompletedJob",
                                   f"Saw completed job: {name_of(job)}, condition: {finished}")
                changed = True
            # Go reaches the success branch for such a Job on the sync its own status update
            # starts at once (updateCronJob enqueues every update); the status is the same
            if finished == "Complete":
                completed = (job.get("status") or {}).get("completionTime")
                last = _parse(status.get("lastSuccessfulTime"))
                if completed and (last is None or _parse(completed) > last):  # type: ignore[operator]
                    status["lastSuccessfulTime"] = completed
                    changed = True
        for ref in list(status.get("active") or []):
            if str(ref.get("uid")) in children:
                continue
            try:
                await self.manager.client.get(JOB, str(ref.get("name")),
                                              namespace=ref.get("namespace"))
            except NotFoundError:
                self.events.normal(cj, "MissingJob", f"Active job went missing: {ref.get('name')}")
                _drop_active(cj, str(ref.get("uid")))
                changed = True
        spec = cj.get("spec") or {}
        if meta(cj).get("deletionTimestamp") or spec.get("suspend"):
            return None, changed
        try:
            schedule = cronschedule.parse_standard(str(spec.get("schedule") or ""),
                                                   spec.get("timeZone"))
            _, scheduled, missed = most_recent_schedule_time(cj, now, schedule, True)
        except (cronschedule.ScheduleError, ValueError) as err:
            self.events.warning(cj, "InvalidSchedule",
                                f"invalid schedule: {spec.get('schedule')} : {err}")
            return None, changed
        delay = next_schedule_delay(cj, now, schedule)
        if scheduled is None:
            return delay, changed
        if missed > MANY_MISSED:
            self.events.warning(cj, "TooManyMissedTimes", "too many missed start times. Set or "
                                "decrease .spec.startingDeadlineSeconds or check clock skew")
        deadline = spec.get("startingDeadlineSeconds")
        if deadline is not None and scheduled + dt.timedelta(seconds=int(deadline)) < now:
            self.events.warning(cj, "MissSchedule", "Missed scheduled time to start a job: "
                                + email.utils.format_datetime(scheduled.astimezone(UTC)))
            return delay, changed
        wanted = job_from_template(cj, scheduled, schedule)
        if any(ref.get("name") == name_of(wanted) for ref in status.get("active") or []) or \
                _parse(status.get("lastScheduleTime")) == scheduled:
            return delay, changed
        policy = spec.get("concurrencyPolicy") or "Allow"
        if policy == "Forbid" and status.get("active"):
            self.events.normal(cj, "JobAlreadyActive", "Not starting job because prior "
                               "execution is running and concurrency policy is Forbid")
            return delay, changed
        if policy == "Replace":
            for ref in list(status.get("active") or []):
                job = await self.manager.client.get(JOB, str(ref.get("name")),
                                                    namespace=ref.get("namespace"))
                if not await self._delete_job(cj, job):
                    raise RuntimeError(f"could not replace job {ref.get('namespace')}/"
                                       f"{ref.get('name')}")
                changed = True
        try:
            created: Obj = await self.manager.client.create(wanted)
        except AlreadyExistsError:
            created = await self.manager.client.get(JOB, name_of(wanted),
                                                    namespace=namespace_of(cj))
            if (controller_of(created) or {}).get("uid") != meta(cj).get("uid") or any(
                    ref.get("uid") == meta(created).get("uid")
                    for ref in status.get("active") or []):
                return None, changed
        except Exception as exc:
            self.events.warning(cj, "FailedCreate", f"Error creating job: {exc}")
            raise
        else:
            self.manager.writer.record(created)
            self.events.normal(cj, "SuccessfulCreate", f"Created job {name_of(created)}")
        status.setdefault("active", []).append(_job_ref(created))
        status["lastScheduleTime"] = _rfc3339(scheduled.astimezone(UTC))
        return next_schedule_delay(cj, now, schedule), True


def _drop_active(cj: Obj, uid: str) -> None:
    status = cj.setdefault("status", {})
    active = [ref for ref in status.get("active") or [] if ref.get("uid") != uid]
    if active:
        status["active"] = active
    else:
        status.pop("active", None)


def _by_start_time(job: Mapping[str, Any]) -> tuple[int, str, str]:
    """``byJobStartTime``: started Jobs first, earliest first, then by name."""
    start = (job.get("status") or {}).get("startTime")
    return (0 if start else 1, str(_parse(start) or ""), name_of(job))


def install(manager: Manager, settings: WorkloadSettings) -> None:
    """Add the CronJob controller (events from ``cronjob-controller``)."""
    events = component_recorder(manager, "cronjob-controller")
    manager.add(Controller.for_(CRON_JOB, name="cronjob")
                .owns(JOB)
                .reconciler(CronJobReconciler(manager, events)))

"""A Job's ``/status`` write, as kube-apiserver 1.32 validates it.

pkg/registry/batch/job/strategy.go ``getStatusValidationOptions``: with JobManagedBy (beta,
on by default in 1.32) the status transitions are held to what clients of the Job API
expect, so that an external controller (``spec.managedBy``) cannot leave a Job in a state
the built-in one never would. Most rules apply only when the fields they judge change, so a
status already off (after a spec change) can still be fixed. The rules themselves are
pkg/apis/batch/validation/validation.go ``validateJobStatus`` and
``ValidateJobStatusUpdate``. (The format of ``completedIndexes``/``failedIndexes`` and their
overlap are not checked here.)
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from setpoint.machinery import fielderrors as fe
from setpoint.machinery.errors import Cause
from setpoint.machinery.gofmt import GoValue, go_quote
from setpoint.machinery.objects import Obj

NON_NEGATIVE = "must be greater than or equal to 0"
_TERMINAL = ("Failed", "Complete", "FailureTarget")


def _int(status: Obj, key: str) -> int:
    value = status.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _true(job: Obj, kind: str) -> bool:
    """``IsConditionTrue``."""
    return any(isinstance(c, dict) and c.get("type") == kind and c.get("status") == "True"
               for c in (job.get("status") or {}).get("conditions") or ())


def _finished(job: Obj) -> bool:
    return _true(job, "Complete") or _true(job, "Failed")


def _time(raw: Any) -> datetime | None:
    if not isinstance(raw, str):
        return None
    try:
        return datetime.fromisoformat(raw.replace("Z", "+00:00")).astimezone(UTC)
    except ValueError:
        return None


def _time_value(raw: Any) -> GoValue:
    """A *metav1.Time as ``field.Error`` prints it: time.Time's String (server in UTC)."""
    when = _time(raw)
    return GoValue("null" if when is None else
                   when.strftime("%Y-%m-%d %H:%M:%S +0000 UTC"))


def _omitting_value(path: str, detail: str) -> Cause:
    """``field.Invalid`` given ``field.OmitValueType{}``."""
    return Cause(fe.INVALID, f"Invalid value: {detail}", path)


def _uids(value: Any) -> str:
    if value is None:
        return "[]types.UID(nil)"
    return "[]types.UID{" + ", ".join(go_quote(str(v)) for v in value) + "}"


def _uncounted_value(uncounted: Obj) -> GoValue:
    return GoValue(f"batch.UncountedTerminatedPods{{Succeeded:{_uids(uncounted.get('succeeded'))}"
                   f", Failed:{_uids(uncounted.get('failed'))}}}")


def _changed(new: Obj, old: Obj, key: str) -> bool:
    a, b = (new.get("status") or {}).get(key), (old.get("status") or {}).get(key)
    if key in ("startTime", "completionTime"):
        return _time(a) != _time(b)
    return a != b


def _options(new: Obj, old: Obj) -> dict[str, bool]:
    """``getStatusValidationOptions`` with JobManagedBy on."""
    spec = new.get("spec") or {}
    indexed = spec.get("completionMode") == "Indexed"
    finished = _finished(old) != _finished(new)
    complete = _true(old, "Complete") != _true(new, "Complete")
    failed = _true(old, "Failed") != _true(new, "Failed")
    failure_target = _true(old, "FailureTarget") != _true(new, "FailureTarget")
    completed_indexes = (((new.get("status") or {}).get("completedIndexes") or "")
                         != ((old.get("status") or {}).get("completedIndexes") or ""))
    failed_indexes = _changed(new, old, "failedIndexes")
    start = _changed(new, old, "startTime")
    completion = _changed(new, old, "completionTime")
    uncounted = _changed(new, old, "uncountedTerminatedPods")
    return {
        "decreasing_succeeded": not indexed or spec.get("completions") != spec.get(
            "parallelism"),
        "completed_indexes_for_non_indexed": completed_indexes,
        "failed_indexes_without_backoff_limit_per_index": failed_indexes,
        "finished_with_active": finished or _changed(new, old, "active"),
        "finished_without_start": finished or start,
        "finished_with_uncounted": finished or uncounted,
        "start_time_update": start,
        "completion_before_start": start or completion,
        "not_complete_with_completion_time": complete or completion,
        "complete_without_completion_time": complete or completion,
        "complete_with_failed": complete or failed,
        "complete_with_failure_target": complete or failure_target,
    }


def _uncounted_entries(uncounted: Obj) -> list[Cause]:
    causes: list[Cause] = []
    seen: set[str] = set()
    for which in ("succeeded", "failed"):
        for i, uid in enumerate(uncounted.get(which) or ()):
            path = fe.index(f"status.uncountedTerminatedPods.{which}", i)
            if uid == "":
                causes.append(fe.invalid(path, uid, "must not be empty"))
            elif uid in seen:
                causes.append(fe.duplicate(path, uid))
            else:
                seen.add(uid)
    return causes


def _validate_status(job: Obj, opts: dict[str, bool]) -> list[Cause]:
    """``validateJobStatus``."""
    status = job.get("status") or {}
    causes = [fe.invalid(f"status.{k}", _int(status, k), NON_NEGATIVE)
              for k in ("active", "succeeded", "failed") if _int(status, k) < 0]
    causes += [fe.invalid(f"status.{k}", status[k], NON_NEGATIVE)
               for k in ("ready", "terminating") if status.get(k) is not None
               and _int(status, k) < 0]
    uncounted = status.get("uncountedTerminatedPods")
    if isinstance(uncounted, dict):
        causes += _uncounted_entries(uncounted)
    complete, failed = _true(job, "Complete"), _true(job, "Failed")
    if opts["complete_with_failed"] and complete and failed:
        causes.append(_omitting_value("status.conditions",
                                      "cannot set Complete=True and Failed=true conditions"))
    if opts["complete_with_failure_target"] and complete and _true(job, "FailureTarget"):
        causes.append(_omitting_value(
            "status.conditions", "cannot set Complete=True and FailureTarget=true conditions"))
    completion, start = status.get("completionTime"), status.get("startTime")
    if opts["not_complete_with_completion_time"] and completion is not None and not complete:
        causes.append(fe.invalid("status.completionTime", _time_value(completion),
                                 "cannot set completionTime when there is no Complete=True "
                                 "condition"))
    if opts["complete_without_completion_time"] and completion is None and complete:
        causes.append(fe.required("status.completionTime",
                                  "completionTime is required for Complete jobs"))
    started, completed = _time(start), _time(completion)
    if opts["completion_before_start"] and started and completed and completed < started:
        causes.append(fe.invalid("status.completionTime", _time_value(completion),
                                 "completionTime cannot be set before startTime"))
    finished = complete or failed
    if opts["finished_with_active"] and _int(status, "active") > 0 and finished:
        causes.append(fe.invalid("status.active", _int(status, "active"),
                                 "active>0 is invalid for finished job"))
    if opts["finished_without_start"] and start is None and finished:
        causes.append(fe.required("status.startTime", "startTime is required for finished job"))
    if opts["finished_with_uncounted"] and finished and isinstance(uncounted, dict) and (
            uncounted.get("succeeded") or uncounted.get("failed")):
        causes.append(fe.invalid("status.uncountedTerminatedPods", _uncounted_value(uncounted),
                                 "uncountedTerminatedPods needs to be empty for finished job"))
    spec = job.get("spec") or {}
    if opts["completed_indexes_for_non_indexed"] and status.get("completedIndexes") \
            and spec.get("completionMode") != "Indexed":
        causes.append(fe.invalid("status.completedIndexes", status["completedIndexes"],
                                 "cannot set non-empty completedIndexes when non-indexed "
                                 "completion mode"))
    if opts["failed_indexes_without_backoff_limit_per_index"] \
            and spec.get("backoffLimitPerIndex") is None \
            and status.get("failedIndexes") is not None:
        causes.append(fe.invalid("status.failedIndexes", status["failedIndexes"],
                                 "cannot set non-null failedIndexes when backoffLimitPerIndex "
                                 "is null"))
    met = _true(job, "SuccessCriteriaMet")
    if met and failed:
        causes.append(_omitting_value(
            "status.conditions", "cannot set SuccessCriteriaMet=True and Failed=true conditions"))
    if met and _true(job, "FailureTarget"):
        causes.append(_omitting_value(
            "status.conditions",
            "cannot set SuccessCriteriaMet=True and FailureTarget=true conditions"))
    if spec.get("successPolicy") is not None and not met and complete:
        causes.append(_omitting_value(
            "status.conditions",
            "cannot set Complete=True for Job with SuccessPolicy unless SuccessCriteriaMet=True"))
    return causes


def validate_job_status_update(new: Obj, old: Obj) -> list[Cause]:
    """``ValidateJobStatusUpdate`` with the options the 1.32 strategy gives it."""
    opts = _options(new, old)
    causes = _validate_status(new, opts)
    for kind in _TERMINAL:
        if _true(old, kind) and not _true(new, kind):
            causes.append(_omitting_value("status.conditions",
                                          f"cannot disable the terminal {kind}=True condition"))
    status, old_status = new.get("status") or {}, old.get("status") or {}
    if _int(status, "failed") < _int(old_status, "failed"):
        causes.append(fe.invalid("status.failed", _int(status, "failed"),
                                 "cannot decrease the failed counter"))
    if opts["decreasing_succeeded"] and _int(status, "succeeded") < _int(old_status,
                                                                         "succeeded"):
        causes.append(fe.invalid("status.succeeded", _int(status, "succeeded"),
                                 "cannot decrease the succeeded counter"))
    completion, old_completion = status.get("completionTime"), old_status.get("completionTime")
    if completion is not None and old_completion is not None \
            and _time(completion) != _time(old_completion):
        causes.append(fe.invalid("status.completionTime", _time_value(completion),
                                 "completionTime cannot be mutated"))
    if opts["start_time_update"] and old_status.get("startTime") is not None \
            and not (new.get("spec") or {}).get("suspend"):
        causes.append(fe.required("status.startTime",
                                  "startTime cannot be removed for unsuspended job"))
    if _true(old, "SuccessCriteriaMet") and not _true(new, "SuccessCriteriaMet"):
        causes.append(_omitting_value("status.conditions",
                                      "cannot disable the SuccessCriteriaMet=True condition"))
    if _true(old, "Complete") and not _true(old, "SuccessCriteriaMet") \
            and _true(new, "SuccessCriteriaMet"):
        causes.append(_omitting_value(
            "status.conditions",
            "cannot set SuccessCriteriaMet=True for Job already has Complete=true conditions"))
    return causes

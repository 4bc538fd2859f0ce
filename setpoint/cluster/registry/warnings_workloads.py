"""The warnings of the workload kinds, whose objects carry a pod template.

Each kind's kubernetes v1.32 strategy (pkg/registry/apps/{deployment,replicaset,statefulset,
daemonset}/strategy.go, pkg/registry/batch/{job,cronjob}/strategy.go,
pkg/registry/core/{replicationcontroller,podtemplate}/strategy.go): ``WarningsOnCreate`` gives
the name warning where the kind's pods are named after it, then
``pod.GetWarningsForPodTemplate`` at the template's path (for jobs through
pkg/api/job/warnings.go ``WarningsForJobSpec``); ``WarningsOnUpdate`` gives the template's
only when the update moved the generation, i.e. changed the spec.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from setpoint.cluster.registry.warnings_podspec import (
    pvc_spec_warnings,
    warnings_for_pod_spec_and_meta,
)
from setpoint.machinery.gofmt import format_v
from setpoint.machinery.names import is_dns1123_label
from setpoint.machinery.objects import Obj

NAME_WARNING = ("metadata.name: this is used in Pod names and hostnames, which can result in "
                "surprising behavior; a DNS label is recommended: {}")
# pkg/api/job/warnings.go completionsSoftLimit, parallelismSoftLimitForUnlimitedCompletions
COMPLETIONS_SOFT_LIMIT = 100_000
PARALLELISM_SOFT_LIMIT = 10_000
INDEXED_JOB_WARNING = ("In Indexed Jobs with a number of completions higher than 10^5 and a "
                       "parallelism higher than 10^4, Kubernetes might not be able to track "
                       "completedIndexes when a big number of indexes fail")
# pkg/registry/batch/cronjob/strategy.go (its path really reads spec.spec.schedule)
CRONJOB_TZ_WARNING = ("cannot use TZ or CRON_TZ in spec.spec.schedule, use timeZone instead, see "
                      "https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for "
                      "more details")


def pod_template_warnings(path: str, template: Obj | None) -> list[str]:
    """pkg/api/pod/warnings.go ``GetWarningsForPodTemplate`` (nothing for a nil template)."""
    if template is None:
        return []
    return warnings_for_pod_spec_and_meta(path, template.get("spec") or {},
                                          template.get("metadata") or {}, template=True)


def job_spec_warnings(path: str, spec: Obj) -> list[str]:
    """pkg/api/job/warnings.go ``WarningsForJobSpec``."""
    warnings = []
    if spec.get("completionMode") == "Indexed":
        completions = spec.get("completions") or 0
        parallelism = spec.get("parallelism") or 0
        if completions > COMPLETIONS_SOFT_LIMIT and parallelism > PARALLELISM_SOFT_LIMIT:
            warnings.append(f"{path}: {INDEXED_JOB_WARNING}")
    return warnings + pod_template_warnings(f"{path}.template", spec.get("template"))


class WorkloadWarnings(NamedTuple):
    """One kind's rules: whether its name is checked, and its template's warnings."""

    checks_name: bool
    template: Callable[[Obj], list[str]]


def _spec(obj: Obj) -> Obj:
    return obj.get("spec") or {}


def _spec_template(obj: Obj) -> list[str]:
    return pod_template_warnings("spec.template", _spec(obj).get("template"))


WORKLOAD_WARNINGS: dict[tuple[str, str], WorkloadWarnings] = {
    ("apps", "Deployment"): WorkloadWarnings(True, _spec_template),
    ("apps", "ReplicaSet"): WorkloadWarnings(True, _spec_template),
    ("", "ReplicationController"): WorkloadWarnings(True, _spec_template),
    ("apps", "StatefulSet"): WorkloadWarnings(False, _spec_template),
    ("apps", "DaemonSet"): WorkloadWarnings(False, _spec_template),
    ("", "PodTemplate"): WorkloadWarnings(
        False, lambda o: pod_template_warnings("template", o.get("template"))),
    ("batch", "Job"): WorkloadWarnings(True, lambda o: job_spec_warnings("spec", _spec(o))),
    ("batch", "CronJob"): WorkloadWarnings(True, lambda o: job_spec_warnings(
        "spec.jobTemplate.spec", (_spec(o).get("jobTemplate") or {}).get("spec") or {})),
}


def claim_template_warnings(obj: Obj, suffix: str) -> list[str]:
    """pkg/registry/apps/statefulset/strategy.go: each volume claim template's
    ``GetWarningsForPersistentVolumeClaimSpec``, at ``spec.volumeClaimTemplates[i]`` on create
    and, as Go spells it, ``spec.volumeClaimTemplates[i].Spec`` on update (every update)."""
    warnings = []
    for i, claim in enumerate(_spec(obj).get("volumeClaimTemplates") or []):
        if isinstance(claim, dict):
            warnings.extend(pvc_spec_warnings(f"spec.volumeClaimTemplates[{i}]{suffix}",
                                              claim.get("spec") or {}))
    return warnings


def workload_warnings_on_create(group: str, kind: str, obj: Obj) -> list[str]:
    rules = WORKLOAD_WARNINGS.get((group, kind))
    if rules is None:
        return []
    warnings = []
    if rules.checks_name and (msgs := is_dns1123_label(
            (obj.get("metadata") or {}).get("name") or "")):
        warnings.append(NAME_WARNING.format(format_v(msgs)))
    warnings += rules.template(obj)
    if (group, kind) == ("apps", "StatefulSet"):
        warnings += claim_template_warnings(obj, "")
    return warnings


def workload_warnings_on_update(group: str, kind: str, new: Obj, old: Obj) -> list[str]:
    rules = WORKLOAD_WARNINGS.get((group, kind))
    if rules is None:
        return []
    warnings = []
    if (group, kind) == ("apps", "DaemonSet"):
        # daemonset/strategy.go asks whether Spec.TemplateGeneration moved, which its
        # PrepareForUpdate does exactly when the template changed
        changed = _spec(new).get("template") != _spec(old).get("template")
    else:
        changed = (new.get("metadata") or {}).get("generation") != (
            old.get("metadata") or {}).get("generation")
    if changed:
        # replicationcontroller/strategy.go passes the stored template where the new one
        # belongs (GetWarningsForPodTemplate(..., oldRc.Spec.Template, newRc.Spec.Template)),
        # so an RC update warns about the template it replaces
        source = old if (group, kind) == ("", "ReplicationController") else new
        warnings = rules.template(source)
    if (group, kind) == ("apps", "StatefulSet"):
        warnings = warnings + claim_template_warnings(new, ".Spec")
    if (group, kind) == ("batch", "CronJob") and "TZ" in (_spec(new).get("schedule") or ""):
        warnings.append(CRONJOB_TZ_WARNING)
    return warnings

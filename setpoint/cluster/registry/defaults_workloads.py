"""The workload kinds' defaults (kubernetes v1.32 pkg/apis/apps/v1/defaults.go and
pkg/apis/batch/v1/defaults.go): Deployments, ReplicaSets, DaemonSets, StatefulSets (their claim
templates defaulted as claims), Jobs and CronJobs, each pod template by
``podspec_defaults.default_pod_template``."""

from __future__ import annotations

from setpoint.cluster.registry.defaults_storage import default_pvc_template
from setpoint.cluster.registry.gozero import default_unset as _set
from setpoint.cluster.registry.gozero import struct_field as _dict
from setpoint.cluster.registry.podspec_defaults import default_pod_template
from setpoint.machinery.objects import Obj


def _spec(obj: Obj) -> Obj:
    return _dict(obj, "spec")


# -- apps/v1 -------------------------------------------------------------------------------

def _template_of(spec: Obj) -> None:
    default_pod_template(_dict(spec, "template"))


def default_deployment(obj: Obj) -> None:
    spec = _spec(obj)
    _set(spec, "replicas", 1)
    strategy = _dict(spec, "strategy")
    _set(strategy, "type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = _dict(strategy, "rollingUpdate")
        _set(rolling, "maxUnavailable", "25%")
        _set(rolling, "maxSurge", "25%")
    _set(spec, "revisionHistoryLimit", 10)
    _set(spec, "progressDeadlineSeconds", 600)
    _template_of(spec)


def default_replica_set(obj: Obj) -> None:
    spec = _spec(obj)
    _set(spec, "replicas", 1)
    _template_of(spec)


def default_daemon_set(obj: Obj) -> None:
    spec = _spec(obj)
    strategy = _dict(spec, "updateStrategy")
    _set(strategy, "type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = _dict(strategy, "rollingUpdate")
        _set(rolling, "maxUnavailable", 1)
        _set(rolling, "maxSurge", 0)
    _set(spec, "revisionHistoryLimit", 10)
    _template_of(spec)


def default_stateful_set(obj: Obj) -> None:
    spec = _spec(obj)
    _set(spec, "podManagementPolicy", "OrderedReady")
    strategy = _dict(spec, "updateStrategy")
    if not strategy.get("type"):
        strategy["type"] = "RollingUpdate"
        _dict(strategy, "rollingUpdate")
    if strategy["type"] == "RollingUpdate" and isinstance(strategy.get("rollingUpdate"), dict):
        _set(strategy["rollingUpdate"], "partition", 0)
    retention = _dict(spec, "persistentVolumeClaimRetentionPolicy")
    _set(retention, "whenDeleted", "Retain")
    _set(retention, "whenScaled", "Retain")
    _set(spec, "replicas", 1)
    _set(spec, "revisionHistoryLimit", 10)
    _template_of(spec)
    for claim in spec.get("volumeClaimTemplates") or []:
        default_pvc_template(claim)


# -- batch/v1 ------------------------------------------------------------------------------

def _job_spec(spec: Obj) -> None:
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    _set(spec, "parallelism", 1)
    if spec.get("backoffLimit") is None:
        spec["backoffLimit"] = 2**31 - 1 if spec.get("backoffLimitPerIndex") is not None else 6
    _set(spec, "completionMode", "NonIndexed")
    _set(spec, "suspend", False)
    failure_policy = spec.get("podFailurePolicy")
    if isinstance(failure_policy, dict):
        for rule in failure_policy.get("rules") or []:
            for pattern in rule.get("onPodConditions") or []:
                _set(pattern, "status", "True")
    _set(spec, "podReplacementPolicy",
         "Failed" if failure_policy is not None else "TerminatingOrFailed")


def job_labels_from_template(obj: Obj) -> None:
    """SetDefaults_Job (pkg/apis/batch/v1/defaults.go): a Job without labels takes its
    template's."""
    template = (obj.get("spec") or {}).get("template") or {}
    labels = (template.get("metadata") or {}).get("labels")
    meta = _dict(obj, "metadata")
    if labels is not None and not meta.get("labels"):
        meta["labels"] = dict(labels)


def default_job(obj: Obj) -> None:
    spec = _spec(obj)
    _job_spec(spec)
    job_labels_from_template(obj)
    _template_of(spec)


def default_cron_job(obj: Obj) -> None:
    spec = _spec(obj)
    _set(spec, "concurrencyPolicy", "Allow")
    _set(spec, "suspend", False)
    _set(spec, "successfulJobsHistoryLimit", 3)
    _set(spec, "failedJobsHistoryLimit", 1)
    job_template = _dict(spec, "jobTemplate")
    _dict(job_template, "metadata").setdefault("creationTimestamp", None)
    _template_of(_dict(job_template, "spec"))

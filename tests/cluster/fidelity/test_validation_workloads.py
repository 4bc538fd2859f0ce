"""Create and update validation of the apps/v1 and batch/v1 workload kinds over HTTP,
compared with kube-apiserver 1.32's (field, reason) causes and messages.

Sources (kubernetes v1.32): pkg/apis/apps/validation/validation.go (ValidateDeploymentStrategy,
ValidateRollingUpdateDeployment, ValidatePositiveIntOrPercent, IsNotMoreThan100Percent,
ValidateStatefulSetSpec, validateRollingUpdateStatefulSet, ValidateDaemonSetUpdateStrategy,
ValidateRollingUpdateDaemonSet, ValidatePodTemplateSpecForReplicaSet);
pkg/apis/batch/validation/validation.go (validateGeneratedSelector, validateJobSpec,
validatePodFailurePolicyRule, validatePodFailurePolicyRuleOnExitCodes, validateSuccessPolicy,
ValidateJobSpecUpdate, validateCompletions, ValidateCronJobCreate, validateCronJobSpec,
validateScheduleFormat, validateTimeZone, ValidateJobTemplateSpec);
pkg/registry/batch/job/strategy.go (generateSelector); github.com/robfig/cron/v3 parser.go.
"""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any

import pytest

from tests.cluster.fidelity.builtin_server import MERGE, Kube

NS = "/apis/{group}/namespaces/default/{plural}"
DEPLOYMENTS = NS.format(group="apps/v1", plural="deployments")
STATEFULSETS = NS.format(group="apps/v1", plural="statefulsets")
DAEMONSETS = NS.format(group="apps/v1", plural="daemonsets")
JOBS = NS.format(group="batch/v1", plural="jobs")
CRONJOBS = NS.format(group="batch/v1", plural="cronjobs")
REQ, INV, UNSUP, FORB, DUP = ("FieldValueRequired", "FieldValueInvalid",
                              "FieldValueNotSupported", "FieldValueForbidden",
                              "FieldValueDuplicate")


def template(restart: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "i"}]}
    if restart:
        spec["restartPolicy"] = restart
    return {"metadata": {"labels": {"app": "x"}}, "spec": spec}


def controller(name: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name},
            "spec": {"selector": {"matchLabels": {"app": "x"}}, "template": template(), **spec}}


def job(name: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"template": template("Never"), **spec}}


def cron_job(name: str, schedule: str = "*/5 * * * *", **spec: Any) -> dict[str, Any]:
    job_spec = spec.pop("jobTemplate", {})
    return {"metadata": {"name": name}, "spec": {
        "schedule": schedule, **spec,
        "jobTemplate": {"spec": {"template": template("Never"), **job_spec}}}}


CASES: list[tuple[str, str, dict[str, Any], dict[tuple[str, str], int]]] = [
    # ValidateRollingUpdateDeployment: not both 0, at most 100%, int-or-percent
    ("d-both-zero", DEPLOYMENTS, controller("d-both-zero", strategy={
        "rollingUpdate": {"maxSurge": 0, "maxUnavailable": "0%"}}),
     {("spec.strategy.rollingUpdate.maxUnavailable", INV): 1}),
    ("d-over-100", DEPLOYMENTS, controller("d-over-100", strategy={
        "rollingUpdate": {"maxUnavailable": "150%", "maxSurge": "x"}}),
     {("spec.strategy.rollingUpdate.maxUnavailable", INV): 1,
      ("spec.strategy.rollingUpdate.maxSurge", INV): 1}),
    # ValidatePodTemplateSpecForReplicaSet: no activeDeadlineSeconds
    ("d-deadline", DEPLOYMENTS, controller("d-deadline", template={
        **template(), "spec": {**template()["spec"], "activeDeadlineSeconds": 5}}),
     {("spec.template.spec.activeDeadlineSeconds", FORB): 1}),
    # ValidateStatefulSetSpec: podManagementPolicy / updateStrategy are Invalid, not
    # NotSupported; rollingUpdate partition and maxUnavailable; ordinals.start
    ("s-policies", STATEFULSETS, controller("s-policies", podManagementPolicy="Sometimes",
                                            updateStrategy={"type": "Whenever"},
                                            ordinals={"start": -1}),
     {("spec.podManagementPolicy", INV): 1, ("spec.updateStrategy", INV): 1,
      ("spec.ordinals.start", INV): 1}),
    ("s-rolling", STATEFULSETS, controller("s-rolling", updateStrategy={
        "type": "RollingUpdate", "rollingUpdate": {"partition": -1, "maxUnavailable": 0}}),
     {("spec.updateStrategy.rollingUpdate.partition", INV): 1,
      ("spec.updateStrategy.rollingUpdate.maxUnavailable", INV): 1}),
    ("s-ondelete-rolling", STATEFULSETS, controller("s-ondelete-rolling", updateStrategy={
        "type": "OnDelete", "rollingUpdate": {"partition": 1}}),
     {("spec.updateStrategy.rollingUpdate", INV): 1}),
    # ValidateStatefulSetName: a DNS label, where the other kinds take a subdomain
    ("s.dotted", STATEFULSETS, controller("s.dotted"), {("metadata.name", INV): 1}),
    ("s-retention", STATEFULSETS, controller("s-retention", persistentVolumeClaimRetentionPolicy={
        "whenDeleted": "Keep"}), {("spec.persistentVolumeClaimRetentionPolicy.whenDeleted",
                                   UNSUP): 1}),
    # ValidateRollingUpdateDaemonSet: exactly one of maxSurge / maxUnavailable non-zero
    ("ds-both", DAEMONSETS, controller("ds-both", updateStrategy={
        "type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 1}}),
     {("spec.updateStrategy.rollingUpdate.maxSurge", INV): 1}),
    ("ds-neither", DAEMONSETS, controller("ds-neither", updateStrategy={
        "type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}}),
     {("spec.updateStrategy.rollingUpdate.maxUnavailable", REQ): 1}),
    # validateJobSpec: the defaulted Always restartPolicy is asked for
    ("j-restart", JOBS, {"metadata": {"name": "j-restart"}, "spec": {"template": template()}},
     {("spec.template.spec.restartPolicy", REQ): 1}),
    # validateGeneratedSelector: a selector without manualSelector
    ("j-selector", JOBS, job("j-selector", selector={"matchLabels": {"app": "x"}}),
     {("spec.selector", INV): 1}),
    # backoffLimitPerIndex / maxFailedIndexes need Indexed; Indexed parallelism cap
    ("j-per-index", JOBS, job("j-per-index", maxFailedIndexes=1),
     {("spec.backoffLimitPerIndex", REQ): 1, ("spec.maxFailedIndexes", INV): 1}),
    ("j-indexed", JOBS, job("j-indexed", completionMode="Indexed", completions=3,
                            parallelism=100_001, backoffLimitPerIndex=1, maxFailedIndexes=4),
     {("spec.parallelism", INV): 1, ("spec.maxFailedIndexes", INV): 1}),
    # podFailurePolicy rules, and the Never restartPolicy it needs
    ("j-failure-policy", JOBS, job("j-failure-policy", template=template("OnFailure"),
                                   podFailurePolicy={"rules": [
                                       {"action": "FailIndex",
                                        "onExitCodes": {"operator": "In", "values": [2, 0, 2],
                                                        "containerName": "nope"}},
                                       {"action": "Ignore"},
                                       {"action": "Count", "onPodConditions": [
                                           {"type": "Bad Type", "status": "Maybe"}]}]}),
     {("spec.podFailurePolicy.rules[0].action", INV): 1,
      ("spec.podFailurePolicy.rules[0].onExitCodes.containerName", INV): 1,
      ("spec.podFailurePolicy.rules[0].onExitCodes.values[1]", INV): 1,
      ("spec.podFailurePolicy.rules[0].onExitCodes.values[2]", DUP): 1,
      ("spec.podFailurePolicy.rules[0].onExitCodes.values", INV): 1,
      ("spec.podFailurePolicy.rules[1]", INV): 1,
      ("spec.podFailurePolicy.rules[2].onPodConditions[0].type", INV): 1,
      ("spec.podFailurePolicy.rules[2].onPodConditions[0].status", UNSUP): 1,
      ("spec.template.spec.restartPolicy", INV): 1}),
    # successPolicy: Indexed only; rules parsed against completions
    ("j-success-nonindexed", JOBS, job("j-success-nonindexed", successPolicy={
        "rules": [{"succeededCount": 1}]}), {("spec.successPolicy", INV): 1}),
    ("j-success", JOBS, job("j-success", completionMode="Indexed", completions=3,
                            successPolicy={"rules": [{"succeededIndexes": "0-1,1",
                                                      "succeededCount": 5}, {}]}),
     {("spec.successPolicy.rules[0].succeededIndexes", INV): 1,
      ("spec.successPolicy.rules[0].succeededCount", INV): 2,
      ("spec.successPolicy.rules[1]", REQ): 1}),
    # ValidateJob: an Indexed job's last pod hostname must be a DNS label
    ("j-hostname-" + "x" * 50, JOBS, job("j-hostname-" + "x" * 50, completionMode="Indexed",
                                        completions=100),
     {("metadata.name", INV): 1}),
    # validateScheduleFormat (robfig/cron ParseStandard) and TZ on create
    ("c-fields", CRONJOBS, cron_job("c-fields", "5 * * *"), {("spec.schedule", INV): 1}),
    ("c-range", CRONJOBS, cron_job("c-range", "61 * * * *"), {("spec.schedule", INV): 1}),
    ("c-tz", CRONJOBS, cron_job("c-tz", "TZ=UTC 0 * * * *"), {("spec.schedule", INV): 1}),
    # validateTimeZone, ValidateJobTemplateSpec, the 52-character name
    ("c-zone", CRONJOBS, cron_job("c-zone", timeZone="Mars/Olympus_Mons",
                                  jobTemplate={"selector": {"matchLabels": {"app": "x"}},
                                               "manualSelector": True}),
     {("spec.timeZone", INV): 1, ("spec.jobTemplate.spec.selector", INV): 1,
      ("spec.jobTemplate.spec.manualSelector", UNSUP): 1}),
    ("c" * 53, CRONJOBS, cron_job("c" * 53), {("metadata.name", INV): 1}),
    ("c-job-rules", CRONJOBS, cron_job("c-job-rules", jobTemplate={"backoffLimitPerIndex": 1}),
     {("spec.jobTemplate.spec.backoffLimitPerIndex", INV): 1}),
]


@pytest.mark.parametrize(("case", "path", "body", "expected"), CASES,
                         ids=[c[0][:20] for c in CASES])
def test_workload_create_is_validated(kube: Kube, case: str, path: str, body: dict[str, Any],
                                      expected: dict[tuple[str, str], int]) -> None:
    assert kube.reject("POST", path, body) == Counter(expected)


def test_workload_messages_are_kubernetes_words(kube: Kube) -> None:
    """The messages of validation.go and robfig/cron, word for word."""
    got = kube.messages("POST", CRONJOBS, cron_job("words-cron", "*/0 * * * *",
                                                   timeZone="Local"))
    assert got == {
        "spec.schedule": ['Invalid value: "*/0 * * * *": step of range should be a positive '
                          "number: */0"],
        "spec.timeZone": ['Invalid value: "Local": timeZone must be an explicit time zone as '
                          "defined in https://www.iana.org/time-zones"]}
    got = kube.messages("POST", CRONJOBS, cron_job("words-every", "@every 5x"))
    assert got == {"spec.schedule": [
        'Invalid value: "@every 5x": failed to parse duration @every 5x: time: unknown unit '
        '"x" in duration "5x"']}
    got = kube.messages("POST", JOBS, {"metadata": {"name": "words-job"},
                                       "spec": {"template": template()}})
    assert got == {"spec.template.spec.restartPolicy": [
        'Required value: valid values: "OnFailure", "Never"']}
    got = kube.messages("POST", DEPLOYMENTS, controller("words-d", strategy={
        "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}}))
    assert got == {"spec.strategy.rollingUpdate.maxUnavailable": [
        'Invalid value: intstr.IntOrString{Type:0, IntVal:0, StrVal:""}: may not be 0 when '
        "`maxSurge` is 0"]}
    got = kube.messages("POST", JOBS, job("words-pfp", podFailurePolicy={
        "rules": [{"action": "Ignore"}]}))
    assert got == {"spec.podFailurePolicy.rules[0]": [
        "Invalid value: specifying one of OnExitCodes and OnPodConditions is required"]}


def test_cron_every_is_go_parse_duration(kube: Kube) -> None:
    """robfig/cron's ``@every`` hands its text to Go's ``time.ParseDuration`` (go/src/time/
    format.go): a component past 1<<63 nanoseconds is an invalid duration, and the error
    quotes with time's own ``quote``, which writes each non-ASCII byte ``\\x``-escaped."""
    got = kube.messages("POST", CRONJOBS, cron_job("every-overflow", "@every 9999999999999h"))
    assert got == {"spec.schedule": [
        'Invalid value: "@every 9999999999999h": failed to parse duration '
        '@every 9999999999999h: time: invalid duration "9999999999999h"']}
    got = kube.messages("POST", CRONJOBS, cron_job("every-unit", "@every 1\u00e9"))
    assert got == {"spec.schedule": [
        'Invalid value: "@every 1\u00e9": failed to parse duration @every 1\u00e9: '
        'time: unknown unit "\\xc3\\xa9" in duration "1\\xc3\\xa9"']}


def test_valid_workloads_are_accepted(kube: Kube) -> None:
    """Every rule above leaves the ordinary objects alone: descriptors and @every schedules,
    a named time zone, percentages, a valid pod failure and success policy."""
    for path, body in [
        (CRONJOBS, cron_job("ok-daily", "@daily", timeZone="Europe/Berlin")),
        (CRONJOBS, cron_job("ok-every", "@every 1h30m")),
        (CRONJOBS, cron_job("ok-names", "0 9-17/2 * JAN-jun mon,FRI")),
        (DEPLOYMENTS, controller("ok-d", strategy={"rollingUpdate": {"maxSurge": "100%",
                                                                     "maxUnavailable": 0}})),
        (STATEFULSETS, controller("ok-s", updateStrategy={"type": "OnDelete"})),
        (JOBS, job("ok-j", completionMode="Indexed", completions=4, backoffLimitPerIndex=1,
                   podFailurePolicy={"rules": [
                       {"action": "FailIndex", "onExitCodes": {"operator": "In",
                                                               "values": [1, 2]}},
                       {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]},
                   successPolicy={"rules": [{"succeededIndexes": "0-2", "succeededCount": 2}]})),
    ]:
        status, answer = kube.call("POST", path, body)
        assert status == 201, answer


def test_job_generated_selector_keeps_user_labels(kube: Kube) -> None:
    """job/strategy.go generateSelector: the template gets all four labels, the selector
    the controller-uid, and a user's other template labels stay."""
    status, answer = kube.call("POST", JOBS, job("gen-sel"))
    assert status == 201, answer
    uid = answer["metadata"]["uid"]
    assert answer["spec"]["selector"] == {
        "matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    assert answer["spec"]["template"]["metadata"]["labels"] == {
        "app": "x", "controller-uid": uid, "batch.kubernetes.io/controller-uid": uid,
        "job-name": "gen-sel", "batch.kubernetes.io/job-name": "gen-sel"}


def test_job_update_rules(kube: Kube) -> None:
    """ValidateJobSpecUpdate: completions of a NonIndexed job and podFailurePolicy are fixed;
    a suspended job that never started may change only its scheduling directives."""
    status, created = kube.call("POST", JOBS, job("upd-j", suspend=True, completions=2))
    assert status == 201, created
    path = f"{JOBS}/upd-j"
    assert kube.reject("PATCH", path, {"spec": {"completions": 3}}, MERGE) == Counter(
        {("spec.completions", INV): 1})
    assert kube.reject("PATCH", path, {"spec": {"podFailurePolicy": {"rules": [
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}}},
        MERGE) == Counter({("spec.podFailurePolicy", INV): 1,
                           # the stored TerminatingOrFailed, refused by ValidateJob and again
                           # by ValidateJobSpecUpdate (both validate the spec)
                           ("spec.podReplacementPolicy", UNSUP): 2})
    status, answer = kube.call("PATCH", path, {"spec": {"template": {"spec": {
        "nodeSelector": {"zone": "a"}}}}}, MERGE)
    assert status == 200, answer
    changed = copy.deepcopy(answer)
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = "other"
    assert kube.reject("PUT", path, changed) == Counter({("spec.template", INV): 1})


def test_indexed_job_scales_completions_with_parallelism(kube: Kube) -> None:
    """validateCompletions (ElasticIndexedJob, GA): an Indexed job's completions change only
    together with its parallelism."""
    status, created = kube.call("POST", JOBS, job("elastic", completionMode="Indexed",
                                                  completions=2, parallelism=2))
    assert status == 201, created
    path = f"{JOBS}/elastic"
    got = kube.messages("PATCH", path, {"spec": {"completions": 3}}, MERGE)
    assert got == {"spec.completions": [
        "Invalid value: 3: can only be modified in tandem with spec.parallelism"]}
    status, answer = kube.call("PATCH", path, {"spec": {"completions": 3, "parallelism": 3}},
                               MERGE)
    assert status == 200, answer


def test_cron_job_update_keeps_an_old_tz_schedule(kube: Kube) -> None:
    """validateCronJobSpec: TZ in the schedule is refused on create, and on update only
    where the stored schedule had none (the update path never reached by a create)."""
    status, created = kube.call("POST", CRONJOBS, cron_job("tz-upd"))
    assert status == 201, created
    got = kube.messages("PATCH", f"{CRONJOBS}/tz-upd",
                        {"spec": {"schedule": "CRON_TZ=UTC 0 * * * *"}}, MERGE)
    assert got == {"spec.schedule": [
        'Invalid value: "CRON_TZ=UTC 0 * * * *": cannot use TZ or CRON_TZ in schedule, use '
        "timeZone field instead"]}


def _warnings(kube: Kube, method: str, path: str, body: Any, content_type: str) -> list[str]:
    resp = kube.http.request(method, path, json=body, headers={"Content-Type": content_type})
    assert resp.status_code in (200, 201), resp.text
    # each header value is `299 - "<text>"`, the text's quotes escaped
    return [v.split(' - "', 1)[1][:-1].replace('\\"', '"')
            for v in resp.headers.get_list("warning")]


def test_stateful_set_claim_templates_warn_about_fractional_bytes(kube: Kube) -> None:
    """pkg/registry/apps/statefulset/strategy.go WarningsOnCreate / WarningsOnUpdate: each
    volume claim template's GetWarningsForPersistentVolumeClaimSpec
    (pkg/api/persistentvolumeclaim/util.go), at spec.volumeClaimTemplates[i] on create and
    at Go's spec.volumeClaimTemplates[i].Spec on every update."""
    body = controller("claims", volumeClaimTemplates=[
        {"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {
            "requests": {"storage": "1.5"}, "limits": {"storage": "2"}}}}])
    assert _warnings(kube, "POST", STATEFULSETS, body, "application/json") == [
        'spec.volumeClaimTemplates[0].resources.requests[storage]: fractional byte value '
        '"1500m" is invalid, must be an integer']
    assert _warnings(kube, "PATCH", f"{STATEFULSETS}/claims",
                     {"metadata": {"labels": {"a": "b"}}}, MERGE) == [
        'spec.volumeClaimTemplates[0].Spec.resources.requests[storage]: fractional byte value '
        '"1500m" is invalid, must be an integer']


HPAS_V2 = NS.format(group="autoscaling/v2", plural="horizontalpodautoscalers")
HPAS_V1 = NS.format(group="autoscaling/v1", plural="horizontalpodautoscalers")
PDBS = NS.format(group="policy/v1", plural="poddisruptionbudgets")
TARGET = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}

POLICY_CASES: list[tuple[str, str, dict[str, Any], dict[tuple[str, str], int]]] = [
    # autoscaling validation.go validateHorizontalPodAutoscalerSpec: replica bounds, target
    ("hpa-bounds", HPAS_V2, {"metadata": {"name": "hpa-bounds"}, "spec": {
        "scaleTargetRef": {"kind": "Deployment", "name": "a/b"}, "minReplicas": 0,
        "maxReplicas": 0}},
     {("spec.minReplicas", INV): 1, ("spec.maxReplicas", INV): 1,
      ("spec.scaleTargetRef.name", INV): 1,
      # validateMetrics: scaling to zero needs an Object or External metric
      ("spec.metrics", FORB): 1}),
    # validateMetricSpec / validateMetricTarget / validateScalingRules
    ("hpa-metrics", HPAS_V2, {"metadata": {"name": "hpa-metrics"}, "spec": {
        "scaleTargetRef": TARGET, "maxReplicas": 3, "metrics": [
            {"type": "Pods", "resource": {"name": "cpu", "target": {
                "type": "Utilization", "averageUtilization": 0}}},
            {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Typo"}}}],
        "behavior": {"scaleUp": {"stabilizationWindowSeconds": 4000, "policies": [
            {"type": "Pods", "value": 0, "periodSeconds": 2000}]}}}},
     {("spec.metrics[0].resource.target.averageUtilization", INV): 1,
      ("spec.metrics[0].pods", REQ): 1,
      ("spec.metrics[1].resource.target.type", INV): 1,
      ("spec.metrics[1].resource.target.averageUtilization", REQ): 1,
      ("spec.behavior.scaleUp.stabilizationWindowSeconds", INV): 1,
      ("spec.behavior.scaleUp.policies[0].value", INV): 1,
      ("spec.behavior.scaleUp.policies[0].periodSeconds", INV): 1}),
    # autoscaling/v1: the CPU target is validated as the converted metric
    ("hpa-v1", HPAS_V1, {"metadata": {"name": "hpa-v1"}, "spec": {
        "scaleTargetRef": TARGET, "maxReplicas": 3, "targetCPUUtilizationPercentage": 0}},
     {("spec.metrics[0].resource.target.averageUtilization", INV): 1}),
    ("hpa-two-sources", HPAS_V2, {"metadata": {"name": "hpa-two-sources"}, "spec": {
        "scaleTargetRef": TARGET, "maxReplicas": 3, "metrics": [
            {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {
                "type": "AverageValue", "averageValue": "10"}},
             "external": {"metric": {"name": "q"}, "target": {"type": "Value", "value": "1"}}}]}},
     {("spec.metrics[0].external", FORB): 1}),
    # policy validation.go ValidatePodDisruptionBudgetSpec
    ("pdb-both", PDBS, {"metadata": {"name": "pdb-both"}, "spec": {
        "minAvailable": 1, "maxUnavailable": "120%", "unhealthyPodEvictionPolicy": "Never"}},
     {("spec", INV): 1, ("spec.maxUnavailable", INV): 1,
      ("spec.unhealthyPodEvictionPolicy", UNSUP): 1}),
    ("pdb-negative", PDBS, {"metadata": {"name": "pdb-negative"}, "spec": {
        "minAvailable": -1, "selector": {"matchLabels": {"a": "b c"}}}},
     {("spec.minAvailable", INV): 1, ("spec.selector.matchLabels", INV): 1}),
]


@pytest.mark.parametrize(("case", "path", "body", "expected"), POLICY_CASES,
                         ids=[c[0] for c in POLICY_CASES])
def test_autoscaler_and_budget_create_is_validated(
        kube: Kube, case: str, path: str, body: dict[str, Any],
        expected: dict[tuple[str, str], int]) -> None:
    assert kube.reject("POST", path, body) == Counter(expected)


def test_pdb_both_set_message(kube: Kube) -> None:
    """ValidatePodDisruptionBudgetSpec's words (the pointers Go prints as addresses are a
    fixed stand-in here)."""
    got = kube.messages("POST", PDBS, {"metadata": {"name": "pdb-words"}, "spec": {
        "minAvailable": 1, "maxUnavailable": 1}})
    assert list(got) == ["spec"]
    assert got["spec"][0].startswith("Invalid value: policy.PodDisruptionBudgetSpec{MinAvailable:")
    assert got["spec"][0].endswith(": minAvailable and maxUnavailable cannot be both set")


def test_valid_autoscaler_and_budget_are_accepted(kube: Kube) -> None:
    for path, body in [
        (HPAS_V2, {"metadata": {"name": "ok-hpa"}, "spec": {
            "scaleTargetRef": TARGET, "minReplicas": 1, "maxReplicas": 5, "metrics": [
                {"type": "Resource", "resource": {"name": "cpu", "target": {
                    "type": "Utilization", "averageUtilization": 60}}}],
            "behavior": {"scaleDown": {"policies": [
                {"type": "Percent", "value": 10, "periodSeconds": 60}]}}}}),
        (HPAS_V1, {"metadata": {"name": "ok-hpa1"}, "spec": {
            "scaleTargetRef": TARGET, "maxReplicas": 2, "targetCPUUtilizationPercentage": 50}}),
        (PDBS, {"metadata": {"name": "ok-pdb"}, "spec": {
            "maxUnavailable": "50%", "selector": {"matchLabels": {"app": "x"}},
            "unhealthyPodEvictionPolicy": "AlwaysAllow"}}),
    ]:
        status, answer = kube.call("POST", path, body)
        assert status == 201, answer


def test_autoscaler_has_no_generation(kube: Kube) -> None:
    """pkg/registry/autoscaling/horizontalpodautoscaler/strategy.go: PrepareForCreate and
    PrepareForUpdate only reset the status, so an autoscaler never gets a generation."""
    status, created = kube.call("POST", HPAS_V2, {"metadata": {"name": "no-gen"}, "spec": {
        "scaleTargetRef": TARGET, "maxReplicas": 2}})
    assert status == 201, created
    assert "generation" not in created["metadata"]
    status, patched = kube.call("PATCH", f"{HPAS_V2}/no-gen", {"spec": {"maxReplicas": 3}},
                                MERGE)
    assert status == 200, patched
    assert "generation" not in patched["metadata"]


REVISIONS = NS.format(group="apps/v1", plural="controllerrevisions")
TEMPLATE_GENERATION = "deprecated.daemonset.template.generation"


def test_controller_revision_rules(kube: Kube) -> None:
    """apps validation.go ValidateControllerRevision / ValidateControllerRevisionUpdate:
    data is mandatory, the revision non-negative, the data fixed once written."""
    got = kube.messages("POST", REVISIONS, {"metadata": {"name": "rev-bad"}, "revision": -1})
    assert got == {"data": ["Required value: data is mandatory"],
                   "revision": ["Invalid value: -1: must be greater than or equal to 0"]}
    status, created = kube.call("POST", REVISIONS, {"metadata": {"name": "rev"},
                                                    "data": {"a": 1}, "revision": 1})
    assert status == 201, created
    assert kube.reject("PATCH", f"{REVISIONS}/rev", {"data": {"a": 2}}, MERGE) == Counter(
        {("data", INV): 1})
    status, answer = kube.call("PATCH", f"{REVISIONS}/rev", {"revision": 2}, MERGE)
    assert status == 200, answer


def test_daemon_set_template_generation(kube: Kube) -> None:
    """pkg/apis/apps/v1/conversion.go carries DaemonSetSpec.TemplateGeneration in the
    deprecated.daemonset.template.generation annotation; daemonset/strategy.go starts it at
    1 and moves it with the template only; ValidateDaemonSetSpecUpdate refuses a client's
    decrement or a bare increment."""
    status, created = kube.call("POST", DAEMONSETS, controller("tg"))
    assert status == 201, created
    assert created["metadata"]["annotations"] == {TEMPLATE_GENERATION: "1"}
    path = f"{DAEMONSETS}/tg"
    status, answer = kube.call("PATCH", path, {"spec": {"minReadySeconds": 5}}, MERGE)
    assert status == 200, answer
    assert answer["metadata"]["annotations"][TEMPLATE_GENERATION] == "1"
    status, answer = kube.call("PATCH", path, {"spec": {"template": {"metadata": {
        "annotations": {"rev": "2"}}}}}, MERGE)
    assert status == 200, answer
    assert answer["metadata"]["annotations"][TEMPLATE_GENERATION] == "2"
    assert answer["metadata"]["generation"] == 3
    got = kube.messages("PATCH", path, {"metadata": {"annotations": {
        TEMPLATE_GENERATION: None}}}, MERGE)
    assert got == {"spec.templateGeneration": [
        "Invalid value: 0: must not be decremented"]}
    got = kube.messages("PATCH", path, {"metadata": {"annotations": {
        TEMPLATE_GENERATION: "7"}}}, MERGE)
    assert got == {"spec.templateGeneration": [
        "Invalid value: 7: must not be incremented without template update"]}


def test_autoscaling_v1_defaults_only_min_replicas(kube: Kube) -> None:
    """pkg/apis/autoscaling/v1/defaults.go SetDefaults_HorizontalPodAutoscaler: minReplicas
    1 and nothing else; an autoscaling/v1 object has no metrics or behavior to default. (The
    cpu 80% target is pkg/apis/autoscaling/v1/conversion.go's: a v1 object without one is
    stored as v2 with the DefaultCPUUtilization metric, which reads back as v1's field.)"""
    status, created = kube.call("POST", HPAS_V1, {"metadata": {"name": "v1-defaults"}, "spec": {
        "scaleTargetRef": TARGET, "maxReplicas": 2}})
    assert status == 201, created
    assert created["spec"] == {"scaleTargetRef": TARGET, "maxReplicas": 2, "minReplicas": 1,
                               "targetCPUUtilizationPercentage": 80}

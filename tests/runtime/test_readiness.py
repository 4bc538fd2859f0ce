"""Readiness of built-in kinds, per kind and state, as kstatus computes it
(sigs.k8s.io/cli-utils pkg/kstatus/status/core.go, status.go) and kubectl rollout status
words it (kubectl pkg/polymorphichelpers/rollout_status.go); then a real Deployment,
StatefulSet, DaemonSet, Job, Pod, Service and PVC on the embedded cluster's workloads."""

from __future__ import annotations

from typing import Any

import pytest

from setpoint.client import Client, Kind
from setpoint.runtime import Readiness, object_readiness, readiness
from setpoint.testing.plugin import Waiter


def obj(api_version: str, kind: str, spec: dict[str, Any] | None = None,
        status: dict[str, Any] | None = None, generation: int = 1,
        **metadata: Any) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind,
            "metadata": {"name": "x", "generation": generation, **metadata},
            "spec": spec or {}, "status": status or {}}


def deploy(status: dict[str, Any], replicas: int = 3, **kw: Any) -> dict[str, Any]:
    return obj("apps/v1", "Deployment", {"replicas": replicas, "progressDeadlineSeconds": 600},
               {"observedGeneration": 1, **status}, **kw)


AVAILABLE = [{"type": "Available", "status": "True"},
             {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"}]
DEPLOY_DONE = {"replicas": 3, "updatedReplicas": 3, "readyReplicas": 3,
               "availableReplicas": 3, "conditions": AVAILABLE}

CASES: list[tuple[str, dict[str, Any], str, str]] = [
    # Deployment (kstatus deploymentConditions; kubectl DeploymentStatusViewer)
    ("deployment ready", deploy(DEPLOY_DONE), "Ready", "DeploymentAvailable"),
    ("deployment spec not observed", deploy(DEPLOY_DONE, generation=2), "InProgress",
     "LatestGenerationNotObserved"),
    ("deployment scaling up", deploy({**DEPLOY_DONE, "replicas": 1}), "InProgress",
     "LessReplicas"),
    ("deployment rolling", deploy({**DEPLOY_DONE, "updatedReplicas": 1}), "InProgress",
     "LessUpdated"),
    ("deployment old pods terminating", deploy({**DEPLOY_DONE, "replicas": 4}), "InProgress",
     "ExtraPods"),
    ("deployment not available", deploy({**DEPLOY_DONE, "availableReplicas": 2}),
     "InProgress", "LessAvailable"),
    ("deployment deadline exceeded", deploy({**DEPLOY_DONE, "conditions": [
        {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
         "message": 'ReplicaSet "x-1" has timed out progressing.'}]}), "Failed",
     "ProgressDeadlineExceeded"),
    ("deployment being deleted", deploy(DEPLOY_DONE, deletionTimestamp="2025-01-01T00:00:00Z"),
     "Terminating", "Terminating"),
    # StatefulSet (kstatus stsConditions; kubectl StatefulSetStatusViewer)
    ("statefulset ready", obj("apps/v1", "StatefulSet", {"replicas": 2}, {
        "observedGeneration": 1, "replicas": 2, "readyReplicas": 2, "currentReplicas": 2,
        "updatedReplicas": 2, "currentRevision": "r1", "updateRevision": "r1"}),
     "Ready", "AllReplicasReady"),
    ("statefulset pods not ready", obj("apps/v1", "StatefulSet", {"replicas": 2}, {
        "observedGeneration": 1, "replicas": 2, "readyReplicas": 1}), "InProgress",
     "LessReady"),
    ("statefulset rolling update", obj("apps/v1", "StatefulSet", {"replicas": 2}, {
        "observedGeneration": 1, "replicas": 2, "readyReplicas": 2, "currentReplicas": 2,
        "updatedReplicas": 1, "currentRevision": "r1", "updateRevision": "r2"}),
     "InProgress", "RevisionMismatch"),
    ("statefulset partitioned", obj("apps/v1", "StatefulSet", {
        "replicas": 3, "updateStrategy": {"type": "RollingUpdate",
                                          "rollingUpdate": {"partition": 1}}}, {
        "observedGeneration": 1, "replicas": 3, "readyReplicas": 3, "updatedReplicas": 1}),
     "InProgress", "PartitionRollout"),
    # DaemonSet (kstatus daemonsetConditions)
    ("daemonset ready", obj("apps/v1", "DaemonSet", {}, {
        "observedGeneration": 1, "desiredNumberScheduled": 3, "currentNumberScheduled": 3,
        "updatedNumberScheduled": 3, "numberAvailable": 3, "numberReady": 3}),
     "Ready", "AllScheduled"),
    ("daemonset not yet counted", obj("apps/v1", "DaemonSet", {}, {}), "InProgress",
     "NoDesiredNumber"),
    ("daemonset updating", obj("apps/v1", "DaemonSet", {}, {
        "observedGeneration": 1, "desiredNumberScheduled": 3, "currentNumberScheduled": 3,
        "updatedNumberScheduled": 2}), "InProgress", "LessUpdated"),
    # Job (kstatus jobConditions)
    ("job complete", obj("batch/v1", "Job", {"completions": 1}, {
        "succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]}),
     "Ready", "JobComplete"),
    ("job failed", obj("batch/v1", "Job", {"completions": 1}, {
        "failed": 6, "conditions": [{"type": "Failed", "status": "True",
                                     "reason": "BackoffLimitExceeded"}]}),
     "Failed", "JobFailed"),
    ("job not started", obj("batch/v1", "Job", {}, {}), "InProgress", "JobNotStarted"),
    # Pod (kstatus podConditions)
    ("pod ready", obj("v1", "Pod", {}, {"phase": "Running", "conditions": [
        {"type": "Ready", "status": "True"}]}), "Ready", "PodReady"),
    ("pod running not ready", obj("v1", "Pod", {}, {"phase": "Running", "conditions": [
        {"type": "Ready", "status": "False"}]}), "InProgress", "PodRunningNotReady"),
    ("pod crash looping", obj("v1", "Pod", {}, {"phase": "Running", "containerStatuses": [
        {"name": "app", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}),
     "Failed", "ContainerCrashLooping"),
    ("pod unschedulable", obj("v1", "Pod", {}, {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}),
     "Failed", "PodUnschedulable"),
    ("pod pending", obj("v1", "Pod", {}, {"phase": "Pending"}), "InProgress", "PodPending"),
    ("pod failed", obj("v1", "Pod", {}, {"phase": "Failed"}), "Failed", "PodFailed"),
    # Service and PVC (kstatus serviceConditions, pvcConditions)
    ("service", obj("v1", "Service", {"clusterIP": "10.0.0.1"}), "Ready", "ServiceReady"),
    ("load balancer without ip", obj("v1", "Service", {"type": "LoadBalancer"}),
     "InProgress", "NoIPAssigned"),
    ("pvc bound", obj("v1", "PersistentVolumeClaim", {}, {"phase": "Bound"}), "Ready",
     "Bound"),
    ("pvc pending", obj("v1", "PersistentVolumeClaim", {}, {"phase": "Pending"}),
     "InProgress", "NotBound"),
    ("pvc lost", obj("v1", "PersistentVolumeClaim", {}, {"phase": "Lost"}), "Failed",
     "ClaimLost"),
    # any other kind: kstatus's generic conditions
    ("custom stalled", obj("x.dev/v1", "Thing", {}, {"conditions": [
        {"type": "Stalled", "status": "True", "reason": "BadSpec"}]}), "Failed", "BadSpec"),
    ("custom not ready", obj("x.dev/v1", "Thing", {}, {"observedGeneration": 1, "conditions": [
        {"type": "Ready", "status": "False", "reason": "Waiting"}]}), "InProgress", "Waiting"),
]


@pytest.mark.parametrize(("case", "body", "state", "reason"), CASES,
                         ids=[c[0] for c in CASES])
def test_each_kind_and_state(case: str, body: dict[str, Any], state: str,
                             reason: str) -> None:
    got = object_readiness(body)
    assert (got.state, got.reason) == (state, reason), got
    assert got.message


def test_a_summary_is_the_worst_state_naming_each_object_in_it() -> None:
    ready = deploy(DEPLOY_DONE)
    rolling = {**deploy({**DEPLOY_DONE, "updatedReplicas": 1}), "metadata": {
        "name": "web", "generation": 1}}
    failing = {**obj("batch/v1", "Job", {}, {"conditions": [
        {"type": "Failed", "status": "True"}]}), "metadata": {"name": "migrate"}}
    assert readiness(ready, rolling) == Readiness(
        "InProgress", "LessUpdated",
        "Deployment web: 1 out of 3 new replicas have been updated")
    summary = readiness(ready, rolling, failing)
    assert (summary.state, summary.reason, summary.failed) == ("Failed", "JobFailed", True)
    assert summary.message.startswith("Job migrate: Job Failed.")
    assert readiness().ready and readiness(ready, ready).message == "2 object(s) ready"


DEPLOYMENT = Kind("apps/v1", "Deployment")


async def test_real_children_on_the_embedded_cluster(
        setpoint_workloads: Any, k8s: Client, wait_for: Waiter) -> None:
    labels = {"app": "web"}
    template = {"metadata": {"labels": labels},
                "spec": {"containers": [{"name": "app", "image": "nginx"}]}}
    created: list[dict[str, Any]] = [
        await k8s.create({"apiVersion": "apps/v1", "kind": "Deployment",
                          "metadata": {"name": "web"}, "spec": {
                              "replicas": 2, "selector": {"matchLabels": labels},
                              "template": template}}),
        await k8s.create({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
                          "spec": {"selector": labels, "ports": [{"port": 80}]}}),
        await k8s.create({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
                          "spec": {"template": {"spec": {
                              "restartPolicy": "Never",
                              "containers": [{"name": "c", "image": "busybox"}]}}}}),
    ]
    # a Deployment just created has not been observed by its controller yet
    assert not object_readiness(created[0]).ready

    async def children() -> Readiness | None:
        fresh = [await k8s.get(Kind(o["apiVersion"], o["kind"]), o["metadata"]["name"])
                 for o in created]
        summary = readiness(*fresh)
        return summary if summary.ready else None

    summary = await wait_for(children)
    assert summary.reason == "AllReady"

    # a new spec: not ready until the controller observes it and rolls it out
    changed = await k8s.patch(DEPLOYMENT, "web", {"spec": {"replicas": 3}})
    assert object_readiness(changed).reason in ("LatestGenerationNotObserved", "LessReplicas")
    await wait_for(DEPLOYMENT, "web", lambda d: object_readiness(d).ready)

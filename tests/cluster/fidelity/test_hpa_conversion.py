"""HorizontalPodAutoscalers served as autoscaling/v1 and autoscaling/v2 from one stored form.

kube-apiserver 1.32 stores them as autoscaling/v2 and converts each request's version
through the internal type: pkg/apis/autoscaling/v1/conversion.go (targetCPUUtilization-
Percentage is the cpu Utilization metric; the other metrics, the current metrics, the
behavior and the conditions ride in ``autoscaling.alpha.kubernetes.io/*`` annotations, the
behavior as the internal type's JSON with Go field names), pkg/apis/autoscaling/v2/
conversion.go and annotations.go (``DropRoundTripHorizontalPodAutoscalerAnnotations``: v2
neither shows nor stores them), pkg/apis/autoscaling/v2/defaults.go (the storage decoder's
defaults: behavior rules, a cpu 80% metric), pkg/apis/autoscaling/v1/defaults.go
(minReplicas). Managed fields keep the version each manager wrote at
(staging/src/k8s.io/apiserver/pkg/endpoints/handlers/fieldmanager).
"""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from kubernetes import client, config

from setpoint.testing import ThreadedCluster
from tests.conftest import kubectl_path

V1 = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers"
V2 = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers"
METRICS = "autoscaling.alpha.kubernetes.io/metrics"
CURRENT = "autoscaling.alpha.kubernetes.io/current-metrics"
BEHAVIOR = "autoscaling.alpha.kubernetes.io/behavior"
CONDITIONS = "autoscaling.alpha.kubernetes.io/conditions"
TARGET = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}
CPU50 = {"type": "Resource", "resource": {"name": "cpu", "target": {
    "type": "Utilization", "averageUtilization": 50}}}
MEMORY = {"type": "Resource", "resource": {"name": "memory", "target": {
    "type": "AverageValue", "averageValue": "100Mi"}}}


class Cluster:
    def __init__(self, shared: ThreadedCluster, http: httpx.Client,
                 configuration: client.Configuration) -> None:
        self.shared, self.http, self.configuration = shared, http, configuration

    def call(self, method: str, path: str, body: Any = None, **params: str) -> Any:
        resp = self.http.request(method, path, json=body, params=params)
        assert resp.status_code < 300, resp.text
        return resp.json()


@pytest.fixture(scope="module")
def kube() -> Iterator[Cluster]:
    shared = ThreadedCluster().start()
    try:
        configuration = client.Configuration()
        config.load_kube_config(config_file=str(shared.kubeconfig),
                                client_configuration=configuration)
        token = str(configuration.auth_settings()["BearerToken"]["value"])
        verify = ssl.create_default_context(cafile=configuration.ssl_ca_cert)
        with httpx.Client(base_url=configuration.host, verify=verify, timeout=30,
                          headers={"Authorization": token}) as http:
            yield Cluster(shared, http, configuration)
    finally:
        shared.stop()


def _v2(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": name},
            "spec": {"scaleTargetRef": TARGET, "maxReplicas": 5, **spec}}


def _v1(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": name},
            "spec": {"scaleTargetRef": TARGET, "maxReplicas": 5, **spec}}


def test_v2_only_fields_ride_through_v1_in_annotations(kube: Cluster) -> None:
    """v1/conversion.go: a v2 object read as v1 has targetCPUUtilizationPercentage and its
    other metrics and behavior in annotations (the behavior is the internal type's JSON);
    a v1 update that carries them back loses nothing, v2 readers never see them, and each
    manager's entry keeps the version it wrote at."""
    created = kube.call("POST", V2, _v2("keep", metrics=[MEMORY, CPU50], behavior={
        "scaleDown": {"stabilizationWindowSeconds": 60}}))
    assert created["metadata"].get("annotations") is None
    seen = kube.call("GET", f"{V1}/keep")
    assert seen["apiVersion"] == "autoscaling/v1"
    assert seen["spec"] == {"scaleTargetRef": {"kind": "Deployment", "name": "d",
                                               "apiVersion": "apps/v1"},
                            "minReplicas": 1, "maxReplicas": 5,
                            "targetCPUUtilizationPercentage": 50}
    assert seen["status"] == {"currentReplicas": 0, "desiredReplicas": 0}
    assert seen["metadata"]["annotations"] == {
        METRICS: '[{"type":"Resource","resource":{"name":"memory",'
                 '"targetAverageValue":"100Mi"}}]',
        BEHAVIOR: '{"ScaleUp":{"StabilizationWindowSeconds":0,"SelectPolicy":"Max",'
                  '"Policies":[{"Type":"Pods","Value":4,"PeriodSeconds":15},'
                  '{"Type":"Percent","Value":100,"PeriodSeconds":15}]},'
                  '"ScaleDown":{"StabilizationWindowSeconds":60,"SelectPolicy":"Max",'
                  '"Policies":[{"Type":"Percent","Value":100,"PeriodSeconds":15}]}}'}

    seen["spec"]["maxReplicas"] = 7
    kube.call("PUT", f"{V1}/keep", seen)
    after = kube.call("GET", f"{V2}/keep")
    assert after["apiVersion"] == "autoscaling/v2"
    assert "annotations" not in after["metadata"]
    assert after["spec"]["maxReplicas"] == 7
    assert after["spec"]["metrics"] == [MEMORY, CPU50]  # (the cpu one is the v1 field: last)
    assert after["spec"]["behavior"] == created["spec"]["behavior"]
    entries = [(e["apiVersion"], e["fieldsV1"].get("f:spec"))
               for e in after["metadata"]["managedFields"]]
    assert ("autoscaling/v1", {"f:maxReplicas": {}}) in entries
    assert {e["apiVersion"] for e in after["metadata"]["managedFields"]} == {
        "autoscaling/v1", "autoscaling/v2"}


def test_v1_object_reads_as_v2_with_the_default_cpu_metric(kube: Cluster) -> None:
    """v1/conversion.go: a v1 object without targetCPUUtilizationPercentage converts with
    the cpu 80% metric (DefaultCPUUtilization); v1/defaults.go gives minReplicas 1."""
    created = kube.call("POST", V1, _v1("plain"))
    assert created["apiVersion"] == "autoscaling/v1"
    assert created["spec"]["targetCPUUtilizationPercentage"] == 80
    assert "annotations" not in created["metadata"]
    seen = kube.call("GET", f"{V2}/plain")
    assert seen["apiVersion"] == "autoscaling/v2"
    assert seen["spec"] == {"scaleTargetRef": {"kind": "Deployment", "name": "d",
                                               "apiVersion": "apps/v1"},
                            "minReplicas": 1, "maxReplicas": 5, "metrics": [{
                                "type": "Resource", "resource": {"name": "cpu", "target": {
                                    "type": "Utilization", "averageUtilization": 80}}}]}
    # stored as autoscaling/v2 protobuf: v2 types.go ``CurrentMetrics []MetricStatus
    # `json:"currentMetrics"``` (no omitempty) has no entries and reads back null
    assert seen["status"] == {"desiredReplicas": 0, "currentMetrics": None}
    assert "targetCPUUtilizationPercentage" not in seen["spec"]


def test_v1_annotations_become_v2_fields_and_v2_cannot_store_them(kube: Cluster) -> None:
    """A v1 writer's round-trip annotations are converted into fields and dropped; a v2
    writer's are dropped (v2/conversion.go DropRoundTripHorizontalPodAutoscalerAnnotations)."""
    body = _v1("annotated", targetCPUUtilizationPercentage=40)
    body["metadata"]["annotations"] = {
        "keep": "me", METRICS: '[{"type":"Pods","pods":{"metricName":"qps",'
                               '"targetAverageValue":"10"}}]',
        BEHAVIOR: '{"ScaleDown":{"SelectPolicy":"Min","Policies":[{"Type":"Pods",'
                  '"Value":1,"PeriodSeconds":60}]}}'}
    kube.call("POST", V1, body)
    seen = kube.call("GET", f"{V2}/annotated")
    assert seen["metadata"]["annotations"] == {"keep": "me"}
    assert seen["spec"]["metrics"] == [
        {"type": "Pods", "pods": {"metric": {"name": "qps"},
                                  "target": {"type": "AverageValue", "averageValue": "10"}}},
        {"type": "Resource", "resource": {"name": "cpu", "target": {
            "type": "Utilization", "averageUtilization": 40}}}]
    assert seen["spec"]["behavior"]["scaleDown"] == {
        "stabilizationWindowSeconds": 300, "selectPolicy": "Min",
        "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]}

    sneaky = _v2("sneaky", metrics=[CPU50])
    sneaky["metadata"]["annotations"] = {METRICS: "[]", CONDITIONS: "[]"}
    assert "annotations" not in kube.call("POST", V2, sneaky)["metadata"]
    assert "annotations" not in kube.call("GET", f"{V1}/sneaky")["metadata"]


def test_status_round_trips_through_v1(kube: Cluster) -> None:
    """v1/conversion.go: currentCPUUtilizationPercentage is the cpu status; the current
    metrics and conditions ride in annotations and come back from a v1 status update; the
    registry's strategy.go keeps the spec on a status update and the status on an update
    (in internal terms, so whatever annotations the v1 body carries)."""
    kube.call("POST", V2, _v2("status", metrics=[MEMORY, CPU50]))
    live = kube.call("GET", f"{V2}/status")
    condition = {"type": "AbleToScale", "status": "True",
                 "lastTransitionTime": "2024-01-01T00:00:00Z", "reason": "ReadyForNewScale",
                 "message": "recommended size matches current size"}
    live["status"] = {"currentReplicas": 2, "desiredReplicas": 2, "currentMetrics": [
        {"type": "Resource", "resource": {"name": "cpu", "current": {
            "averageValue": "250m", "averageUtilization": 42}}},
        {"type": "Resource", "resource": {"name": "memory", "current": {
            "averageValue": "50Mi"}}}], "conditions": [condition]}
    kube.call("PUT", f"{V2}/status/status", live)
    seen = kube.call("GET", f"{V1}/status")
    assert seen["status"] == {"currentReplicas": 2, "desiredReplicas": 2,
                              "currentCPUUtilizationPercentage": 42}
    annotations = seen["metadata"]["annotations"]
    assert json.loads(annotations[CURRENT]) == [
        {"type": "Resource", "resource": {"name": "cpu", "currentAverageUtilization": 42,
                                          "currentAverageValue": "250m"}},
        {"type": "Resource", "resource": {"name": "memory", "currentAverageValue": "50Mi"}}]
    assert json.loads(annotations[CONDITIONS]) == [condition]

    seen["status"]["desiredReplicas"] = 3
    kube.call("PUT", f"{V1}/status/status", seen)
    after = kube.call("GET", f"{V2}/status")
    assert after["status"]["desiredReplicas"] == 3
    assert after["status"]["conditions"] == [condition]
    assert after["status"]["currentMetrics"] == live["status"]["currentMetrics"]
    assert after["spec"]["metrics"] == [MEMORY, CPU50]

    # strategy.go PrepareForUpdate keeps the old status (internal: annotations included)
    # however a v1 writer's body leaves them out
    bare = kube.call("GET", f"{V1}/status")
    del bare["metadata"]["annotations"]
    bare["spec"]["maxReplicas"] = 9
    kube.call("PUT", f"{V1}/status", bare)
    final = kube.call("GET", f"{V2}/status")
    assert final["spec"]["maxReplicas"] == 9
    assert final["spec"]["metrics"] == [CPU50]  # (its spec is the body's)
    assert final["status"] == after["status"]


def test_list_and_watch_answer_in_the_requested_version(kube: Cluster) -> None:
    """LIST and WATCH (with a field selector) convert each object to the request's
    version, whichever version wrote it."""
    rv = kube.call("GET", V2)["metadata"]["resourceVersion"]
    kube.call("POST", V2, _v2("listed", metrics=[CPU50]))
    listed = kube.call("GET", V1, fieldSelector="metadata.name=listed")
    assert listed["apiVersion"] == "autoscaling/v1"
    assert [i["spec"].get("targetCPUUtilizationPercentage") for i in listed["items"]] == [50]
    with kube.http.stream("GET", V1, params={
            "watch": "1", "resourceVersion": rv, "fieldSelector": "metadata.name=listed",
            "timeoutSeconds": "30"}) as resp:
        event = json.loads(next(resp.iter_lines()))
    assert event["type"] == "ADDED"
    assert event["object"]["apiVersion"] == "autoscaling/v1"
    assert event["object"]["spec"]["targetCPUUtilizationPercentage"] == 50
    assert "metrics" not in event["object"]["spec"]


def _kubeconfig(kube: Cluster, tmp_path: Path) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(kube.shared.kubeconfig.read_text())
    path.chmod(0o600)
    return path


def _kubectl(kube: Cluster, tmp_path: Path, *args: str) -> str:
    done = subprocess.run(
        [kubectl_path(), "--kubeconfig", str(_kubeconfig(kube, tmp_path)), "--cache-dir",
         str(tmp_path / f"cache-{uuid.uuid4().hex[:8]}"), "-n", "default", *args],
        capture_output=True, text=True, timeout=60,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_kubectl_autoscale_writes_v1_and_get_reads_v2(kube: Cluster, tmp_path: Path) -> None:
    """kubectl 1.32 ``autoscale`` creates the object at autoscaling/v1 (its managed fields
    entry says so: staging/src/k8s.io/kubectl/pkg/cmd/autoscale builds a v1 object) and
    ``get hpa`` reads the preferred v2: the targetCPUUtilizationPercentage is the cpu
    Utilization metric there."""
    _kubectl(kube, tmp_path, "create", "deployment", "web", "--image=registry.k8s.io/pause")
    _kubectl(kube, tmp_path, "autoscale", "deployment", "web", "--cpu-percent=50",
             "--max=4")
    v2 = json.loads(_kubectl(kube, tmp_path, "get", "hpa", "web", "-o", "json",
                             "--show-managed-fields"))
    assert v2["apiVersion"] == "autoscaling/v2"
    assert v2["spec"]["metrics"] == [CPU50]
    assert v2["metadata"]["managedFields"][0]["apiVersion"] == "autoscaling/v1"
    assert "annotations" not in v2["metadata"]
    v1 = json.loads(_kubectl(kube, tmp_path, "get", "horizontalpodautoscalers.v1.autoscaling",
                             "web", "-o", "json"))
    assert v1["apiVersion"] == "autoscaling/v1"
    assert v1["spec"]["targetCPUUtilizationPercentage"] == 50
    assert "metrics" not in v1["spec"]


def test_python_client_v1_and_v2_apis_share_one_object(kube: Cluster) -> None:
    """The official client's AutoscalingV1Api and AutoscalingV2Api on one object: a v2
    patch adding a metric survives a v1 replace (the annotation carries it)."""
    api = client.ApiClient(kube.configuration)
    v1, v2 = client.AutoscalingV1Api(api), client.AutoscalingV2Api(api)
    v1.create_namespaced_horizontal_pod_autoscaler("default", client.V1HorizontalPodAutoscaler(
        metadata=client.V1ObjectMeta(name="py"), spec=client.V1HorizontalPodAutoscalerSpec(
            scale_target_ref=client.V1CrossVersionObjectReference(**TARGET),
            max_replicas=3, target_cpu_utilization_percentage=60)))
    def read(api_version: Any) -> dict[str, Any]:
        got = api_version.read_namespaced_horizontal_pod_autoscaler("py", "default")
        return dict(api.sanitize_for_serialization(got))  # type: ignore[no-untyped-call]

    assert read(v2)["spec"]["metrics"] == [{"type": "Resource", "resource": {
        "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}}]
    v2.patch_namespaced_horizontal_pod_autoscaler("py", "default", {
        "spec": {"metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
            "type": "Utilization", "averageUtilization": 60}}}, MEMORY]}})
    old = v1.read_namespaced_horizontal_pod_autoscaler("py", "default")
    seen = read(v1)
    assert seen["spec"]["targetCPUUtilizationPercentage"] == 60
    assert METRICS in seen["metadata"]["annotations"]
    old.spec.max_replicas = 6
    v1.replace_namespaced_horizontal_pod_autoscaler("py", "default", old)
    after = read(v2)
    assert after["spec"]["maxReplicas"] == 6
    assert [m["resource"]["name"] for m in after["spec"]["metrics"]] == ["memory", "cpu"]
    assert "annotations" not in after["metadata"]


def test_v1_annotation_metrics_and_behavior_are_validated(kube: Cluster) -> None:
    """validation.go validates the internal object, so a v1 writer's annotation metrics
    and behavior are validated at their internal paths (the cpu target after them)."""
    body = _v1("invalid", targetCPUUtilizationPercentage=0)
    body["metadata"]["annotations"] = {
        METRICS: '[{"type":"Pods","pods":{"metricName":"qps","targetAverageValue":"0"}}]',
        BEHAVIOR: '{"ScaleUp":{"StabilizationWindowSeconds":-1}}'}
    resp = kube.http.post(V1, json=body)
    assert resp.status_code == 422, resp.text
    fields = {c["field"] for c in resp.json()["details"]["causes"]}
    assert fields == {"spec.metrics[0].pods.target.averageValue",
                      "spec.metrics[1].resource.target.averageUtilization",
                      "spec.behavior.scaleUp.stabilizationWindowSeconds",
                      "spec.behavior.scaleUp.policies"}


def test_v1_annotation_go_cannot_read_is_a_bad_request(kube: Cluster) -> None:
    """A round-trip annotation json.Unmarshal cannot read fails v1/conversion.go's
    conversion, which the decoder answers with a 400 BadRequest (nothing stored)."""
    body = _v1("unreadable")
    body["metadata"]["annotations"] = {METRICS: '[1, "x"]'}
    resp = kube.http.post(V1, json=body)
    assert resp.status_code == 400, resp.text
    assert resp.json()["reason"] == "BadRequest"
    assert resp.json()["message"] == ("json: cannot unmarshal number into Go value of type "
                                      "v1.MetricSpec")
    assert kube.http.get(f"{V2}/unreadable").status_code == 404

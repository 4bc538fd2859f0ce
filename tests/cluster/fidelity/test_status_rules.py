"""The ``/status`` validation of ReplicationControllers, PodDisruptionBudgets,
HorizontalPodAutoscalers and Ingresses, as their 1.32 status strategies run it (the status
rules alone).

Sources: pkg/apis/core/validation/validation.go ``ValidateReplicationControllerStatusUpdate``
(``ValidateReplicationControllerStatus``); pkg/apis/policy/validation/validation.go
``ValidatePodDisruptionBudgetStatusUpdate`` (apimachinery ``ValidateConditions``, then the
counts; policy/v1 only); pkg/apis/autoscaling/validation/validation.go
``ValidateHorizontalPodAutoscalerStatusUpdate`` (whose second path Go spells
``status.desiredReplicasa``); pkg/apis/networking/validation/validation.go
``ValidateIngressStatusUpdate`` (1.32: ParseIPSloppy, "must be a valid IP address").
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.cluster.conftest import API

pytestmark = pytest.mark.asyncio(loop_scope="module")

NS = "default"
NEGATIVE = "must be greater than or equal to 0"


async def _status_causes(api: API, collection: str, body: dict[str, Any],
                         status: dict[str, Any]) -> list[tuple[str, str]]:
    code, created = await api.post(collection, body)
    assert code == 201, created
    code, out = await api.put(f"{collection}/{body['metadata']['name']}/status",
                              {**created, "status": status})
    assert (code, out["reason"]) == (422, "Invalid"), out
    return [(c["field"], c["message"]) for c in out["details"]["causes"]]


async def test_replication_controller_status_counts(module_api: API) -> None:
    template = {"metadata": {"labels": {"app": "rc"}},
                "spec": {"containers": [{"name": "c", "image": "i"}]}}
    causes = await _status_causes(
        module_api, f"/api/v1/namespaces/{NS}/replicationcontrollers",
        {"metadata": {"name": "rc-status"},
         "spec": {"replicas": 1, "selector": {"app": "rc"}, "template": template}},
        {"replicas": 2, "fullyLabeledReplicas": 3, "readyReplicas": 1,
         "availableReplicas": 2, "observedGeneration": -1})
    assert causes == [
        ("status.observedGeneration", f"Invalid value: -1: {NEGATIVE}"),
        ("status.fullyLabeledReplicas", "Invalid value: 3: cannot be greater than "
                                        "status.replicas"),
        ("status.availableReplicas", "Invalid value: 2: cannot be greater than readyReplicas")]


async def test_pod_disruption_budget_status_conditions_and_counts(module_api: API) -> None:
    causes = await _status_causes(
        module_api, f"/apis/policy/v1/namespaces/{NS}/poddisruptionbudgets",
        {"metadata": {"name": "pdb-status"},
         "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "x"}}}},
        {"disruptionsAllowed": -1, "currentHealthy": 0, "desiredHealthy": 0,
         "expectedPods": -2, "conditions": [
             {"type": "DisruptionAllowed", "status": "Maybe", "reason": "",
              "lastTransitionTime": "2024-01-01T00:00:00Z", "message": ""}]})
    assert causes == [
        ("status.conditions[0].status",
         'Unsupported value: "Maybe": supported values: "False", "True", "Unknown"'),
        ("status.conditions[0].reason", "Required value: must be set"),
        ("status.disruptionsAllowed", f"Invalid value: -1: {NEGATIVE}"),
        ("status.expectedPods", f"Invalid value: -2: {NEGATIVE}")]


async def test_horizontal_pod_autoscaler_status_counts(module_api: API) -> None:
    causes = await _status_causes(
        module_api, f"/apis/autoscaling/v2/namespaces/{NS}/horizontalpodautoscalers",
        {"metadata": {"name": "hpa-status"},
         "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                                     "name": "d"}, "minReplicas": 1, "maxReplicas": 3}},
        {"currentReplicas": -1, "desiredReplicas": -2})
    assert causes == [("status.currentReplicas", f"Invalid value: -1: {NEGATIVE}"),
                      ("status.desiredReplicasa", f"Invalid value: -2: {NEGATIVE}")]


async def test_ingress_status_load_balancer_is_validated(module_api: API) -> None:
    causes = await _status_causes(
        module_api, f"/apis/networking.k8s.io/v1/namespaces/{NS}/ingresses",
        {"metadata": {"name": "ing-status"}, "spec": {"defaultBackend": {
            "service": {"name": "s", "port": {"number": 80}}}}},
        {"loadBalancer": {"ingress": [{"ip": "300.1.1.1"}, {"hostname": "1.2.3.4"},
                                      {"ip": "10.0.0.1", "hostname": "lb.example.com"}]}})
    assert causes == [
        ("status.loadBalancer.ingress[0].ip",
         'Invalid value: "300.1.1.1": must be a valid IP address'),
        ("status.loadBalancer.ingress[1].hostname",
         'Invalid value: "1.2.3.4": must be a DNS name, not an IP address')]


async def test_node_fields_of_removed_and_disabled_features_are_dropped(
        module_api: API) -> None:
    """pkg/registry/core/node/strategy.go 1.32: ``spec.configSource`` is dropped on create
    (DynamicKubeletConfig is gone), ``status.config`` and ``status.features``
    (SupplementalGroupsPolicy, alpha) from a status write while the node does not use
    them; what else the write brings stays."""
    source = {"configMap": {"name": "c", "namespace": "kube-system",
                            "kubeletConfigKey": "k"}}
    code, node = await module_api.post("/api/v1/nodes", {
        "metadata": {"name": "node-dropped"},
        "spec": {"configSource": source, "unschedulable": True},
        "status": {"features": {"supplementalGroupsPolicy": True}}})
    assert code == 201, node
    assert "configSource" not in node["spec"] and node["spec"]["unschedulable"] is True
    assert "features" not in node["status"]
    code, node = await module_api.put("/api/v1/nodes/node-dropped/status", {**node, "status": {
        "config": {"active": source}, "features": {"supplementalGroupsPolicy": True},
        "capacity": {"cpu": "2"}}})
    assert code == 200, node
    assert "config" not in node["status"] and "features" not in node["status"]
    assert node["status"]["capacity"] == {"cpu": "2"}

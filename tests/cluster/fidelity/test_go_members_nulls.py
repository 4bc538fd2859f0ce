"""Slices and maps without ``omitempty`` read back ``null`` from a built-in object's storage.

kube-apiserver stores built-in objects as protobuf: k8s.io/apiserver pkg/server/storage/
storage_codec.go ``NewStorageCodec`` encodes with the ``application/vnd.kubernetes.protobuf``
serializer (``--storage-media-type``'s default), and etcd3's store (pkg/storage/etcd3/store.go
``Create``/``GuaranteedUpdate``) answers a write, a read, a LIST and every watch event with
the object decoded back from those bytes; a dry run copies through the same codec
(pkg/registry/generic/registry/dryrun.go ``copyInto``). Protobuf has no nil/empty distinction:
a repeated field or map without entries decodes to a nil Go slice or map, which
``encoding/json`` writes as ``null`` unless the json tag says ``omitempty``. So for k8s.io/api
v0.32.0's

- rbac/v1/types.go ``Rules []PolicyRule `json:"rules"``` (ClusterRole),
- autoscaling/v2/types.go ``CurrentMetrics []MetricStatus `json:"currentMetrics"```
  (HorizontalPodAutoscalerStatus, reached through the status struct the strategy resets),
- flowcontrol/v1/types.go ``Namespaces []string `json:"namespaces"``` (ResourcePolicyRule,
  reached inside a list element),

the member reads ``null`` whether the client sent ``[]`` or nothing. A custom resource is
stored as JSON (apiextensions-apiserver's unstructured codec) and keeps its ``[]``; an answer
that is not stored (a SelfSubjectRulesReview, built by
pkg/registry/authorization/selfsubjectrulesreview/rest.go with ``make([]ResourceRule, ...)``)
keeps the lists its handler made.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from tests.cluster.fidelity.builtin_server import Kube
from tests.waiting import wait_for

ROLES = "/apis/rbac.authorization.k8s.io/v1/clusterroles"
HPAS = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers"
FLOW_SCHEMAS = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas"


def _role(name: str, **extra: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, **extra}


@pytest.mark.parametrize("sent", [{}, {"rules": []}], ids=["absent", "empty"])
def test_cluster_role_rules_read_back_null(kube: Kube, sent: dict[str, Any]) -> None:
    name = f"nulls-role-{len(sent)}"
    status, dry = kube.call("POST", f"{ROLES}?dryRun=All", _role(name, **sent))
    assert status == 201 and dry["rules"] is None, dry
    status, created = kube.call("POST", ROLES, _role(name, **sent))
    assert status == 201, created
    try:
        assert created["rules"] is None, created
        status, read = kube.call("GET", f"{ROLES}/{name}")
        assert read["rules"] is None, read
        status, listed = kube.call("GET", f"{ROLES}?fieldSelector=metadata.name%3D{name}")
        assert [item["rules"] for item in listed["items"]] == [None], listed
        # the watch's initial event: the stored object, decoded as every reader gets it
        with kube.http.stream("GET", f"{ROLES}?watch=1&fieldSelector=metadata.name%3D{name}"
                              "&timeoutSeconds=5") as resp:
            event = json.loads(next(resp.iter_lines()))
        assert event["type"] == "ADDED" and event["object"]["rules"] is None, event
        # an update with [] again stays null
        read["rules"] = []
        status, updated = kube.call("PUT", f"{ROLES}/{name}", read)
        assert status == 200 and updated["rules"] is None, updated
    finally:
        kube.call("DELETE", f"{ROLES}/{name}")


def test_hpa_status_current_metrics_reads_back_null(kube: Kube) -> None:
    body = {"metadata": {"name": "nulls-hpa"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                                        "name": "absent"},
                     "minReplicas": 1, "maxReplicas": 2}}
    status, created = kube.call("POST", HPAS, body)
    assert status == 201, created
    try:
        assert created["status"]["currentMetrics"] is None, created
        created["status"] = {"desiredReplicas": 1, "currentReplicas": 1, "currentMetrics": []}
        status, written = kube.call("PUT", f"{HPAS}/nulls-hpa/status", created)
        assert status == 200 and written["status"]["currentMetrics"] is None, written
    finally:
        kube.call("DELETE", f"{HPAS}/nulls-hpa")


def test_flow_schema_rule_namespaces_read_back_null(kube: Kube) -> None:
    rule = {"verbs": ["get"], "apiGroups": [""], "resources": ["nodes"], "clusterScope": True}
    body = {"metadata": {"name": "nulls-fs"},
            "spec": {"priorityLevelConfiguration": {"name": "global-default"},
                     "matchingPrecedence": 9000,
                     "rules": [{"subjects": [{"kind": "Group", "group": {"name": "nulls"}}],
                                "resourceRules": [rule, {**rule, "namespaces": []}]}]}}
    status, created = kube.call("POST", FLOW_SCHEMAS, body)
    assert status == 201, created
    try:
        rules = created["spec"]["rules"][0]["resourceRules"]
        assert [r["namespaces"] for r in rules] == [None, None], created
        # nonResourceRules is omitempty: absent, not null
        assert "nonResourceRules" not in created["spec"]["rules"][0], created
    finally:
        kube.call("DELETE", f"{FLOW_SCHEMAS}/nulls-fs")


def test_custom_resource_keeps_its_empty_list(kube: Kube) -> None:
    """A custom resource is stored as JSON: ``[]`` stays ``[]``."""
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "nullwidgets.nulls.example.com"},
           "spec": {"group": "nulls.example.com", "scope": "Namespaced",
                    "names": {"plural": "nullwidgets", "kind": "NullWidget"},
                    "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                        "openAPIV3Schema": {"type": "object", "properties": {"spec": {
                            "type": "object", "properties": {"items": {
                                "type": "array", "items": {"type": "string"}}}}}}}}]}}
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    status, created = kube.call("POST", crds, crd)
    assert status == 201, created
    path = "/apis/nulls.example.com/v1/namespaces/default/nullwidgets"
    try:
        asyncio.run(wait_for(lambda: kube.call("GET", path)[0] == 200))  # the CRD served
        status, cr = kube.call("POST", path, {"apiVersion": "nulls.example.com/v1",
                                              "kind": "NullWidget",
                                              "metadata": {"name": "w"},
                                              "spec": {"items": []}})
        assert status == 201 and cr["spec"]["items"] == [], cr
    finally:
        kube.call("DELETE", f"{crds}/nullwidgets.nulls.example.com")


def test_rules_review_answer_keeps_its_lists(kube: Kube) -> None:
    """A SelfSubjectRulesReview is not stored: its handler's lists stay lists."""
    status, review = kube.call(
        "POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
        {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
         "spec": {"namespace": "default"}})
    assert status == 201, review
    assert isinstance(review["status"]["resourceRules"], list), review
    assert isinstance(review["status"]["nonResourceRules"], list), review

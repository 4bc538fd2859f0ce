"""The pod fields of feature gates off in kube-apiserver 1.32, dropped from every pod template
as from pods.

Sources: pkg/api/pod/util.go (DropDisabledTemplateFields, dropDisabledFields); the
PrepareForCreate and PrepareForUpdate of pkg/registry/apps/{deployment,replicaset,
statefulset,daemonset}/strategy.go, pkg/registry/batch/{job,cronjob}/strategy.go and
pkg/registry/core/{replicationcontroller,podtemplate}/strategy.go, each calling it on the
kind's template (the CronJob's inside spec.jobTemplate).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.cluster.fidelity.builtin_server import MERGE, Kube

NS = "/namespaces/default"
LABELS = {"app": "gated"}
# UserNamespacesSupport, SupplementalGroupsPolicy, ClusterTrustBundleProjection
GATED_SPEC: dict[str, Any] = {
    "containers": [{"name": "c", "image": "i"}], "restartPolicy": "Always",
    "hostUsers": False, "securityContext": {"supplementalGroupsPolicy": "Strict"},
    "volumes": [{"name": "bundle", "projected": {"sources": [
        {"clusterTrustBundle": {"signerName": "example.com/signer", "path": "ca.pem"}},
        {"configMap": {"name": "c"}}]}}]}


def _template(restart: str = "Always") -> dict[str, Any]:
    spec = copy.deepcopy(GATED_SPEC)
    spec["restartPolicy"] = restart
    return {"metadata": {"labels": LABELS}, "spec": spec}


def _selector() -> dict[str, Any]:
    return {"selector": {"matchLabels": LABELS}}


# (collection, body without metadata, path to the template)
KINDS: list[tuple[str, dict[str, Any], tuple[str, ...]]] = [
    (f"/apis/apps/v1{NS}/deployments", {"spec": {**_selector(), "template": _template()}},
     ("spec", "template")),
    (f"/apis/apps/v1{NS}/replicasets", {"spec": {**_selector(), "template": _template()}},
     ("spec", "template")),
    (f"/apis/apps/v1{NS}/statefulsets",
     {"spec": {**_selector(), "serviceName": "s", "template": _template()}},
     ("spec", "template")),
    (f"/apis/apps/v1{NS}/daemonsets", {"spec": {**_selector(), "template": _template()}},
     ("spec", "template")),
    (f"/apis/batch/v1{NS}/jobs", {"spec": {"template": _template("Never")}},
     ("spec", "template")),
    (f"/apis/batch/v1{NS}/cronjobs", {"spec": {"schedule": "* * * * *", "jobTemplate": {
        "spec": {"template": _template("Never")}}}},
     ("spec", "jobTemplate", "spec", "template")),
    (f"/api/v1{NS}/replicationcontrollers",
     {"spec": {"selector": LABELS, "template": _template()}}, ("spec", "template")),
    (f"/api/v1{NS}/podtemplates", {"template": _template()}, ("template",)),
]


def _at(obj: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    for key in path:
        obj = obj[key]
    return obj


def _assert_dropped(spec: dict[str, Any]) -> None:
    assert "hostUsers" not in spec
    assert "supplementalGroupsPolicy" not in spec.get("securityContext", {})
    assert spec["volumes"][0]["projected"]["sources"][0] == {}


@pytest.mark.parametrize(("collection", "body", "path"), KINDS,
                         ids=[k[0].rsplit("/", 1)[-1] for k in KINDS])
def test_gated_fields_are_dropped_from_pod_templates(kube: Kube, collection: str,
                                                     body: dict[str, Any],
                                                     path: tuple[str, ...]) -> None:
    name = f"gated-{collection.rsplit('/', 1)[-1]}"
    status, created = kube.call("POST", collection, {"metadata": {"name": name}, **body})
    assert status == 201, created
    _assert_dropped(_at(created, path)["spec"])
    # an update that brings them back loses them too: the stored template did not use them
    patch: dict[str, Any] = {"hostUsers": False,
                             "securityContext": {"supplementalGroupsPolicy": "Strict"}}
    for key in reversed((*path, "spec")):
        patch = {key: patch}
    status, updated = kube.call("PATCH", f"{collection}/{name}", patch, MERGE)
    assert status == 200, updated
    spec = _at(updated, path)["spec"]
    assert "hostUsers" not in spec
    assert "supplementalGroupsPolicy" not in spec.get("securityContext", {})

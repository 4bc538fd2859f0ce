"""Admission webhooks as kubectl users meet them: configured with kubectl, answered over HTTPS.

The webhook server runs in the test process on loopback; the cluster is ``setpoint cluster
up`` in its own process (a module of its own, so its webhook configurations reach no other
test).
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.e2e.conftest import Kubectl
from tests.hookserver import Hooks, ThreadedHooks

# admission of ConfigMaps only: no nodes, kubelets or workload controllers needed
WORKLOADS = False

Obj = dict[str, Any]


@pytest.fixture
def hooks(tmp_path: Path) -> Iterator[Hooks]:
    threaded = ThreadedHooks(tmp_path / "hooks")
    yield threaded.start()
    threaded.stop()


def configuration(kind: str, name: str, hooks: Hooks, path: str, namespace: str) -> str:
    return orjson.dumps({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": f"{kind}WebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": [{
            "name": f"{name}.example.com", "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "clientConfig": {"url": hooks.url(path), "caBundle": hooks.ca_bundle},
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
            "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"],
                       "operations": ["CREATE", "UPDATE"]}],
        }],
    }).decode()


def test_kubectl_shows_a_webhooks_denial_and_its_mutations(
        any_kubectl: Kubectl, namespace: str, hooks: Hooks) -> None:
    kubectl = any_kubectl
    def validate(request: Obj) -> Obj:
        data = request["object"].get("data") or {}
        if data.get("size") == "huge":
            return {"allowed": False, "status": {"code": 422, "reason": "Invalid",
                                                 "message": "size: huge is too big"}}
        return {"allowed": True, "warnings": ["size is not checked on updates"]}

    def mutate(request: Obj) -> Obj:
        patch = [{"op": "add", "path": "/metadata/labels", "value": {"team": "storage"}}]
        return {"allowed": True, "patchType": "JSONPatch",
                "patch": base64.b64encode(orjson.dumps(patch)).decode()}

    hooks.on("/validate", validate)
    hooks.on("/mutate", mutate)
    vname, mname = f"sizes-{namespace}", f"team-{namespace}"
    kubectl.run("apply", "-f", "-", stdin=configuration("Validating", vname, hooks,
                                                        "/validate", namespace))
    kubectl.run("apply", "-f", "-", stdin=configuration("Mutating", mname, hooks, "/mutate",
                                                        namespace))
    try:
        denied = kubectl.run("create", "configmap", "big", "-n", namespace,
                             "--from-literal=size=huge", ok=False)
        assert f'admission webhook "{vname}.example.com" denied the request: size: huge is ' \
               "too big" in denied.stderr

        created = kubectl.run("create", "configmap", "small", "-n", namespace,
                              "--from-literal=size=small")
        assert "Warning: size is not checked on updates" in created.stderr
        stored = kubectl.json("get", "configmap", "small", "-n", namespace)
        assert stored["metadata"]["labels"] == {"team": "storage"}
        assert [c["review"]["request"]["operation"] for c in hooks.calls["/mutate"]] == \
            ["CREATE", "CREATE"]  # the denied create was mutated first
    finally:
        kubectl.run("delete", "validatingwebhookconfiguration", vname, ok=None)
        kubectl.run("delete", "mutatingwebhookconfiguration", mname, ok=None)

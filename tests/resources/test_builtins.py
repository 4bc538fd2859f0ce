"""Built-in kinds: typed models round-trip what a real server returns, field for field."""

from __future__ import annotations

from typing import Any

import pytest

from setpoint.cluster.registry.builtin import _BUILTINS
from setpoint.resources._codegen import RESOURCES
from setpoint.resources._resource import Resource
from setpoint.resources.models import (
    ClusterRole,
    ClusterRoleBinding,
    ConfigMap,
    DaemonSet,
    Deployment,
    Event,
    Ingress,
    Job,
    Lease,
    Namespace,
    NetworkPolicy,
    Node,
    PersistentVolumeClaim,
    Pod,
    PodDisruptionBudget,
    ReplicaSet,
    Role,
    RoleBinding,
    Secret,
    Service,
    ServiceAccount,
    StatefulSet,
    events_v1,
)
from setpoint.testing import present

from .conftest import API

LABELS = {"app": "web"}
POD_SPEC = {"containers": [{"name": "web", "image": "nginx:1.27",
                            "ports": [{"containerPort": 80}],
                            "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}},
                            "env": [{"name": "A", "value": "1"}]}]}
TEMPLATE = {"metadata": {"labels": LABELS}, "spec": POD_SPEC}
SELECTOR = {"matchLabels": LABELS}
RBAC_RULES = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]
SUBJECTS = [{"kind": "ServiceAccount", "name": "default", "namespace": "default"}]

BODIES: list[tuple[type[Resource], dict[str, Any]]] = [
    (Pod, {"spec": POD_SPEC}),
    (Service, {"spec": {"selector": LABELS, "ports": [{"port": 80, "targetPort": "http"}]}}),
    (ConfigMap, {"data": {"k": "v"}, "binaryData": {"b": "AAE="}}),
    (Secret, {"stringData": {"k": "v"}, "type": "Opaque"}),
    (Deployment, {"spec": {"replicas": 2, "selector": SELECTOR, "template": TEMPLATE}}),
    (StatefulSet, {"spec": {"serviceName": "web", "selector": SELECTOR, "template": TEMPLATE}}),
    (DaemonSet, {"spec": {"selector": SELECTOR, "template": TEMPLATE}}),
    (ReplicaSet, {"spec": {"selector": SELECTOR, "template": TEMPLATE}}),
    (Job, {"spec": {"template": {"spec": {**POD_SPEC, "restartPolicy": "Never"}}}}),
    (Namespace, {}),
    (ServiceAccount, {}),
    (Lease, {"spec": {"holderIdentity": "me", "leaseDurationSeconds": 15,
                      "renewTime": "2024-01-01T00:00:00.000000Z"}}),
    (Event, {"involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
             "reason": "Started", "message": "hello", "type": "Normal"}),
    (events_v1.Event, {"eventTime": "2024-01-01T00:00:00.000000Z", "reportingController": "x/y",
                       "reportingInstance": "i", "action": "Do", "reason": "Did",
                       "regarding": {"kind": "Pod", "name": "p"}, "type": "Normal"}),
    (Role, {"rules": RBAC_RULES}),
    (ClusterRole, {"rules": RBAC_RULES}),
    (RoleBinding, {"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                               "name": "r"}, "subjects": SUBJECTS}),
    (ClusterRoleBinding, {"roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                                      "kind": "ClusterRole", "name": "r"},
                          "subjects": SUBJECTS}),
    (PersistentVolumeClaim, {"spec": {"accessModes": ["ReadWriteOnce"],
                                      "resources": {"requests": {"storage": "1Gi"}}}}),
    (Ingress, {"spec": {"rules": [{"host": "a.example.com", "http": {"paths": [
        {"path": "/", "pathType": "Prefix",
         "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}}),
    (NetworkPolicy, {"spec": {"podSelector": SELECTOR, "ingress": [
        {"from": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}}]}]}}),
    (PodDisruptionBudget, {"spec": {"minAvailable": 1, "selector": SELECTOR}}),
    (Node, {"spec": {"podCIDR": "10.0.0.0/24"}}),
]


def _path(cls: type[Resource], namespace: str) -> str:
    base = "/api/v1" if cls.api_version == "v1" else f"/apis/{cls.api_version}"
    ns = f"/namespaces/{namespace}" if cls.namespaced else ""
    return f"{base}{ns}/{cls.plural}"


@pytest.mark.parametrize(("cls", "body"), BODIES, ids=lambda v: getattr(v, "__name__", ""))
async def test_server_object_round_trips_losslessly(
    api: API, cls: type[Resource], body: dict[str, Any]
) -> None:
    obj = cls.model_validate({"metadata": {"name": "rt-" + cls.plural[:20]}, **body})
    if cls.namespaced:
        obj.metadata.namespace = "default"
    created = await api.create(_path(cls, "default"), obj.to_dict())
    status, fetched = await api.request(
        "GET", f"{_path(cls, 'default')}/{created['metadata']['name']}")
    assert status == 200
    typed = cls.model_validate(fetched)
    assert typed.to_dict() == fetched
    assert typed.metadata.uid == fetched["metadata"]["uid"]


def test_every_required_kind_is_typed() -> None:
    names = {(cls.api_version, cls.kind) for cls, _ in BODIES}
    assert ("events.k8s.io/v1", "Event") in names
    assert len(names) == len(BODIES)


def test_generated_plurals_and_scopes_match_the_servers_discovery() -> None:
    served = {(f"{r.group}/{r.version}" if r.group else r.version, r.kind):
              (r.resource, r.namespaced) for r in _BUILTINS}
    for key, row in RESOURCES.items():
        assert served[key] == row, key


def test_typed_fields_reach_nested_values() -> None:
    deploy = Deployment.model_validate({"spec": {"template": TEMPLATE, "selector": SELECTOR}})
    container = present(present(present(present(deploy.spec).template).spec).containers)[0]
    assert present(container.ports)[0].container_port == 80
    assert present(container.resources).limits == {"cpu": "500m", "memory": "128Mi"}
    policy = NetworkPolicy.model_validate(BODIES[20][1])
    peer = present(present(present(policy.spec).ingress)[0].from_)[0]
    assert present(peer.ip_block).except_ == ["10.1.0.0/16"]


def test_committed_models_match_what_the_generator_builds() -> None:
    import importlib

    from setpoint.resources._codegen import build_modules

    for name, module in build_modules().items():
        generated = importlib.import_module(f"setpoint.resources.models.{name}")
        assert set(generated.__all__) == {c.name for c in module.classes}, name
        for cls in module.classes:
            fields = getattr(generated, cls.name).model_fields
            assert [f[0] for f in cls.fields] == [
                f for f in fields if f != "metadata" or not cls.resource], cls.name

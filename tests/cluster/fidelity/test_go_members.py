"""The members a built-in object has though its body lacked them: kube-apiserver decodes into
the kind's Go struct and encodes what it stores, and ``encoding/json`` writes every
non-pointer struct member (``omitempty`` never omits a struct) and every builtin member that
is not ``omitempty``, at its zero value. The types are k8s.io/api v0.32.0's: apps/v1 types.go
(``ServiceName string `json:"serviceName"```), discovery/v1 types.go (``Conditions
EndpointConditions `json:"conditions,omitempty"```), storage/v1 types.go (``Attached bool
`json:"attached"```); the strategies reset status on create
(pkg/registry/flowcontrol/prioritylevelconfiguration/strategy.go, core/resourcequota/
strategy.go, storage/volumeattachment/strategy.go: ``Status = ...Status{}``), which encodes as
``status: {}`` (a CSR's: test_validation_certificates.py)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.cluster.fidelity.builtin_server import Kube

TEMPLATE: dict[str, Any] = {"metadata": {"labels": {"app": "m"}},
                            "spec": {"containers": [{"name": "c", "image": "i"}]}}

CREATED = [
    ("/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations",
     {"metadata": {"name": "members-pl"},
      "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 5,
                                              "limitResponse": {"type": "Reject"}}}},
     "status", {}),
    ("/api/v1/namespaces/default/resourcequotas",
     {"metadata": {"name": "members-rq"}, "spec": {"hard": {"pods": "3"}},
      "status": {"hard": {"pods": "1"}}},
     "status", {}),
    ("/apis/storage.k8s.io/v1/volumeattachments",
     {"metadata": {"name": "members-va"},
      "spec": {"attacher": "x", "nodeName": "n", "source": {"persistentVolumeName": "pv"}},
      "status": {"attached": True}},
     "status", {"attached": False}),
    ("/apis/apps/v1/namespaces/default/statefulsets",
     {"metadata": {"name": "members-ss"},
      "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "m"}}, "template": TEMPLATE}},
     "spec.serviceName", ""),
    ("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
     {"metadata": {"name": "members-es"}, "addressType": "IPv4",
      "endpoints": [{"addresses": ["10.0.0.1"]}, {"addresses": ["10.0.0.2"],
                                                  "conditions": None}]},
     "endpoints.*.conditions", {}),
]


def _at(obj: Any, path: str) -> list[Any]:
    values = [obj]
    for part in path.split("."):
        if part == "*":
            values = [item for v in values for item in v]
        else:
            values = [v[part] for v in values]
    return values


@pytest.mark.parametrize(("path", "body", "member", "written"), CREATED,
                         ids=[p.rsplit("/", 1)[1] for p, *_ in CREATED])
def test_created_object_has_the_members_go_writes(kube: Kube, path: str, body: dict[str, Any],
                                                  member: str, written: Any) -> None:
    status, created = kube.call("POST", path, body)
    assert status == 201, created
    try:
        status, read = kube.call("GET", f"{path}/{body['metadata']['name']}")
        values = _at(created, member)
        assert values and all(v == written for v in values), created
        # read back: still there, whatever a controller (the quota's) wrote since
        assert all(type(v) is type(written) for v in _at(read, member)), read
    finally:
        kube.call("DELETE", f"{path}/{body['metadata']['name']}")


def test_updates_keep_the_members_go_writes(kube: Kube) -> None:
    """A PUT without the member gets it back (the update decodes into the struct as the
    create did), and a JSON null is the zero value too."""
    path = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices"
    body = {"metadata": {"name": "members-es-put"}, "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": True}}]}
    status, created = kube.call("POST", path, body)
    assert status == 201, created
    try:
        created["endpoints"] = [{"addresses": ["10.0.0.3"]},
                                {"addresses": ["10.0.0.4"], "conditions": None}]
        status, updated = kube.call("PUT", f"{path}/members-es-put", created)
        assert status == 200, updated
        assert [e["conditions"] for e in updated["endpoints"]] == [{}, {}]
    finally:
        kube.call("DELETE", f"{path}/members-es-put")


def test_struct_members_omitted_by_pointer_stay_absent(kube: Kube) -> None:
    """Pointers, slices and maps have no zero Go writes: a pod without a securityContext on
    its container, tolerations or a node selector keeps them absent."""
    path = "/api/v1/namespaces/default/pods"
    body = {"metadata": {"name": "members-pod"},
            "spec": {"containers": [{"name": "c", "image": "i"}]}}
    status, created = kube.call("POST", path, body)
    assert status == 201, created
    try:
        container = created["spec"]["containers"][0]
        assert "securityContext" not in container and "nodeSelector" not in created["spec"]
        assert container["resources"] == {}  # Container.Resources is a struct
    finally:
        kube.call("DELETE", f"{path}/members-pod?gracePeriodSeconds=0")

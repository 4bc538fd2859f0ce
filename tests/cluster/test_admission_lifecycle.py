"""NamespaceLifecycle admission: missing and terminating namespaces, immortal namespaces."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from setpoint.cluster.admission.lifecycle import check_namespace_delete
from setpoint.cluster.apiserver import APIServer
from setpoint.cluster.registry.options import DeleteOptions, WriteOptions
from setpoint.cluster.serializer.decode import Decoded
from setpoint.machinery.errors import StatusError
from tests.conftest import SHARED

USER = WriteOptions(field_manager="tests")
GOLDEN = SHARED / "conformance" / "golden" / "namespace-deletion.json"


@pytest.fixture
async def server() -> AsyncIterator[APIServer]:
    api = APIServer(None, ca_pem=b"CA")
    api.start()
    yield api
    await api.stop()


def golden_body(step: int) -> dict[str, Any]:
    if not GOLDEN.exists():
        pytest.skip("shared conformance corpus not present")
    text = json.loads(GOLDEN.read_text())["steps"][step]["response"]["body"]
    body = json.loads(json.dumps(text).replace("${ns}", "t"))
    assert isinstance(body, dict)
    return body


def terminating_namespace(api: APIServer, name: str) -> None:
    api.rest.create(api.resource("", "v1", "namespaces"), None,
                    Decoded({"metadata": {"name": name}}), USER)
    api.rest.create(api.resource("", "v1", "configmaps"), name, Decoded(
        {"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}), USER)
    api.rest.delete(api.resource("", "v1", "namespaces"), None, name, DeleteOptions())


async def test_create_in_a_terminating_namespace_is_forbidden_as_recorded(
        server: APIServer) -> None:
    terminating_namespace(server, "t-doomed")
    with pytest.raises(StatusError) as caught:
        server.rest.create(server.resource("", "v1", "configmaps"), "t-doomed",
                           Decoded({"metadata": {"name": "late"}}), USER)
    assert caught.value.to_status() == golden_body(4)


async def test_updates_in_a_terminating_namespace_are_allowed(server: APIServer) -> None:
    terminating_namespace(server, "doomed")
    live = server.store.get("/configmaps", "doomed", "held")
    assert live is not None
    out = server.rest.update(server.resource("", "v1", "configmaps"), "doomed", "held",
                             Decoded({**live, "data": {"still": "writable"}}), USER)
    assert out.obj["data"] == {"still": "writable"}


async def test_create_in_a_missing_namespace_is_not_found_as_recorded(
        server: APIServer) -> None:
    with pytest.raises(StatusError) as caught:
        server.rest.create(server.resource("", "v1", "configmaps"), "t-doomed",
                           Decoded({"metadata": {"name": "later"}}), USER)
    assert caught.value.to_status() == golden_body(11)


async def test_cluster_scoped_objects_and_namespaces_are_not_checked(
        server: APIServer) -> None:
    terminating_namespace(server, "doomed")
    roles = server.resource("rbac.authorization.k8s.io", "v1", "clusterroles")
    server.rest.create(roles, None, Decoded({"metadata": {"name": "r"}}), USER)
    await asyncio.sleep(0)
    live = server.store.get("/namespaces", "", "doomed")
    assert live is not None
    labelled = {**live, "metadata": {**live["metadata"], "labels": {
        **live["metadata"].get("labels", {}), "x": "y"}}}
    server.rest.update(server.resource("", "v1", "namespaces"), None, "doomed",
                       Decoded(labelled), USER)


@pytest.mark.parametrize("name", ["default", "kube-system", "kube-public"])
def test_immortal_namespaces_cannot_be_deleted(name: str) -> None:
    rt = APIServer(None).resource("", "v1", "namespaces")
    with pytest.raises(StatusError) as caught:
        check_namespace_delete(rt, None, name)
    assert caught.value.to_status() == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": f'namespaces "{name}" is forbidden: this namespace may not be deleted',
        "reason": "Forbidden", "details": {"name": name, "kind": "namespaces"}, "code": 403}


def test_other_deletes_pass_the_delete_check() -> None:
    api = APIServer(None)
    check_namespace_delete(api.resource("", "v1", "namespaces"), None, "kube-node-lease")
    check_namespace_delete(api.resource("", "v1", "configmaps"), "default", "default")

"""The ServiceAccounts controller and the root CA publisher, inside a bare API server."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from setpoint.cluster.apiserver import APIServer
from setpoint.cluster.registry.options import DeleteOptions, WriteOptions
from setpoint.cluster.serializer.decode import Decoded
from tests.waiting import wait_for

CA = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
DESCRIPTION = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal "
    "endpoints such as the internal service IP or kubernetes.default.svc. No other usage is "
    "guaranteed across distributions of Kubernetes clusters.")
USER = WriteOptions(field_manager="tests")


async def until(check: Callable[[], Any]) -> Any:
    """Let the loop run until ``check()`` is truthy; return its value."""
    return await wait_for(check)


@pytest.fixture
async def server() -> AsyncIterator[APIServer]:
    api = APIServer(None, ca_pem=CA)
    api.start()
    yield api
    await api.stop()


def create_namespace(api: APIServer, name: str) -> None:
    api.rest.create(api.resource("", "v1", "namespaces"), None,
                    Decoded({"metadata": {"name": name}}), USER)


def root_ca(api: APIServer, ns: str) -> dict[str, Any] | None:
    return api.store.get("/configmaps", ns, "kube-root-ca.crt")


def default_sa(api: APIServer, ns: str) -> dict[str, Any] | None:
    return api.store.get("/serviceaccounts", ns, "default")


async def test_system_namespaces_get_their_defaults_at_startup(server: APIServer) -> None:
    for ns in ("default", "kube-system", "kube-public", "kube-node-lease"):
        def defaulted(ns: str = ns) -> object:
            return default_sa(server, ns) and root_ca(server, ns)

        await until(defaulted)


async def test_a_new_namespace_has_both_after_one_turn_of_the_loop(server: APIServer) -> None:
    create_namespace(server, "team")
    assert default_sa(server, "team") is None
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    sa = default_sa(server, "team")
    cm = root_ca(server, "team")
    assert sa is not None and cm is not None
    assert sa["metadata"]["name"] == "default" and "managedFields" not in sa["metadata"]


async def test_root_ca_configmap_is_what_kube_controller_manager_publishes(
        server: APIServer) -> None:
    create_namespace(server, "team")
    cm = await until(lambda: root_ca(server, "team"))
    assert cm["data"] == {"ca.crt": CA.decode()}
    assert cm["metadata"]["annotations"] == {"kubernetes.io/description": DESCRIPTION}
    [entry] = cm["metadata"]["managedFields"]
    assert entry["manager"] == "kube-controller-manager"
    assert entry["operation"] == "Update"
    assert entry["fieldsV1"] == {
        "f:data": {".": {}, "f:ca.crt": {}},
        "f:metadata": {"f:annotations": {".": {}, "f:kubernetes.io/description": {}}}}


async def test_deleted_default_service_account_is_recreated(server: APIServer) -> None:
    create_namespace(server, "team")
    first = await until(lambda: default_sa(server, "team"))
    server.rest.delete(server.resource("", "v1", "serviceaccounts"), "team", "default",
                       DeleteOptions())
    again = await until(lambda: default_sa(server, "team"))
    assert again["metadata"]["uid"] != first["metadata"]["uid"]


async def test_deleted_root_ca_configmap_is_recreated(server: APIServer) -> None:
    create_namespace(server, "team")
    first = await until(lambda: root_ca(server, "team"))
    server.rest.delete(server.resource("", "v1", "configmaps"), "team", "kube-root-ca.crt",
                       DeleteOptions())
    again = await until(lambda: root_ca(server, "team"))
    assert again["metadata"]["uid"] != first["metadata"]["uid"]


async def test_changed_ca_data_is_repaired_and_a_present_description_kept(
        server: APIServer) -> None:
    create_namespace(server, "team")
    cm = copy.deepcopy(await until(lambda: root_ca(server, "team")))
    cm["data"] = {"ca.crt": "forged", "extra": "x"}
    cm["metadata"]["annotations"] = {"kubernetes.io/description": "mine"}
    changed = server.rest.update(server.resource("", "v1", "configmaps"), "team",
                                 "kube-root-ca.crt", Decoded(cm), USER).obj
    repaired = await until(lambda: (root_ca(server, "team") or {}).get("metadata", {}).get(
        "resourceVersion") != changed["metadata"]["resourceVersion"] and root_ca(server, "team"))
    assert repaired["data"] == {"ca.crt": CA.decode()}
    assert repaired["metadata"]["annotations"] == {"kubernetes.io/description": "mine"}


async def test_missing_description_is_added_back(server: APIServer) -> None:
    create_namespace(server, "team")
    cm = copy.deepcopy(await until(lambda: root_ca(server, "team")))
    del cm["metadata"]["annotations"]
    server.rest.update(server.resource("", "v1", "configmaps"), "team", "kube-root-ca.crt",
                       Decoded(cm), USER)
    repaired = await until(lambda: (root_ca(server, "team") or {}).get("metadata", {}).get(
        "annotations") and root_ca(server, "team"))
    assert repaired["metadata"]["annotations"]["kubernetes.io/description"] == DESCRIPTION


async def test_nothing_is_recreated_in_a_terminating_namespace(server: APIServer) -> None:
    create_namespace(server, "team")
    await until(lambda: default_sa(server, "team") and root_ca(server, "team"))
    # a finalizer on another object keeps the namespace terminating
    server.rest.create(server.resource("", "v1", "secrets"), "team", Decoded(
        {"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}), USER)
    server.rest.delete(server.resource("", "v1", "namespaces"), None, "team", DeleteOptions())
    await until(lambda: default_sa(server, "team") is None and root_ca(server, "team") is None)
    for _ in range(10):
        await asyncio.sleep(0)
    assert server.store.get("/namespaces", "", "team") is not None
    assert default_sa(server, "team") is None and root_ca(server, "team") is None

"""The ResourceQuota admission plugin and the quota controller inside a bare API server, where
a test can write between two turns of the loop (before the controller has synced).

staging/src/k8s.io/apiserver/pkg/admission/plugin/resourcequota/controller.go
``checkRequest`` (``hasUsageStats``: a quota whose status limits a resource it has no usage
for refuses, ``status unknown for quota``; a quota whose status has no limits yet does not
match at all), pkg/controller/resourcequota/resource_quota_controller.go (``updateQuota``:
a spec the status does not cover is synced again).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from setpoint.cluster.apiserver import APIServer
from setpoint.cluster.registry.options import DeleteOptions, WriteOptions
from setpoint.cluster.serializer.decode import Decoded
from setpoint.machinery.errors import StatusError
from tests.waiting import wait_for

CA = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
USER = WriteOptions(field_manager="tests")


@pytest.fixture
async def server() -> AsyncIterator[APIServer]:
    api = APIServer(None, ca_pem=CA)
    api.start()
    api.rest.create(api.resource("", "v1", "namespaces"), None,
                    Decoded({"metadata": {"name": "team"}}), USER)
    yield api
    await api.stop()


def create(api: APIServer, resource: str, body: dict[str, Any]) -> dict[str, Any]:
    result = api.rest.create(api.resource("", "v1", resource), "team", Decoded(body), USER)
    obj: dict[str, Any] = result.obj
    return obj


def quota_status(api: APIServer) -> dict[str, Any]:
    found = api.store.get("/resourcequotas", "team", "q")
    assert found is not None
    status: dict[str, Any] = found.get("status") or {}
    return status


async def test_a_quota_without_usage_for_a_limited_resource_refuses(server: APIServer) -> None:
    rq = create(server, "resourcequotas", {"metadata": {"name": "q"},
                                           "spec": {"hard": {"configmaps": "1"}}})
    # before the controller's first sync the quota has no status.hard: it matches nothing
    create(server, "configmaps", {"metadata": {"name": "early"}})
    rq = {**rq, "status": {"hard": {"configmaps": "1"}}}
    server.rest.update(server.resource("", "v1", "resourcequotas"), "team", "q", Decoded(rq),
                       USER, "status")
    with pytest.raises(StatusError) as refused:
        create(server, "configmaps", {"metadata": {"name": "late"}})
    assert (refused.value.code, refused.value.reason) == (403, "Forbidden")
    assert refused.value.message == ('configmaps "late" is forbidden: status unknown for '
                                          "quota: q, resources: configmaps")
    # the controller then counts what is there (the early one and kube-root-ca.crt)
    await wait_for(lambda: quota_status(server).get("used") == {"configmaps": "2"})


async def test_status_hard_follows_a_changed_spec(server: APIServer) -> None:
    rq = create(server, "resourcequotas", {"metadata": {"name": "q"},
                                           "spec": {"hard": {"secrets": "4"}}})
    await wait_for(lambda: quota_status(server).get("used") == {"secrets": "0"})
    current = server.store.get("/resourcequotas", "team", "q")
    assert current is not None
    rq = {**current, "spec": {"hard": {"secrets": "4", "count/configmaps": "9"}}}
    server.rest.update(server.resource("", "v1", "resourcequotas"), "team", "q", Decoded(rq),
                       USER)
    await wait_for(lambda: quota_status(server) == {
        "hard": {"secrets": "4", "count/configmaps": "9"},
        "used": {"secrets": "0", "count/configmaps": "1"}})


async def test_the_plugin_is_in_the_chain_only_while_a_quota_exists(server: APIServer) -> None:
    """controller.go answers at once when there is no quota; here writes in a cluster without
    one do not call the plugin at all (creates cost what they did before quotas existed)."""
    chain = server.rest.final_validating_admission
    assert chain == []
    create(server, "resourcequotas", {"metadata": {"name": "q"},
                                      "spec": {"hard": {"configmaps": "1"}}})
    assert [type(p).__name__ for p in chain] == ["ResourceQuotaAdmission"]
    server.rest.delete(server.resource("", "v1", "resourcequotas"), "team", "q",
                       DeleteOptions())
    assert chain == []

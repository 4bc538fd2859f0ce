"""A CRD with several versions and conversion strategy None: one storage version."""

from __future__ import annotations

from setpoint.cluster import RunningCluster
from tests.cluster.conftest import API
from tests.waiting import wait_for

SCHEMA = {"openAPIV3Schema": {"type": "object", "properties": {
    "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}}
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "gears.multi.example.com"},
    "spec": {"group": "multi.example.com", "scope": "Namespaced",
             "names": {"plural": "gears", "kind": "Gear"},
             "versions": [
                 {"name": "v1beta1", "served": True, "storage": False, "schema": SCHEMA},
                 {"name": "v1", "served": True, "storage": True, "schema": SCHEMA}]},
}


async def established(api: API) -> None:
    async def served() -> bool:
        return (await api.get("/apis/multi.example.com/v1beta1"))[0] == 200

    await wait_for(served)


async def test_objects_are_stored_once_and_served_at_every_version(
        cluster: RunningCluster, api: API) -> None:
    status, _ = await api.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", CRD)
    assert status == 201
    await established(api)
    path = "/apis/multi.example.com/v1beta1/namespaces/default/gears"
    status, created = await api.post(path, {
        "apiVersion": "multi.example.com/v1beta1", "kind": "Gear",
        "metadata": {"name": "g"}, "spec": {"size": 2}})
    assert status == 201, created
    assert created["apiVersion"] == "multi.example.com/v1beta1"
    stored = cluster.api.store.get("multi.example.com/gears", "default", "g")
    assert stored is not None and stored["apiVersion"] == "multi.example.com/v1"
    _, as_v1 = await api.get("/apis/multi.example.com/v1/namespaces/default/gears/g")
    assert as_v1["apiVersion"] == "multi.example.com/v1"
    assert as_v1["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    # an unchanged write through the other version is a no-op
    status, same = await api.put(path + "/g", {**created})
    assert status == 200
    assert same["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    _, listed = await api.get("/apis/multi.example.com/v1beta1/gears")
    assert [i["apiVersion"] for i in listed["items"]] == ["multi.example.com/v1beta1"]

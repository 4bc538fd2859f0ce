"""The Memcached custom resource as the API server serves it."""

from __future__ import annotations

from typing import Any

import pytest

from operators.memcached.resource import Memcached, MemcachedSpec
from setpoint.client import Client, InvalidError
from setpoint.resources import crd_for
from setpoint.testing import SetpointCluster


def test_the_crd_has_printer_columns_and_the_scale_subresource() -> None:
    (version,) = crd_for(Memcached)["spec"]["versions"]

    columns = [(c["name"], c["jsonPath"]) for c in version["additionalPrinterColumns"]
               if not c.get("priority")]
    assert columns == [("Replicas", ".spec.replicas"), ("Ready", ".status.readyReplicas"),
                       ("Topology", ".spec.topology"), ("Age", ".metadata.creationTimestamp")]
    assert version["subresources"]["scale"] == {
        "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas",
        "labelSelectorPath": ".status.selector"}
    assert "status" in version["subresources"]


async def test_the_server_defaults_an_empty_spec(setpoint_cluster: SetpointCluster,
                                                  k8s: Client) -> None:
    await setpoint_cluster.install(Memcached)

    created: dict[str, Any] = await k8s.create({
        "apiVersion": "cache.setpoint.dev/v1", "kind": "Memcached", "metadata": {"name": "m"},
        "spec": {}})
    spec = created["spec"]
    assert (spec["replicas"], spec["topology"], spec["replicasPerShard"]) == (3, "sharded", 1)
    assert spec["version"] == MemcachedSpec().version


async def test_replicas_per_shard_is_refused_for_the_replicated_topology(
        setpoint_cluster: SetpointCluster, k8s: Client) -> None:
    await setpoint_cluster.install(Memcached)

    with pytest.raises(InvalidError) as refused:
        await k8s.create(Memcached(name="m", spec=MemcachedSpec(
            topology="replicated", replicas_per_shard=2)))
    assert "replicasPerShard applies only to the sharded topology" in str(refused.value)


async def test_the_server_refuses_zero_replicas(setpoint_cluster: SetpointCluster,
                                                 k8s: Client) -> None:
    await setpoint_cluster.install(Memcached)

    with pytest.raises(InvalidError) as refused:
        await k8s.create({"apiVersion": "cache.setpoint.dev/v1", "kind": "Memcached",
                          "metadata": {"name": "m"}, "spec": {"replicas": 0}})
    assert "spec.replicas" in str(refused.value)


async def test_names_that_cannot_name_a_service_are_refused(
        setpoint_cluster: SetpointCluster, k8s: Client) -> None:
    await setpoint_cluster.install(Memcached)

    for name in ("1cache", "a.b", "x" * 41):
        with pytest.raises(InvalidError) as refused:
            await k8s.create(Memcached(name=name))
        assert "must be a DNS label" in str(refused.value)
    await k8s.create(Memcached(name="x" * 40))

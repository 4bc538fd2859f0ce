"""The EtcdCluster custom resource as the API server serves it: the CRD's own validation
refuses even sizes and unsupported version changes, on create, update and ``/scale``.

CEL transition rules (``oldSelf``) run only on updates, as the apiextensions apiserver
runs them (k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/validation.go)."""

from __future__ import annotations

from typing import Any

import pytest

from operators.etcd.resource import EtcdCluster, EtcdClusterSpec
from setpoint.client import Client, InvalidError, Kind
from setpoint.resources import crd_for
from setpoint.testing import SetpointCluster

API = "etcd.setpoint.dev/v1alpha1"
ETCD = Kind(API, "EtcdCluster")


def test_the_crd_has_printer_columns_and_the_scale_subresource() -> None:
    (version,) = crd_for(EtcdCluster)["spec"]["versions"]
    columns = [(c["name"], c["jsonPath"]) for c in version["additionalPrinterColumns"]
               if not c.get("priority")]
    assert columns == [("Size", ".spec.size"), ("Ready", ".status.readyMembers"),
                       ("Version", ".status.currentVersion"), ("Phase", ".status.phase"),
                       ("Age", ".metadata.creationTimestamp")]
    assert version["subresources"]["scale"] == {
        "specReplicasPath": ".spec.size", "statusReplicasPath": ".status.size",
        "labelSelectorPath": ".status.selector"}


async def test_an_empty_spec_is_defaulted(setpoint_cluster: SetpointCluster,
                                          k8s: Client) -> None:
    await setpoint_cluster.install(EtcdCluster)
    created: dict[str, Any] = await k8s.create({"apiVersion": API, "kind": "EtcdCluster",
                                                "metadata": {"name": "e"}, "spec": {}})
    assert (created["spec"]["size"], created["spec"]["version"]) == (3, "3.5.1")


@pytest.mark.parametrize("size", [0, 2, 4, 6, 8])
async def test_even_and_out_of_range_sizes_are_refused(
        setpoint_cluster: SetpointCluster, k8s: Client, size: int) -> None:
    await setpoint_cluster.install(EtcdCluster)
    with pytest.raises(InvalidError) as refused:
        await k8s.create(EtcdCluster(name="e", spec=EtcdClusterSpec(size=size)))
    assert "size must be 1, 3, 5 or 7" in str(refused.value)
    assert "spec.size" in str(refused.value)


async def test_scaling_to_an_even_size_through_the_scale_subresource_is_refused(
        setpoint_cluster: SetpointCluster, k8s: Client) -> None:
    await setpoint_cluster.install(EtcdCluster)
    await k8s.create(EtcdCluster(name="e", spec=EtcdClusterSpec(size=3)))
    with pytest.raises(InvalidError) as refused:
        await k8s.patch(ETCD, "e", {"spec": {"replicas": 4}}, subresource="scale")
    assert "size must be 1, 3, 5 or 7" in str(refused.value)
    await k8s.patch(ETCD, "e", {"spec": {"replicas": 5}}, subresource="scale")
    assert (await k8s.get(EtcdCluster, "e")).spec.size == 5


@pytest.mark.parametrize("version", ["3.3.27", "3.6.0", "v3.5.1", "3.5", "latest"])
async def test_versions_other_than_3_4_and_3_5_are_refused(
        setpoint_cluster: SetpointCluster, k8s: Client, version: str) -> None:
    await setpoint_cluster.install(EtcdCluster)
    with pytest.raises(InvalidError) as refused:
        await k8s.create({"apiVersion": API, "kind": "EtcdCluster", "metadata": {"name": "e"},
                          "spec": {"version": version}})
    assert "spec.version" in str(refused.value)


async def test_a_minor_downgrade_is_refused_and_an_upgrade_or_patch_change_is_not(
        setpoint_cluster: SetpointCluster, k8s: Client) -> None:
    await setpoint_cluster.install(EtcdCluster)
    await k8s.create(EtcdCluster(name="e", spec=EtcdClusterSpec(version="3.4.23")))
    await k8s.patch(EtcdCluster, "e", {"spec": {"version": "3.4.20"}})
    await k8s.patch(EtcdCluster, "e", {"spec": {"version": "3.5.1"}})
    with pytest.raises(InvalidError) as refused:
        await k8s.patch(EtcdCluster, "e", {"spec": {"version": "3.4.23"}})
    assert "downgrading etcd to an older minor version is not supported" in str(refused.value)
    # a new cluster may start at either minor version: the rule is a transition rule
    await k8s.create(EtcdCluster(name="f", spec=EtcdClusterSpec(version="3.4.23")))


async def test_names_that_cannot_name_the_services_are_refused(
        setpoint_cluster: SetpointCluster, k8s: Client) -> None:
    await setpoint_cluster.install(EtcdCluster)
    for name in ("1etcd", "a.b", "x" * 41):
        with pytest.raises(InvalidError) as refused:
            await k8s.create(EtcdCluster(name=name))
        assert "must be a DNS label" in str(refused.value)


@pytest.mark.parametrize(("before", "after"), [
    (None, {"enabled": True}),              # TLS added to a plain cluster
    ({"enabled": False}, {"enabled": True}),  # switched on
    ({"enabled": True}, {"enabled": False}),  # switched off
    ({"enabled": True}, None),              # spec.tls removed: off
])
async def test_switching_tls_on_or_off_on_an_existing_cluster_is_refused(
        setpoint_cluster: SetpointCluster, k8s: Client, before: dict[str, Any] | None,
        after: dict[str, Any] | None) -> None:
    """A transition rule on the whole spec (``has()`` on ``self`` and ``oldSelf``), so it
    also holds when ``spec.tls`` appears or goes, where a rule on ``spec.tls.enabled``
    alone is not evaluated (a transition rule runs only where both the old and the new
    object have the field: k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/
    validation.go, ``validateExpressions``, ``correlation``)."""
    await setpoint_cluster.install(EtcdCluster)
    spec: dict[str, Any] = {"size": 1} | ({"tls": before} if before is not None else {})
    await k8s.create({"apiVersion": API, "kind": "EtcdCluster", "metadata": {"name": "e"},
                      "spec": spec})
    with pytest.raises(InvalidError) as refused:
        await k8s.patch(ETCD, "e", {"spec": {"tls": after}})
    assert "TLS is chosen when the cluster is made" in str(refused.value)
    assert "spec.tls" in str(refused.value)
    # what keeps TLS as it was is accepted: another renewal window, or an explicit false
    if before is not None and before["enabled"]:
        await k8s.patch(ETCD, "e", {"spec": {"tls": {"renewBefore": "100h"}}})
    else:
        await k8s.patch(ETCD, "e", {"spec": {"tls": {"enabled": False}}})

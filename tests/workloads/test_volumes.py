"""PersistentVolumeClaims bind to provisioned or existing PersistentVolumes."""

from __future__ import annotations

from typing import Any

from setpoint.client import Client, Kind, NotFoundError
from setpoint.workloads.controllers import volumes
from tests.workloads.podsim import wait_for, workload_cluster

PVC = Kind("v1", "PersistentVolumeClaim")
PV = Kind("v1", "PersistentVolume")
SC = Kind("storage.k8s.io/v1", "StorageClass")
NS = "default"


def claim(name: str = "data", size: str = "1Gi", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"accessModes": ["ReadWriteOnce"],
                     "resources": {"requests": {"storage": size}}, **spec}}


async def bound(client: Client, name: str = "data") -> dict[str, Any] | None:
    pvc = await client.get(PVC, name, namespace=NS)
    return pvc if (pvc.get("status") or {}).get("phase") == "Bound" else None


async def test_a_claim_without_class_gets_the_default_and_a_provisioned_volume() -> None:
    async with workload_cluster([volumes.install], simulate=False) as env:
        sc = await wait_for(lambda: _get(env.client, SC, "standard"))
        assert sc["metadata"]["annotations"] == {
            "storageclass.kubernetes.io/is-default-class": "true"}
        assert sc["provisioner"] == "setpoint.dev/simulated"
        await env.client.create(claim())
        pvc = await wait_for(lambda: bound(env.client))
        uid = pvc["metadata"]["uid"]
        assert pvc["spec"]["storageClassName"] == "standard"
        assert pvc["spec"]["volumeName"] == f"pvc-{uid}"
        annotations = pvc["metadata"]["annotations"]
        assert annotations["pv.kubernetes.io/bind-completed"] == "yes"
        assert annotations["pv.kubernetes.io/bound-by-controller"] == "yes"
        assert annotations["volume.kubernetes.io/storage-provisioner"] == \
            "setpoint.dev/simulated"
        assert pvc["status"]["capacity"] == {"storage": "1Gi"}
        assert pvc["status"]["accessModes"] == ["ReadWriteOnce"]
        pv = await wait_for(lambda: _phase(env.client, f"pvc-{uid}", "Bound"))
        assert pv["spec"]["claimRef"]["uid"] == uid
        assert pv["spec"]["claimRef"]["name"] == "data"
        assert pv["spec"]["storageClassName"] == "standard"
        assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Delete"
        assert pv["spec"]["hostPath"]["path"].endswith(f"pvc-{uid}")
        assert pv["metadata"]["annotations"]["pv.kubernetes.io/provisioned-by"] == \
            "setpoint.dev/simulated"

        await env.client.delete(PVC, "data", namespace=NS)

        async def volume_gone() -> bool:
            return await _get(env.client, PV, f"pvc-{uid}") is None

        await wait_for(volume_gone)


async def test_a_claim_binds_the_smallest_matching_available_volume() -> None:
    async with workload_cluster([volumes.install], simulate=False) as env:
        for name, size in (("big", "10Gi"), ("small", "2Gi"), ("tiny", "500Mi")):
            await env.client.create({
                "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
                "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
                         "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "manual",
                         "hostPath": {"path": f"/data/{name}"}}})
        await wait_for(lambda: _phase(env.client, "tiny", "Available"))
        await env.client.create(claim(size="1Gi", storageClassName="manual"))
        pvc = await wait_for(lambda: bound(env.client))
        assert pvc["spec"]["volumeName"] == "small"
        pv = await wait_for(lambda: _phase(env.client, "small", "Bound"))
        assert pv["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"
        await env.client.delete(PVC, "data", namespace=NS)
        await wait_for(lambda: _phase(env.client, "small", "Released"))


async def _get(client: Client, kind: Kind, name: str) -> dict[str, Any] | None:
    try:
        result: dict[str, Any] = await client.get(kind, name)
        return result
    except NotFoundError:
        return None


async def _phase(client: Client, name: str, phase: str) -> dict[str, Any] | None:
    pv = await _get(client, PV, name)
    return pv if pv is not None and (pv.get("status") or {}).get("phase") == phase else None


def test_volume_matching_checks_class_modes_and_size() -> None:
    pv = {"metadata": {"name": "v"}, "spec": {
        "capacity": {"storage": "5Gi"}, "accessModes": ["ReadWriteOnce", "ReadOnlyMany"],
        "storageClassName": "fast"}, "status": {"phase": "Available"}}
    pvc = claim(storageClassName="fast")
    pvc["metadata"]["uid"] = "u"
    assert volumes.volume_matches(pv, pvc)
    assert not volumes.volume_matches(pv, claim(size="6Gi", storageClassName="fast"))
    assert not volumes.volume_matches(pv, claim(storageClassName="slow"))
    assert not volumes.volume_matches(pv, claim(storageClassName="fast",
                                                accessModes=["ReadWriteMany"]))


def test_the_default_class_is_the_newest_then_the_first_by_name_beta_included() -> None:
    """pkg/volume/util/storageclass.go ``GetDefaultClass`` (the PV controller's retroactive
    default assignment uses it as the DefaultStorageClass admission plugin does)."""
    def sc(name: str, ts: str, annotation: str = volumes.IS_DEFAULT_CLASS) -> dict[str, Any]:
        return {"metadata": {"name": name, "creationTimestamp": ts,
                             "annotations": {annotation: "true"}}}

    tie_b, tie_a = sc("b", "2024-01-02T00:00:00Z"), sc("a", "2024-01-02T00:00:00Z")
    beta = sc("beta", "2024-01-03T00:00:00Z",
              "storageclass.beta.kubernetes.io/is-default-class")
    assert volumes.default_class([tie_b, tie_a]) is tie_a
    assert volumes.default_class([tie_b, beta, tie_a]) is beta

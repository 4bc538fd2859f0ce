"""A pod's PersistentVolumeClaims decide where and when it is scheduled, as kube-scheduler's
VolumeBinding plugin, the PV controller and the ephemeral volume controller of 1.32 decide,
over the embedded server's real HTTP API.

Sources (kubernetes/kubernetes v1.32): pkg/scheduler/framework/plugins/volumebinding/
volume_binding.go (``podHasPVCs``: a missing, lost, deleting or foreign claim fails PreFilter
UnschedulableAndUnresolvable in its words; ``PreFilter``: "pod has unbound immediate
PersistentVolumeClaims"; ``Filter``), binder.go (``FindPodVolumes``'s ConflictReasons;
``findMatchingVolumes``: the smallest matching volume; ``checkVolumeProvisions``:
``kubernetes.io/no-provisioner`` cannot provision; ``BindPodVolumes``: the volume's
claimRef or the claim's ``volume.kubernetes.io/selected-node``, then the wait for every
claim fully bound); pkg/scheduler/framework/types.go ``FitError.Error`` (a PreFilter's
message said once); pkg/controller/volume/persistentvolume/pv_controller.go
(``syncUnboundClaim``: a WaitForFirstConsumer claim is not bound to an available volume
nor provisioned until a node is selected; ``emitEventForUnboundDelayBindingClaim``'s
WaitForFirstConsumer and WaitForPodScheduled events); pkg/controller/volume/ephemeral/
controller.go (``handleVolume``: the claim ``<pod>-<volume>`` from its template, the pod
its controller; a foreign claim is a FailedBinding event on the pod)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from setpoint.client import Client, Kind
from setpoint.workloads.controllers import ephemeral, volumes
from tests.waiting import wait_for
from tests.workloads.podsim import scheduling_cluster

Obj = dict[str, Any]
POD = Kind("v1", "Pod")
PVC = Kind("v1", "PersistentVolumeClaim")
PV = Kind("v1", "PersistentVolume")
SC = Kind("storage.k8s.io/v1", "StorageClass")
CORE_EVENT = Kind("v1", "Event")
NS = "default"
NOT_HELPFUL = "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."


def pod(name: str, *volume_list: Obj) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
            "spec": {"containers": [{"name": "app", "image": "nginx"}],
                     "volumes": list(volume_list)}}


def claim_volume(claim: str, name: str = "data") -> Obj:
    return {"name": name, "persistentVolumeClaim": {"claimName": claim}}


def claim(name: str, storage_class: str | None = None, size: str = "1Gi") -> Obj:
    spec: Obj = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": NS}, "spec": spec}


def storage_class(name: str, provisioner: str, mode: str = "WaitForFirstConsumer") -> Obj:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": name}, "provisioner": provisioner,
            "volumeBindingMode": mode}


def local_volume(name: str, node: str, storage_class_name: str = "local") -> Obj:
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": "5Gi"}, "accessModes": ["ReadWriteOnce"],
                     "persistentVolumeReclaimPolicy": "Retain",
                     "storageClassName": storage_class_name,
                     "local": {"path": f"/mnt/{name}"},
                     "nodeAffinity": {"required": {"nodeSelectorTerms": [{
                         "matchExpressions": [{"key": "kubernetes.io/hostname",
                                               "operator": "In", "values": [node]}]}]}}}}


class Cluster:
    def __init__(self, client: Client) -> None:
        self.client = client

    async def get(self, kind: Kind, name: str, namespace: str | None = NS) -> Obj:
        return await self.client.get(kind, name, namespace=namespace)

    async def scheduled_on(self, name: str) -> str:
        async def node() -> str | None:
            return (await self.get(POD, name))["spec"].get("nodeName")  # type: ignore[no-any-return]
        result: str = await wait_for(node)
        return result

    async def unschedulable_message(self, name: str, expected: str) -> Obj:
        async def condition() -> Obj | None:
            for c in (await self.get(POD, name)).get("status", {}).get("conditions") or ():
                if c.get("type") == "PodScheduled" and c.get("message") == expected:
                    return c  # type: ignore[no-any-return]
            return None
        result: Obj = await wait_for(condition)
        return result

    async def core_events(self, involved: str, reason: str) -> list[Obj]:
        items = (await self.client.list(CORE_EVENT, namespace=NS)).items
        return [e for e in items if e["involvedObject"]["name"] == involved
                and e["reason"] == reason]


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    async with scheduling_cluster(volumes.install, ephemeral.install) as (client, _, _):
        yield Cluster(client)


async def test_a_missing_claim_fails_prefilter_until_it_is_made(cluster: Cluster) -> None:
    await cluster.client.create(pod("web", claim_volume("data")))
    condition = await cluster.unschedulable_message(
        "web", f'0/2 nodes are available: persistentvolumeclaim "data" not found. {NOT_HELPFUL}')
    assert condition["reason"] == "Unschedulable"
    await cluster.client.create(claim("data"))  # the default class: bound at once
    await cluster.scheduled_on("web")


async def test_an_unbound_immediate_claim_holds_the_pod(cluster: Cluster) -> None:
    # an external provisioner that never comes: the claim stays Pending
    await cluster.client.create(storage_class("external", "example.com/absent",
                                              mode="Immediate"))
    await cluster.client.create(claim("data", "external"))
    await cluster.client.create(pod("web", claim_volume("data")))
    await cluster.unschedulable_message(
        "web", "0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims. "
        + NOT_HELPFUL)


async def test_wait_for_first_consumer_provisions_on_the_scheduled_node(
        cluster: Cluster) -> None:
    await cluster.client.create(storage_class("late", "setpoint.dev/simulated"))
    await cluster.client.create(claim("data", "late"))
    waiting = await wait_for(lambda: cluster.core_events("data", "WaitForFirstConsumer"))
    assert waiting[0]["message"] == "waiting for first consumer to be created before binding"
    pvc = await cluster.get(PVC, "data")
    assert pvc["status"]["phase"] == "Pending" and not pvc["spec"].get("volumeName")

    await cluster.client.create(pod("web", claim_volume("data")))
    node = await cluster.scheduled_on("web")
    # PreBind waits for the claim to be bound before the pod is
    pvc = await cluster.get(PVC, "data")
    assert pvc["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] == node
    assert pvc["status"]["phase"] == "Bound"
    pv = await cluster.get(PV, pvc["spec"]["volumeName"], namespace=None)
    terms = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
    assert terms[0]["matchExpressions"][0]["values"] == [node]


async def test_a_static_local_volume_takes_the_pod_to_its_node(cluster: Cluster) -> None:
    await cluster.client.create(storage_class("local", "kubernetes.io/no-provisioner"))
    await cluster.client.create(local_volume("disk-2", "node-2"))
    await cluster.client.create(claim("data", "local"))
    await cluster.client.create(pod("web", claim_volume("data")))
    assert await cluster.scheduled_on("web") == "node-2"
    pv = await cluster.get(PV, "disk-2", namespace=None)
    assert pv["spec"]["claimRef"]["name"] == "data"
    assert pv["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"
    assert (await cluster.get(PVC, "data"))["spec"]["volumeName"] == "disk-2"


async def test_no_volume_and_no_provisioner_is_a_bind_conflict_on_every_node(
        cluster: Cluster) -> None:
    await cluster.client.create(storage_class("local", "kubernetes.io/no-provisioner"))
    await cluster.client.create(claim("data", "local"))
    await cluster.client.create(pod("web", claim_volume("data")))
    await cluster.unschedulable_message(
        "web", "0/2 nodes are available: 2 node(s) didn't find available persistent volumes "
        "to bind. " + NOT_HELPFUL)
    # a volume that fits appears: the pod is tried again and goes to its node
    await cluster.client.create(local_volume("disk-1", "node-1"))
    assert await cluster.scheduled_on("web") == "node-1"


async def test_a_bound_volume_on_no_node_is_a_node_affinity_conflict(cluster: Cluster) -> None:
    await cluster.client.create(local_volume("elsewhere", "node-9", "manual"))
    await cluster.client.create(claim("data", "manual"))

    async def bound() -> bool:
        return bool((await cluster.get(PVC, "data")).get("status", {}).get("phase") == "Bound")

    await wait_for(bound)
    await cluster.client.create(pod("web", claim_volume("data")))
    await cluster.unschedulable_message(
        "web", "0/2 nodes are available: 2 node(s) had volume node affinity conflict. "
        + NOT_HELPFUL)


async def test_an_ephemeral_volume_gets_its_claim_owned_by_the_pod(cluster: Cluster) -> None:
    template = {"metadata": {"labels": {"type": "scratch"}},
                "spec": {"accessModes": ["ReadWriteOnce"],
                         "resources": {"requests": {"storage": "1Gi"}}}}
    created = await cluster.client.create(pod("web", {
        "name": "scratch", "ephemeral": {"volumeClaimTemplate": template}}))
    await cluster.scheduled_on("web")
    pvc = await cluster.get(PVC, "web-scratch")
    assert pvc["metadata"]["labels"] == {"type": "scratch"}
    assert pvc["metadata"]["ownerReferences"] == [{
        "apiVersion": "v1", "kind": "Pod", "name": "web",
        "uid": created["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]
    assert pvc["status"]["phase"] == "Bound"


async def test_a_foreign_claim_of_an_ephemeral_volumes_name_is_refused(
        cluster: Cluster) -> None:
    await cluster.client.create(claim("web-scratch"))
    template = {"spec": {"accessModes": ["ReadWriteOnce"],
                         "resources": {"requests": {"storage": "1Gi"}}}}
    await cluster.client.create(pod("web", {
        "name": "scratch", "ephemeral": {"volumeClaimTemplate": template}}))
    refusal = "PVC default/web-scratch was not created for pod default/web (pod is not owner)"
    await cluster.unschedulable_message("web", f"0/2 nodes are available: {refusal}. "
                                        + NOT_HELPFUL)
    failed = await wait_for(lambda: cluster.core_events("web", "FailedBinding"))
    assert failed[0]["message"] == f"ephemeral volume scratch: {refusal}"
    assert failed[0]["type"] == "Warning"


async def test_a_provisioner_that_gives_up_fails_the_binding_cycle(cluster: Cluster) -> None:
    """binder.go ``checkBindings``: a provisioner that cannot provision takes the selected
    node away, and the binding cycle fails with "provisioning failed"; schedule_one.go
    ``handleSchedulingFailure`` then writes ``PodScheduled=False`` with reason
    SchedulerError (not Unschedulable: it is no FitError) and the FailedScheduling warning."""
    await cluster.client.create(storage_class("external", "example.com/failing"))
    await cluster.client.create(claim("data", "external"))
    await cluster.client.create(pod("web", claim_volume("data")))

    async def selected() -> Obj | None:
        pvc = await cluster.get(PVC, "data")
        annotations = pvc["metadata"].get("annotations") or {}
        return pvc if "volume.kubernetes.io/selected-node" in annotations else None

    await wait_for(selected)
    # the external provisioner fails, as sig-storage-lib-external-provisioner's
    # rescheduleProvisioning does: it removes the annotation. A merge patch, not an update
    # of the object read: the PV controller writes the claim too, and a stale update would
    # lose that race now and then (a conflict)
    await cluster.client.patch(
        PVC, "data", {"metadata": {"annotations": {"volume.kubernetes.io/selected-node": None}}},
        namespace=NS)
    message = ('running PreBind plugin "VolumeBinding": binding volumes: provisioning failed '
               'for PVC "data"')
    condition = await cluster.unschedulable_message("web", message)
    assert condition["reason"] == "SchedulerError" and condition["status"] == "False"
    assert not (await cluster.get(POD, "web"))["spec"].get("nodeName")

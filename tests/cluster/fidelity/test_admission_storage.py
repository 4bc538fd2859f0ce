"""StorageObjectInUseProtection and the two controllers that lift it, DefaultStorageClass and
PersistentVolumeClaimResize, over real HTTP to one plain API server per module (no
workloads: no PV controller, no kubelet).

Sources: plugin/pkg/admission/storage/storageobjectinuseprotection/admission.go,
pkg/controller/volume/pvcprotection/pvc_protection_controller.go,
pkg/controller/volume/pvprotection/pv_protection_controller.go,
plugin/pkg/admission/storage/persistentvolume/claim/setdefault/admission.go and
pkg/volume/util/storageclass.go (``GetDefaultClass``),
plugin/pkg/admission/storage/persistentvolume/resize/admission.go. Each test uses names of its own.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from setpoint.cluster.admission.defaultstorageclass import default_class
from tests.cluster.conftest import API
from tests.waiting import quiet_period, wait_for

pytestmark = pytest.mark.asyncio(loop_scope="module")

NS = "/api/v1/namespaces/default"
CLAIMS = f"{NS}/persistentvolumeclaims"
PODS = f"{NS}/pods"
VOLUMES = "/api/v1/persistentvolumes"
CLASSES = "/apis/storage.k8s.io/v1/storageclasses"
MERGE = "application/merge-patch+json"
_names = itertools.count()


def _name(prefix: str) -> str:
    return f"{prefix}-{next(_names)}"


def _claim(name: str, **meta: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, **meta},
            "spec": {"accessModes": ["ReadWriteOnce"],
                     "resources": {"requests": {"storage": "1Gi"}}}}


def _volume(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                     "hostPath": {"path": "/tmp/v"}, "storageClassName": ""}}


def _pod(name: str, claim: str, node: str | None = "node-a") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "busybox:1.36"}],
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]}
    if node is not None:
        spec["nodeName"] = node
    return {"metadata": {"name": name}, "spec": spec}


async def _created(api: API, path: str, body: dict[str, Any]) -> dict[str, Any]:
    status, obj = await api.post(path, body)
    assert status == 201, obj
    assert isinstance(obj, dict)
    return obj


async def _gone(api: API, path: str) -> bool:
    status, _ = await api.get(path)
    return status == 404


async def test_created_claims_and_volumes_get_their_protection_finalizer(
        module_api: API) -> None:
    """admission.go: the finalizer is appended (after any the object has), once."""
    claim = await _created(module_api, CLAIMS, _claim(_name("fin"),
                                                      finalizers=["example.com/keep"]))
    assert claim["metadata"]["finalizers"] == ["example.com/keep",
                                               "kubernetes.io/pvc-protection"]
    again = await _created(module_api, CLAIMS, _claim(
        _name("fin"), finalizers=["kubernetes.io/pvc-protection"]))
    assert again["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
    volume = await _created(module_api, VOLUMES, _volume(_name("fin-pv")))
    assert volume["metadata"]["finalizers"] == ["kubernetes.io/pv-protection"]


async def test_an_unused_claim_is_deleted(module_api: API) -> None:
    """pvc_protection_controller.go: no pod uses the claim, so the finalizer goes at once; a
    pod not yet scheduled does not count (``podUsesPVC`` looks at scheduled pods only)."""
    name = _name("unused")
    await _created(module_api, CLAIMS, _claim(name))
    await _created(module_api, PODS, _pod(_name("pending"), name, node=None))
    status, _ = await module_api.delete(f"{CLAIMS}/{name}")
    assert status == 200
    await wait_for(lambda: _gone(module_api, f"{CLAIMS}/{name}"))


async def test_a_claim_in_use_by_a_scheduled_pod_waits_for_the_pod(module_api: API) -> None:
    """pvc_protection_controller.go: the claim stays (terminating) while a scheduled pod
    that is not terminated names it, and goes once that pod is deleted."""
    name, pod = _name("used"), _name("user")
    await _created(module_api, CLAIMS, _claim(name))
    await _created(module_api, PODS, _pod(pod, name))
    status, _ = await module_api.delete(f"{CLAIMS}/{name}")
    assert status == 200
    await quiet_period()
    status, kept = await module_api.get(f"{CLAIMS}/{name}")
    assert status == 200
    assert kept["metadata"]["deletionTimestamp"]
    assert kept["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
    status, _ = await module_api.delete(f"{PODS}/{pod}", {"gracePeriodSeconds": 0})
    assert status == 200
    await wait_for(lambda: _gone(module_api, f"{CLAIMS}/{name}"))


async def test_a_claim_of_a_succeeded_pod_is_released(module_api: API) -> None:
    """enqueuePVCs: a terminated pod's update enqueues its claims; a pod that is Succeeded
    still names the claim, and ``podUsesPVC`` counts a scheduled pod whatever its phase, so
    the claim waits for the pod object to go (as on a real cluster)."""
    name, pod = _name("done"), _name("done-pod")
    await _created(module_api, CLAIMS, _claim(name))
    await _created(module_api, PODS, _pod(pod, name))
    await module_api.delete(f"{CLAIMS}/{name}")
    status, _ = await module_api.patch(f"{PODS}/{pod}/status",
                                       {"status": {"phase": "Succeeded"}}, MERGE)
    assert status == 200
    await quiet_period()
    assert not await _gone(module_api, f"{CLAIMS}/{name}")
    await module_api.delete(f"{PODS}/{pod}", {"gracePeriodSeconds": 0})
    await wait_for(lambda: _gone(module_api, f"{CLAIMS}/{name}"))


async def test_a_bound_volume_waits_until_it_is_no_longer_bound(module_api: API) -> None:
    """pv_protection_controller.go ``isBeingUsed``: status.phase Bound keeps the volume."""
    name = _name("bound-pv")
    await _created(module_api, VOLUMES, _volume(name))
    status, _ = await module_api.patch(f"{VOLUMES}/{name}/status",
                                       {"status": {"phase": "Bound"}}, MERGE)
    assert status == 200
    status, _ = await module_api.delete(f"{VOLUMES}/{name}")
    assert status == 200
    await quiet_period()
    status, kept = await module_api.get(f"{VOLUMES}/{name}")
    assert status == 200 and kept["metadata"]["finalizers"] == ["kubernetes.io/pv-protection"]
    await module_api.patch(f"{VOLUMES}/{name}/status", {"status": {"phase": "Released"}}, MERGE)
    await wait_for(lambda: _gone(module_api, f"{VOLUMES}/{name}"))


async def test_an_available_volume_is_deleted(module_api: API) -> None:
    name = _name("free-pv")
    await _created(module_api, VOLUMES, _volume(name))
    await module_api.delete(f"{VOLUMES}/{name}")
    await wait_for(lambda: _gone(module_api, f"{VOLUMES}/{name}"))


async def test_a_classless_claim_gets_the_default_storage_class(module_api: API) -> None:
    """setdefault/admission.go: CREATE of a claim with no class (neither
    ``spec.storageClassName`` nor the beta annotation) names the default class, beta
    annotation ``storageclass.beta.kubernetes.io/is-default-class`` included; an explicit
    ``""`` and the beta claim annotation are left alone."""
    status, listed = await module_api.get(CLASSES)
    assert status == 200 and not listed["items"], "this module's server has no class yet"
    claim = await _created(module_api, CLAIMS, _claim(_name("nodefault")))
    assert "storageClassName" not in claim["spec"]
    await _created(module_api, CLASSES, {
        "metadata": {"name": "beta-default",
                     "annotations": {"storageclass.beta.kubernetes.io/is-default-class":
                                     "true"}},
        "provisioner": "example.com/none"})
    try:
        claim = await _created(module_api, CLAIMS, _claim(_name("defaulted")))
        assert claim["spec"]["storageClassName"] == "beta-default"
        explicit = _claim(_name("explicit"))
        explicit["spec"]["storageClassName"] = ""
        claim = await _created(module_api, CLAIMS, explicit)
        assert claim["spec"]["storageClassName"] == ""
        claim = await _created(module_api, CLAIMS, _claim(
            _name("beta"), annotations={"volume.beta.kubernetes.io/storage-class": "slow"}))
        assert "storageClassName" not in claim["spec"]
    finally:
        await module_api.delete(f"{CLASSES}/beta-default")


async def test_the_newest_default_class_wins_then_the_first_by_name() -> None:
    """storageclass.go ``GetDefaultClass``: newest creationTimestamp first, ties by name."""
    def sc(name: str, ts: str, default: str = "true") -> dict[str, Any]:
        return {"metadata": {"name": name, "creationTimestamp": ts, "annotations": {
            "storageclass.kubernetes.io/is-default-class": default}}}

    older, newer = sc("z-old", "2024-01-01T00:00:00Z"), sc("m-new", "2024-01-02T00:00:00Z")
    tie_b, tie_a = sc("b", "2024-01-02T00:00:00Z"), sc("a", "2024-01-02T00:00:00Z")
    assert default_class([older, newer]) is newer
    assert default_class([tie_b, older, tie_a, newer]) is tie_a
    assert default_class([sc("x", "2024-01-03T00:00:00Z", default="false")]) is None


async def _grow(api: API, name: str, size: str) -> tuple[int, Any]:
    return await api.patch(f"{CLAIMS}/{name}",
                           {"spec": {"resources": {"requests": {"storage": size}}}}, MERGE)


async def test_a_claim_grows_only_when_bound_and_its_class_allows_expansion(
        module_api: API) -> None:
    """resize/admission.go: a larger storage request of a Bound claim whose class does not
    set ``allowVolumeExpansion: true`` is refused with 403."""
    for cls, expand in (("grows", True), ("fixed", False)):
        await _created(module_api, CLASSES, {"metadata": {"name": cls},
                                             "provisioner": "example.com/none",
                                             "allowVolumeExpansion": expand})
    try:
        pending, fixed, grows = _name("pending"), _name("fixed"), _name("grows")
        for name, cls in ((pending, "grows"), (fixed, "fixed"), (grows, "grows")):
            body = _claim(name)
            body["spec"]["storageClassName"] = cls
            await _created(module_api, CLAIMS, body)
        # an unbound claim's spec is immutable: validation (422) answers before the plugin
        # (whose "Only bound persistent volume claims can be expanded" a spec update cannot
        # reach, the status being the stored one)
        status, body = await _grow(module_api, pending, "2Gi")
        assert (status, body["reason"]) == (422, "Invalid")
        for name in (fixed, grows):
            status, _ = await module_api.patch(f"{CLAIMS}/{name}/status",
                                               {"status": {"phase": "Bound"}}, MERGE)
            assert status == 200
        status, body = await _grow(module_api, fixed, "2Gi")
        assert (status, body["reason"], body["details"]) == (
            403, "Forbidden", {"name": fixed, "kind": "persistentvolumeclaims"})
        assert body["message"] == (
            f'persistentvolumeclaims "{fixed}" is forbidden: only dynamically '
            "provisioned pvc can be resized and the storageclass that provisions the pvc "
            "must support resize")
        status, body = await _grow(module_api, grows, "2Gi")
        assert status == 200, body
        assert body["spec"]["resources"]["requests"]["storage"] == "2Gi"
    finally:
        for cls in ("grows", "fixed"):
            await module_api.delete(f"{CLASSES}/{cls}")

"""The ``pvc-protection`` controller: a claim being deleted goes once no live pod uses it.

A port of kube-controller-manager's pkg/controller/volume/pvcprotection: the
StorageObjectInUseProtection admission plugin gives every PersistentVolumeClaim the
``kubernetes.io/pvc-protection`` finalizer; this controller removes it from a claim being
deleted when no pod of its namespace uses it (``podUsesPVC``: a scheduled pod naming it in a
``persistentVolumeClaim`` volume, or in a generic ephemeral volume owned by that pod unless
the pod is shut down), and adds it to a claim not being deleted that lacks it. Pod events
enqueue the claims of pods that can no longer hold them (deleted, terminated or unscheduled,
``enqueuePVCs``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from setpoint.cluster.controllers.protectionutil import (
    is_deletion_candidate,
    need_to_add_finalizer,
    with_finalizer,
    without_finalizer,
)
from setpoint.cluster.controllers.queue import WorkQueue
from setpoint.cluster.controllers.resources import controller_write
from setpoint.cluster.serializer.decode import Decoded
from setpoint.cluster.storage import Event
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.registry.rest import REST
    from setpoint.cluster.registry.types import ResourceType
    from setpoint.cluster.storage import Informer

PERSISTENT_VOLUME_CLAIMS = "/persistentvolumeclaims"
PODS = "/pods"
PVC_PROTECTION_FINALIZER = "kubernetes.io/pvc-protection"


def ephemeral_claim_name(pod: Obj, volume: Obj) -> str:
    """``ephemeral.VolumeClaimName``: ``<pod name>-<volume name>``."""
    return f"{pod['metadata'].get('name', '')}-{volume.get('name', '')}"


def volume_is_for_pod(pod: Obj, pvc: Obj) -> bool:
    """``ephemeral.VolumeIsForPod``: the claim is controlled by the pod."""
    uid = pod["metadata"].get("uid")
    return any(ref.get("controller") and ref.get("uid") == uid
               for ref in pvc["metadata"].get("ownerReferences") or [])


def pod_is_shut_down(pod: Obj) -> bool:
    """``podIsShutDown``: being deleted with a zero grace period (done by the kubelet, or
    force-deleted)."""
    meta = pod["metadata"]
    return bool(meta.get("deletionTimestamp")) and meta.get("deletionGracePeriodSeconds") == 0


def pod_is_terminated(pod: Obj) -> bool:
    """``volumeutil.IsPodTerminated``: Failed or Succeeded, or being deleted with no
    container running."""
    status = pod.get("status") or {}
    if status.get("phase") in ("Failed", "Succeeded"):
        return True
    if not pod["metadata"].get("deletionTimestamp"):
        return False
    return all("terminated" in (s.get("state") or {}) or "waiting" in (s.get("state") or {})
               for s in status.get("containerStatuses") or [])


def pod_uses_pvc(pod: Obj, pvc: Obj) -> bool:
    """``podUsesPVC``: only scheduled pods count, as the kubelet will not start a pod whose
    claim is being deleted."""
    if not (pod.get("spec") or {}).get("nodeName"):
        return False
    name = pvc["metadata"].get("name")
    for volume in pod["spec"].get("volumes") or []:
        source = volume.get("persistentVolumeClaim")
        if source is not None and source.get("claimName") == name:
            return True
        if (volume.get("ephemeral") is not None and not pod_is_shut_down(pod)
                and ephemeral_claim_name(pod, volume) == name and volume_is_for_pod(pod, pvc)):
            return True
    return False


class PVCProtectionController:
    """Removes ``kubernetes.io/pvc-protection`` from deleted claims no pod uses."""

    def __init__(self, store: Informer, rest: REST, rt: ResourceType) -> None:
        self._store = store
        self._rest = rest
        self._rt = rt
        self.queue: WorkQueue[tuple[str, str]] = WorkQueue("pvc-protection", self._sync)
        store.add_listener(self._on_event, (PERSISTENT_VOLUME_CLAIMS, PODS))

    def start(self) -> None:
        for pvc in self._store.list(PERSISTENT_VOLUME_CLAIMS):
            self._enqueue_claim(pvc)

    def _on_event(self, event: Event) -> None:
        if event.resource == PERSISTENT_VOLUME_CLAIMS:
            if event.type != "DELETED":
                self._enqueue_claim(event.obj)
            return
        # pods: most name no claim, and are not decoded for it
        if event.raw is not None and b'"persistentVolumeClaim"' not in event.raw \
                and b'"ephemeral"' not in event.raw:
            return
        pod = event.obj
        self._enqueue_claims_of(pod, deleted=event.type == "DELETED")
        prev = event.prev
        # an update may hide the deletion of one pod and the creation of another of its name
        if prev is not None and prev["metadata"].get("uid") != pod["metadata"].get("uid"):
            self._enqueue_claims_of(prev, deleted=True)

    def _enqueue_claim(self, pvc: Obj) -> None:
        # pvcAddedUpdated
        if (need_to_add_finalizer(pvc, PVC_PROTECTION_FINALIZER)
                or is_deletion_candidate(pvc, PVC_PROTECTION_FINALIZER)):
            self.queue.add((pvc["metadata"].get("namespace", ""), pvc["metadata"]["name"]))

    def _enqueue_claims_of(self, pod: Obj, *, deleted: bool) -> None:
        # enqueuePVCs: a live scheduled pod cannot help a claim lose its finalizer
        spec = pod.get("spec") or {}
        if not deleted and not pod_is_terminated(pod) and spec.get("nodeName"):
            return
        namespace = pod["metadata"].get("namespace", "")
        for volume in spec.get("volumes") or []:
            source = volume.get("persistentVolumeClaim")
            if source is not None:
                self.queue.add((namespace, source.get("claimName", "")))
            elif volume.get("ephemeral") is not None:
                self.queue.add((namespace, ephemeral_claim_name(pod, volume)))

    def _sync(self, key: tuple[str, str]) -> None:
        namespace, name = key
        pvc = self._store.get(PERSISTENT_VOLUME_CLAIMS, namespace, name)
        if pvc is None:
            return
        if is_deletion_candidate(pvc, PVC_PROTECTION_FINALIZER) and not any(
                pod_uses_pvc(pod, pvc) for pod in self._store.list(PODS, namespace)):
            self._write(without_finalizer(pvc, PVC_PROTECTION_FINALIZER))
            return
        if need_to_add_finalizer(pvc, PVC_PROTECTION_FINALIZER):
            self._write(with_finalizer(pvc, PVC_PROTECTION_FINALIZER))

    def _write(self, pvc: Obj) -> None:
        # a conflict (the claim moved on) is retried by the queue with the newer object
        meta = pvc["metadata"]
        self._rest.update(self._rt, meta.get("namespace"), meta["name"], Decoded(pvc),
                          controller_write())

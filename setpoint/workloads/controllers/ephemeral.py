"""The ephemeral volume controller: a pod's generic ephemeral volumes get their claims.

A port of pkg/controller/volume/ephemeral/controller.go: each volume with an ``ephemeral``
source gets the PersistentVolumeClaim ``<pod>-<volume>``, made from its
``volumeClaimTemplate`` (labels, annotations and spec) and controlled by the pod (so the
garbage collector removes it with the pod). A claim of that name that some other owner
controls is reported on the pod (``FailedBinding``) and left alone. Pods are looked at when
added (their spec cannot change) and again when one of their claims is deleted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from setpoint.client import AlreadyExistsError, ApiError, Kind
from setpoint.machinery.objects import Obj
from setpoint.runtime import Controller, EventRecorder, Funcs, Manager, Request, Result
from setpoint.runtime._objects import meta, name_of, namespace_of
from setpoint.workloads.controllers.podcontrol import component_recorder
from setpoint.workloads.settings import WorkloadSettings
from setpoint.workloads.volumeclaims import volume_is_for_pod

POD = Kind("v1", "Pod")
PVC = Kind("v1", "PersistentVolumeClaim")


def ephemeral_volumes(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [v for v in (pod.get("spec") or {}).get("volumes") or ()
            if v.get("ephemeral") is not None]


def claim_for(pod: Obj, volume: Mapping[str, Any]) -> Obj:
    """The claim ``handleVolume`` creates for one ephemeral volume."""
    template = (volume.get("ephemeral") or {}).get("volumeClaimTemplate") or {}
    template_meta = template.get("metadata") or {}
    metadata: dict[str, Any] = {
        "name": f"{name_of(pod)}-{volume.get('name')}",
        "namespace": namespace_of(pod),
        "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": name_of(pod),
                             "uid": meta(pod).get("uid"), "controller": True,
                             "blockOwnerDeletion": True}]}
    if template_meta.get("labels"):
        metadata["labels"] = dict(template_meta["labels"])
    if template_meta.get("annotations"):
        metadata["annotations"] = dict(template_meta["annotations"])
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": metadata,
            "spec": dict(template.get("spec") or {})}


class EphemeralVolumes:
    """``syncHandler``: one pod per request."""

    def __init__(self, manager: Manager, events: EventRecorder | None = None) -> None:
        self.manager = manager
        self.events = events

    def __repr__(self) -> str:
        return "EphemeralVolumes()"

    async def reconcile(self, request: Request) -> Result:
        pod = self.manager.cache.get(POD, request.name, request.namespace)
        if pod is None or meta(pod).get("deletionTimestamp"):
            return Result()
        for volume in ephemeral_volumes(pod):
            error = await self._handle_volume(pod, volume)
            if error:
                if self.events is not None:
                    self.events.warning(pod, "FailedBinding",
                                        f"ephemeral volume {volume.get('name')}: {error}")
                raise RuntimeError(error)  # retried with backoff, as the workqueue does
        return Result()

    async def _handle_volume(self, pod: Obj, volume: Mapping[str, Any]) -> str:
        """``handleVolume``: '' when the claim is there (made now or before), else why not."""
        wanted = claim_for(pod, volume)
        name = wanted["metadata"]["name"]
        existing = self.manager.cache.get(PVC, name, namespace_of(pod))
        if existing is not None:
            return volume_is_for_pod(pod, existing)
        try:
            self.manager.writer.record(await self.manager.client.create(wanted))
        except AlreadyExistsError:
            return ""  # made meanwhile: the next look checks its owner
        except ApiError as exc:
            return f"create PVC {name}: {exc}"
        return ""


def install(manager: Manager, settings: WorkloadSettings) -> None:
    """Add the ephemeral volume controller."""

    def pods_of_claim(claim: Obj) -> Iterable[Request]:
        # onPVCDelete: the pod that should have this claim, by its owner reference
        for ref in meta(claim).get("ownerReferences") or ():
            if ref.get("kind") == "Pod" and ref.get("controller"):
                yield Request(namespace_of(claim), str(ref.get("name")))

    events = component_recorder(manager, "ephemeral_volume")
    manager.add(Controller.for_(POD, name="ephemeral-volume", predicates=[Funcs(
                    create=lambda pod: bool(ephemeral_volumes(pod))
                    and not meta(pod).get("deletionTimestamp"),
                    update=lambda old, new: False, delete=lambda _: False)])
                .watches(PVC, map_func=lambda claim: list(pods_of_claim(claim)),
                         predicates=[Funcs(create=lambda _: False,
                                           update=lambda old, new: False)])
                .reconciler(EphemeralVolumes(manager, events)))

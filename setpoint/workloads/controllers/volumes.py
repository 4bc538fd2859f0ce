"""PersistentVolumeClaims bound to PersistentVolumes: the PV controller and a provisioner.

A port of what ``pkg/controller/volume/persistentvolume`` and a dynamic provisioner do
together, with volumes that are only data:

- At start the default StorageClass ``standard`` is created (annotation
  ``storageclass.kubernetes.io/is-default-class: "true"``, provisioner
  ``setpoint.dev/simulated``, reclaim policy Delete, binding mode Immediate).
- A claim without ``storageClassName`` gets the default class (the retroactive default
  assignment of Kubernetes 1.28+).
- A pending claim binds to the smallest Available volume that satisfies it (class, access
  modes, volume mode, selector, capacity); failing that, when its class's provisioner is
  ours, a volume ``pvc-<claim uid>`` is provisioned for it (a ``hostPath`` source), with
  the ``Provisioning``/``ProvisioningSucceeded`` events.
- Binding writes the volume first (``claimRef``, phase Bound), then the claim
  (``volumeName``, ``pv.kubernetes.io/bind-completed`` and ``bound-by-controller``
  annotations), then the claim's status (phase Bound, capacity, access modes).
- A volume whose claim is gone is Released; with reclaim policy Delete, a volume this
  provisioner made is deleted.
"""

from __future__ import annotations

import contextlib
from typing import Any

from setpoint.client import AlreadyExistsError, Kind, NotFoundError
from setpoint.machinery.labels import from_label_selector
from setpoint.machinery.objects import Obj
from setpoint.machinery.quantity import Quantity
from setpoint.runtime import Controller, EventRecorder, Manager, Request, Result
from setpoint.runtime._objects import clone, meta, name_of, namespace_of
from setpoint.workloads.controllers.podcontrol import component_recorder
from setpoint.workloads.settings import WorkloadSettings
from setpoint.workloads.volumeclaims import ANN_SELECTED_NODE, claim_names

PVC = Kind("v1", "PersistentVolumeClaim")
PV = Kind("v1", "PersistentVolume")
STORAGE_CLASS = Kind("storage.k8s.io/v1", "StorageClass")
POD = Kind("v1", "Pod")

PROVISIONER = "setpoint.dev/simulated"
DEFAULT_CLASS = "standard"
IS_DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
BETA_IS_DEFAULT_CLASS = "storageclass.beta.kubernetes.io/is-default-class"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
BETA_STORAGE_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"
VOLUME_ROOT = "/var/lib/setpoint/volumes"

DEFAULT_STORAGE_CLASS: Obj = {
    "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
    "metadata": {"name": DEFAULT_CLASS, "annotations": {IS_DEFAULT_CLASS: "true"}},
    "provisioner": PROVISIONER, "reclaimPolicy": "Delete",
    "volumeBindingMode": "Immediate", "allowVolumeExpansion": True,
}


def default_class(classes: list[Obj]) -> Obj | None:
    """The default StorageClass (pkg/volume/util/storageclass.go ``GetDefaultClass``): the
    GA or beta annotation; of several the newest wins, of equally new ones the first by name."""
    defaults = sorted((c for c in classes
                       if any((meta(c).get("annotations") or {}).get(a) == "true"
                              for a in (IS_DEFAULT_CLASS, BETA_IS_DEFAULT_CLASS))),
                      key=name_of)
    # a stable sort by creation time, newest first, keeps equally new ones by name
    defaults.sort(key=lambda c: str(meta(c).get("creationTimestamp") or ""), reverse=True)
    return defaults[0] if defaults else None


def requested_storage(claim: Obj) -> Quantity:
    requests = ((claim.get("spec") or {}).get("resources") or {}).get("requests") or {}
    return Quantity.parse(str(requests.get("storage") or "0"))


def volume_matches(pv: Obj, claim: Obj) -> bool:
    """Whether an Available volume can serve the claim (``FindMatchingVolume``)."""
    spec, cspec = pv.get("spec") or {}, claim.get("spec") or {}
    if meta(pv).get("deletionTimestamp"):
        return False
    ref = spec.get("claimRef")
    if ref and not (ref.get("name") == name_of(claim)
                    and ref.get("namespace") == namespace_of(claim)
                    and ref.get("uid") in (None, "", meta(claim).get("uid"))):
        return False
    if not ref and (pv.get("status") or {}).get("phase") not in (None, "", "Available"):
        return False
    if (spec.get("storageClassName") or "") != (cspec.get("storageClassName") or ""):
        return False
    if (spec.get("volumeMode") or "Filesystem") != (cspec.get("volumeMode") or "Filesystem"):
        return False
    if not set(cspec.get("accessModes") or []) <= set(spec.get("accessModes") or []):
        return False
    selector = cspec.get("selector")
    if selector and not from_label_selector(selector).matches(meta(pv).get("labels") or {}):
        return False
    capacity = Quantity.parse(str((spec.get("capacity") or {}).get("storage") or "0"))
    return capacity >= requested_storage(claim)


def _capacity(pv: Obj) -> Quantity:
    capacity = ((pv.get("spec") or {}).get("capacity") or {}).get("storage")
    return Quantity.parse(str(capacity or "0"))


def _claim_ref(claim: Obj) -> Obj:
    m = meta(claim)
    return {"kind": "PersistentVolumeClaim", "namespace": m.get("namespace"),
            "name": m.get("name"), "uid": m.get("uid"), "apiVersion": "v1",
            "resourceVersion": m.get("resourceVersion")}


class ClaimBinder:
    """Reconciles PersistentVolumeClaims: default class, matching, provisioning, binding."""

    def __init__(self, manager: Manager, events: EventRecorder | None = None) -> None:
        self.manager = manager
        self.events = events

    def __repr__(self) -> str:
        return "ClaimBinder()"

    def _event(self, obj: Obj, type_: str, reason: str, note: str) -> None:
        if self.events is not None:
            self.events.event(obj, type_, reason, note)

    async def reconcile(self, request: Request) -> Result:
        claim = self.manager.cache.get(PVC, request.name, request.namespace)
        if claim is None or meta(claim).get("deletionTimestamp"):
            return Result()
        spec = claim.get("spec") or {}
        if spec.get("volumeName"):
            await self._complete_binding(claim)
            return Result()
        classes = self.manager.cache.list_raw(STORAGE_CLASS)
        if spec.get("storageClassName") is None:
            chosen = default_class(classes)
            if chosen is None:
                return Result()
            claim["spec"]["storageClassName"] = name_of(chosen)
            claim = await self.manager.client.update(claim)
            self.manager.writer.record(claim)
            spec = claim.get("spec") or {}
        class_name = spec["storageClassName"]
        storage_class = next((c for c in classes if name_of(c) == class_name), None)
        # a class binding at its first consumer leaves the choice of a volume to the
        # scheduler, which names the claim in the volume's claimRef (a pre-bound volume)
        # or the node to provision on (findMatchingVolume with delayBinding and no node)
        delay = storage_class is not None and \
            storage_class.get("volumeBindingMode") == "WaitForFirstConsumer"
        candidates = [pv for pv in self.manager.cache.list_raw(PV) if volume_matches(pv, claim)
                      and (not delay or (pv.get("spec") or {}).get("claimRef"))]
        if candidates:
            candidates.sort(key=lambda pv: (_capacity(pv), name_of(pv)))
            await self._bind(claim, candidates[0])
            return Result()
        if delay and ANN_SELECTED_NODE not in (meta(claim).get("annotations") or {}):
            self._wait_for_first_consumer(claim)
            await self._set_claim_phase(claim, "Pending")
            return Result()
        if storage_class is None or not class_name:
            note = ("no persistent volumes available for this claim and no storage class is set"
                    if not class_name else
                    f'storageclass.storage.k8s.io "{class_name}" not found')
            self._event(claim, "Warning", "ProvisioningFailed" if class_name else
                        "FailedBinding", note)
            await self._set_claim_phase(claim, "Pending")
            return Result()
        if storage_class.get("provisioner") != PROVISIONER:
            await self._annotate_provisioner(claim, str(storage_class.get("provisioner")))
            self._event(claim, "Normal", "ExternalProvisioning",
                        "Waiting for a volume to be created either by the external provisioner "
                        f"'{storage_class.get('provisioner')}' or manually by the system "
                        "administrator. If volume creation is delayed, please verify that the "
                        "provisioner is running and correctly registered.")
            return Result()
        claim = await self._annotate_provisioner(claim, PROVISIONER)
        pv = await self._provision(claim, storage_class)
        await self._bind(claim, pv)
        return Result()

    def _wait_for_first_consumer(self, claim: Obj) -> None:
        """``emitEventForUnboundDelayBindingClaim``: which pods, not yet scheduled, the
        claim waits for (``findNonScheduledPodsByPVC``), or that it waits for one."""
        namespace, name = namespace_of(claim), name_of(claim)
        waiting = sorted(
            name_of(pod) for pod in self.manager.cache.list_raw(POD, namespace=namespace)
            if not (pod.get("spec") or {}).get("nodeName")
            and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
            and any(claim_name == name for claim_name, _ in claim_names(pod)))
        if not waiting:
            self._event(claim, "Normal", "WaitForFirstConsumer",
                        "waiting for first consumer to be created before binding")
        elif len(waiting) == 1:
            self._event(claim, "Normal", "WaitForPodScheduled",
                        f"waiting for pod {waiting[0]} to be scheduled")
        else:
            self._event(claim, "Normal", "WaitForPodScheduled",
                        f"waiting for pods {','.join(waiting)} to be scheduled")

    async def _annotate_provisioner(self, claim: Obj, provisioner: str) -> Obj:
        annotations = meta(claim).get("annotations") or {}
        if annotations.get(STORAGE_PROVISIONER) == provisioner:
            return claim
        body = clone(claim)
        body["metadata"].setdefault("annotations", {}).update(
            {STORAGE_PROVISIONER: provisioner, BETA_STORAGE_PROVISIONER: provisioner})
        updated: Obj = await self.manager.client.update(body)
        self.manager.writer.record(updated)
        return updated

    async def _provision(self, claim: Obj, storage_class: Obj) -> Obj:
        name = f"pvc-{meta(claim).get('uid')}"
        existing = self.manager.cache.get(PV, name)
        if existing is not None:
            return dict(existing)
        self._event(claim, "Normal", "Provisioning", "External provisioner is provisioning "
                    f'volume for claim "{namespace_of(claim)}/{name_of(claim)}"')
        cspec = claim.get("spec") or {}
        pv: Obj = {
            "apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": name, "annotations": {PROVISIONED_BY: PROVISIONER}},
            "spec": {
                "accessModes": list(cspec.get("accessModes") or ["ReadWriteOnce"]),
                "capacity": {"storage": str(
                    ((cspec.get("resources") or {}).get("requests") or {}).get("storage")
                    or requested_storage(claim))},
                "claimRef": _claim_ref(claim),
                "hostPath": {"path": f"{VOLUME_ROOT}/{name}", "type": "DirectoryOrCreate"},
                "persistentVolumeReclaimPolicy": storage_class.get("reclaimPolicy") or "Delete",
                "storageClassName": name_of(storage_class),
                "volumeMode": cspec.get("volumeMode") or "Filesystem",
            },
        }
        if storage_class.get("mountOptions"):
            pv["spec"]["mountOptions"] = list(storage_class["mountOptions"])
        selected = (meta(claim).get("annotations") or {}).get(ANN_SELECTED_NODE)
        if selected:
            # a volume provisioned for the node the scheduler chose stays on it, as a
            # local-path provisioner's does (the pod comes back to its data)
            pv["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{
                "matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                                      "values": [selected]}]}]}}
        try:
            created: Obj = await self.manager.client.create(pv)
        except AlreadyExistsError:
            created = await self.manager.client.get(PV, name)
        self.manager.writer.record(created)
        self._event(claim, "Normal", "ProvisioningSucceeded",
                    f"Successfully provisioned volume {name}")
        return created

    async def _bind(self, claim: Obj, pv: Obj) -> None:
        """``bind``: the volume first, then the claim, then the claim's status."""
        client = self.manager.client
        spec = pv.get("spec") or {}
        ref = spec.get("claimRef") or {}
        if ref.get("uid") != meta(claim).get("uid") or ref.get("name") != name_of(claim):
            body = clone(pv)
            body["spec"]["claimRef"] = _claim_ref(claim)
            body["metadata"].setdefault("annotations", {})[BOUND_BY_CONTROLLER] = "yes"
            pv = await client.update(body)
            self.manager.writer.record(pv)
        pv = await self._set_volume_phase(pv, "Bound")
        body = clone(claim)
        body["spec"]["volumeName"] = name_of(pv)
        annotations = body["metadata"].setdefault("annotations", {})
        annotations[BIND_COMPLETED] = "yes"
        annotations[BOUND_BY_CONTROLLER] = "yes"
        claim = await client.update(body)
        self.manager.writer.record(claim)
        await self._set_claim_bound(claim, pv)

    async def _complete_binding(self, claim: Obj) -> None:
        """A claim that names its volume: finish whatever part of the binding is missing."""
        pv = self.manager.cache.get(PV, claim["spec"]["volumeName"])
        if pv is None:
            if (claim.get("status") or {}).get("phase") == "Bound":
                await self._set_claim_phase(claim, "Lost")
                self._event(claim, "Warning", "ClaimLost",
                            "Bound claim has lost its PersistentVolume. Data on the volume is "
                            "lost!")
            return
        ref = (pv.get("spec") or {}).get("claimRef") or {}
        if not ref:
            await self._bind(claim, pv)  # pre-bound claim: the volume follows
            return
        if ref.get("uid") not in (None, "", meta(claim).get("uid")) \
                or ref.get("name") != name_of(claim):
            self._event(claim, "Warning", "FailedBinding",
                        "volume already bound to a different claim.")
            return
        pv = await self._set_volume_phase(pv, "Bound")
        annotations = meta(claim).get("annotations") or {}
        if annotations.get(BIND_COMPLETED) != "yes":
            body = clone(claim)
            body["metadata"].setdefault("annotations", {})[BIND_COMPLETED] = "yes"
            claim = await self.manager.client.update(body)
            self.manager.writer.record(claim)
        await self._set_claim_bound(claim, pv)

    async def _set_claim_bound(self, claim: Obj, pv: Obj) -> None:
        spec = pv.get("spec") or {}
        status = claim.get("status") or {}
        wanted = {"phase": "Bound", "accessModes": list(spec.get("accessModes") or []),
                  "capacity": dict(spec.get("capacity") or {})}
        if all(status.get(k) == v for k, v in wanted.items()):
            return
        self.manager.writer.record(await self.manager.client.patch_status(
            PVC, name_of(claim), {"status": wanted}, namespace=namespace_of(claim)))

    async def _set_claim_phase(self, claim: Obj, phase: str) -> None:
        if (claim.get("status") or {}).get("phase") == phase:
            return
        self.manager.writer.record(await self.manager.client.patch_status(
            PVC, name_of(claim), {"status": {"phase": phase}}, namespace=namespace_of(claim)))

    async def _set_volume_phase(self, pv: Obj, phase: str) -> Obj:
        return await set_volume_phase(self.manager, pv, phase)


async def set_volume_phase(manager: Manager, pv: Obj, phase: str, message: str = "") -> Obj:
    """Write ``status.phase`` of a volume (nothing when it already reads so)."""
    status = pv.get("status") or {}
    if status.get("phase") == phase and (status.get("message") or "") == message:
        return pv
    patch: dict[str, Any] = {"phase": phase, "message": message or None}
    updated: Obj = await manager.client.patch_status(PV, name_of(pv), {"status": patch})
    manager.writer.record(updated)
    return updated


class VolumeReconciler:
    """Reconciles PersistentVolumes: Available, Bound, Released, and reclaiming."""

    def __init__(self, manager: Manager) -> None:
        self.manager = manager

    def __repr__(self) -> str:
        return "VolumeReconciler()"

    async def reconcile(self, request: Request) -> Result:
        pv = self.manager.cache.get(PV, request.name)
        if pv is None or meta(pv).get("deletionTimestamp"):
            return Result()
        ref = (pv.get("spec") or {}).get("claimRef")
        if not ref:
            await set_volume_phase(self.manager, pv, "Available")
            return Result()
        claim = self.manager.cache.get(PVC, ref.get("name", ""), ref.get("namespace", ""))
        if claim is None:
            # the cache may lag a claim created a moment ago: ask the server before releasing
            with contextlib.suppress(NotFoundError):
                claim = await self.manager.client.get(PVC, ref.get("name", ""),
                                                      namespace=ref.get("namespace", ""))
        if claim is not None and ref.get("uid") in (None, "", meta(claim).get("uid")):
            if (claim.get("spec") or {}).get("volumeName") == name_of(pv):
                await set_volume_phase(self.manager, pv, "Bound")
            return Result()
        if (pv.get("status") or {}).get("phase") not in ("Released", "Failed"):
            pv = await set_volume_phase(self.manager, pv, "Released")
        await self._reclaim(pv)
        return Result()

    async def _reclaim(self, pv: Obj) -> None:
        policy = (pv.get("spec") or {}).get("persistentVolumeReclaimPolicy") or "Retain"
        if policy != "Delete":
            return
        if (meta(pv).get("annotations") or {}).get(PROVISIONED_BY) != PROVISIONER:
            await set_volume_phase(self.manager, pv, "Failed",
                                   "error getting deleter volume plugin for volume "
                                   f'"{name_of(pv)}": no deletable volume plugin matched')
            return
        with contextlib.suppress(NotFoundError):
            await self.manager.client.delete(PV, name_of(pv))


async def ensure_default_class(manager: Manager) -> None:
    """Create the ``standard`` StorageClass unless it exists (a runnable)."""
    with contextlib.suppress(AlreadyExistsError):
        manager.writer.record(await manager.client.create(clone(DEFAULT_STORAGE_CLASS)))


def install(manager: Manager, settings: WorkloadSettings) -> None:
    """Add the claim binder, the volume reconciler and the default StorageClass."""

    def unbound_claims(_: Obj) -> list[Request]:
        return [Request(namespace_of(c), name_of(c)) for c in manager.cache.list_raw(PVC)
                if not (c.get("spec") or {}).get("volumeName")]

    def claims_of_volume(pv: Obj) -> list[Request]:
        ref = (pv.get("spec") or {}).get("claimRef") or {}
        if ref.get("name"):
            return [Request(ref.get("namespace", ""), ref["name"])]
        # a volume free for any claim: the pending ones look again (what the controller's
        # periodic resync, every --pvclaimbinder-sync-period, finds in Go)
        return unbound_claims(pv)

    def volume_of_claim(claim: Obj) -> list[Request]:
        out = [Request("", f"pvc-{meta(claim).get('uid')}")]
        name = (claim.get("spec") or {}).get("volumeName")
        if name:
            out.append(Request("", name))
        for pv in manager.cache.list_raw(PV):
            ref = (pv.get("spec") or {}).get("claimRef") or {}
            if ref.get("name") == name_of(claim) and ref.get("namespace") == namespace_of(claim):
                out.append(Request("", name_of(pv)))
        return out

    events = component_recorder(manager, "persistentvolume-controller")
    manager.add(Controller.for_(PVC, name="persistentvolume-binder")
                .watches(PV, map_func=claims_of_volume)
                .watches(STORAGE_CLASS, map_func=unbound_claims)
                .reads(POD)
                .reconciler(ClaimBinder(manager, events)))
    manager.add(Controller.for_(PV, name="persistentvolume")
                .watches(PVC, map_func=volume_of_claim)
                .reconciler(VolumeReconciler(manager)))
    manager.add_runnable(ensure_default_class)

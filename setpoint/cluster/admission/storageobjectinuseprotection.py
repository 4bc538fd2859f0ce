"""StorageObjectInUseProtection: every new PersistentVolume and claim gets its protection finalizer.

A port of plugin/pkg/admission/storage/storageobjectinuseprotection (a mutating plugin, CREATE
only, not subresources): a PersistentVolumeClaim gets ``kubernetes.io/pvc-protection`` and a
PersistentVolume ``kubernetes.io/pv-protection`` appended to its finalizers unless it has it.
The ``pvc-protection`` and ``pv-protection`` controllers
(:mod:`setpoint.cluster.controllers.pvcprotection`, :mod:`~.pvprotection`) remove them once
the claim is unused or the volume unbound, so a claim in use by a pod or a bound volume
outlives its deletion until then.
"""

from __future__ import annotations

from setpoint.cluster.registry.admissionpoints import Attributes

PVC_PROTECTION_FINALIZER = "kubernetes.io/pvc-protection"
PV_PROTECTION_FINALIZER = "kubernetes.io/pv-protection"

_FINALIZER_OF = {"persistentvolumeclaims": PVC_PROTECTION_FINALIZER,
                 "persistentvolumes": PV_PROTECTION_FINALIZER}


def storage_object_in_use_protection(attributes: Attributes) -> None:
    """Append the protection finalizer to a created PersistentVolume(Claim)."""
    rt = attributes.rt
    if attributes.operation != "CREATE" or rt.group or attributes.subresource:
        return
    finalizer = _FINALIZER_OF.get(rt.resource)
    if finalizer is None:
        return
    meta = attributes.obj["metadata"]
    finalizers = meta.get("finalizers") or []
    if finalizer not in finalizers:
        meta["finalizers"] = [*finalizers, finalizer]

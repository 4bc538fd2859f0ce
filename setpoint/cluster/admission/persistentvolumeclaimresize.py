"""PersistentVolumeClaimResize: a claim may only grow when bound and its class allows it.

A port of plugin/pkg/admission/storage/persistentvolume/resize (a validating plugin, UPDATE
only, not subresources): an update that raises ``spec.resources.requests.storage`` is refused
(403) unless the stored claim is Bound ("Only bound persistent volume claims can be
expanded") and the claim names, before and after, the same non-empty class (the beta
annotation ``volume.beta.kubernetes.io/storage-class`` first, ``GetPersistentVolumeClaimClass``)
whose StorageClass has ``allowVolumeExpansion: true``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from setpoint.cluster.admission.forbidden import new_forbidden
from setpoint.cluster.registry.admissionpoints import Attributes
from setpoint.machinery.objects import Obj
from setpoint.machinery.quantity import Quantity

if TYPE_CHECKING:
    from setpoint.cluster.storage import Store

STORAGE_CLASSES = "storage.k8s.io/storageclasses"
BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"


def claim_class(claim: Obj) -> str:
    """``GetPersistentVolumeClaimClass``."""
    annotations = claim["metadata"].get("annotations") or {}
    if BETA_STORAGE_CLASS in annotations:
        return str(annotations[BETA_STORAGE_CLASS])
    return str((claim.get("spec") or {}).get("storageClassName") or "")


def requested_storage(claim: Obj) -> Quantity:
    requests = ((claim.get("spec") or {}).get("resources") or {}).get("requests") or {}
    return Quantity.parse(str(requests.get("storage") or "0"))


class PersistentVolumeClaimResize:
    """The validating step that allows a claim to grow only where expansion is supported."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def __repr__(self) -> str:
        return "PersistentVolumeClaimResize()"

    def __call__(self, attributes: Attributes) -> None:
        rt, claim, old = attributes.rt, attributes.obj, attributes.old
        if (attributes.operation != "UPDATE" or attributes.subresource or rt.group
                or rt.resource != "persistentvolumeclaims" or old is None):
            return
        if requested_storage(claim) <= requested_storage(old):
            return
        if (old.get("status") or {}).get("phase") != "Bound":
            raise new_forbidden(rt, claim, "Only bound persistent volume claims can be expanded")
        if not self._allow_resize(claim, old):
            raise new_forbidden(
                rt, claim, "only dynamically provisioned pvc can be resized and the "
                "storageclass that provisions the pvc must support resize")

    def _allow_resize(self, claim: Obj, old: Obj) -> bool:
        name, old_name = claim_class(claim), claim_class(old)
        if not name or not old_name or name != old_name:
            return False
        storage_class = self._store.get(STORAGE_CLASSES, "", name)
        return storage_class is not None and storage_class.get("allowVolumeExpansion") is True

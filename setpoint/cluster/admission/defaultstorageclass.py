"""DefaultStorageClass: a claim created without a class gets the default StorageClass.

A port of plugin/pkg/admission/storage/persistentvolume/claim/setdefault (a mutating plugin,
CREATE only, not subresources): a PersistentVolumeClaim with neither ``spec.storageClassName``
nor the beta annotation ``volume.beta.kubernetes.io/storage-class``
(``PersistentVolumeClaimHasClass``) gets the name of the default class: a StorageClass
annotated ``storageclass.kubernetes.io/is-default-class`` (or its beta twin) ``"true"``; of
several the newest wins, and of equally new ones the first by name
(pkg/volume/util/storageclass.go ``GetDefaultClass``). Without a default the claim is left
as it is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from setpoint.cluster.registry.admissionpoints import Attributes
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.storage import Store

STORAGE_CLASSES = "storage.k8s.io/storageclasses"
IS_DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
BETA_IS_DEFAULT_CLASS = "storageclass.beta.kubernetes.io/is-default-class"
BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"


def is_default_class(storage_class: Obj) -> bool:
    """``IsDefaultAnnotation``."""
    annotations = storage_class["metadata"].get("annotations") or {}
    return (annotations.get(IS_DEFAULT_CLASS) == "true"
            or annotations.get(BETA_IS_DEFAULT_CLASS) == "true")


def default_class(classes: list[Obj]) -> Obj | None:
    """``GetDefaultClass``: the newest default class, the first by name among equals."""
    defaults = sorted((c for c in classes if is_default_class(c)),
                      key=lambda c: c["metadata"].get("name", ""))
    # a stable sort by creation time, newest first, keeps equally new ones by name
    defaults.sort(key=lambda c: str(c["metadata"].get("creationTimestamp") or ""), reverse=True)
    return defaults[0] if defaults else None


class DefaultStorageClass:
    """The admission step that names the default class in new classless claims."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def __repr__(self) -> str:
        return "DefaultStorageClass()"

    def __call__(self, attributes: Attributes) -> None:
        rt = attributes.rt
        if (attributes.operation != "CREATE" or rt.group or attributes.subresource
                or rt.resource != "persistentvolumeclaims"):
            return
        claim = attributes.obj
        spec = claim.setdefault("spec", {})
        if (spec.get("storageClassName") is not None
                or BETA_STORAGE_CLASS in (claim["metadata"].get("annotations") or {})):
            return
        chosen = default_class(self._store.list(STORAGE_CLASSES))
        if chosen is not None:
            spec["storageClassName"] = chosen["metadata"]["name"]

"""The warnings a PersistentVolume or PersistentVolumeClaim draws on create and update
(kubernetes v1.32 pkg/api/persistentvolume/util.go ``GetWarningsForPersistentVolume``,
pkg/api/persistentvolumeclaim/util.go ``GetWarningsForPersistentVolumeClaim``; each strategy's
WarningsOnCreate and WarningsOnUpdate warn about the new object alone).
"""

from __future__ import annotations

from setpoint.cluster.registry.warnings_podspec import (
    node_selector_term_warnings,
    pvc_spec_warnings,
)
from setpoint.machinery.objects import Obj

BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
DEPRECATED_STORAGE_CLASS = 'deprecated since v1.8; use "storageClassName" attribute instead'
RECYCLE = ("The Recycle reclaim policy is deprecated. Instead, the recommended approach is to "
           "use dynamic provisioning.")
# (JSON key, path Go names, message), in Go's order; the StorageOS path is Go's "storageOS"
_DEPRECATED_PLUGINS = (
    ("cephfs", "cephfs", "deprecated in v1.28, non-functional in v1.31+"),
    ("photonPersistentDisk", "photonPersistentDisk",
     "deprecated in v1.11, non-functional in v1.16+"),
    ("scaleIO", "scaleIO", "deprecated in v1.16, non-functional in v1.22+"),
    ("storageos", "storageOS", "deprecated in v1.22, non-functional in v1.25+"),
    ("glusterfs", "glusterfs", "deprecated in v1.25, non-functional in v1.26+"),
    ("rbd", "rbd", "deprecated in v1.28, non-functional in v1.31+"),
)


def _storage_class_annotation(obj: Obj) -> list[str]:
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    if BETA_STORAGE_CLASS in annotations:
        return [f"metadata.annotations[{BETA_STORAGE_CLASS}]: {DEPRECATED_STORAGE_CLASS}"]
    return []


def persistent_volume_warnings(pv: Obj) -> list[str]:
    """``warningsForPersistentVolumeSpecAndMeta``."""
    spec = pv.get("spec") or {}
    warnings = _storage_class_annotation(pv)
    if spec.get("persistentVolumeReclaimPolicy") == "Recycle":
        warnings.append(f"spec.persistentVolumeReclaimPolicy: {RECYCLE}")
    required = (spec.get("nodeAffinity") or {}).get("required")
    if isinstance(required, dict):
        for i, term in enumerate(required.get("nodeSelectorTerms") or []):
            warnings += node_selector_term_warnings(
                term or {}, f"spec.nodeAffinity.required.nodeSelectorTerms[{i}]")
    warnings += [f"spec.{path}: {message}" for key, path, message in _DEPRECATED_PLUGINS
                 if spec.get(key) is not None]
    return warnings


def persistent_volume_claim_warnings(claim: Obj) -> list[str]:
    """``GetWarningsForPersistentVolumeClaim``."""
    return _storage_class_annotation(claim) + pvc_spec_warnings("spec", claim.get("spec") or {})

"""The storage kinds' defaults (kubernetes v1.32 pkg/apis/core/v1/defaults.go for
PersistentVolumeClaims, their templates and PersistentVolumes; pkg/apis/storage/v1/defaults.go
for StorageClasses and CSIDrivers), which Go's decoder applies before validation requires the
fields.

``SetDefaults_CSIDriver``: a driver needs attaching, gets no pod info on mount, no capacity
tracking, the ReadWriteOnceWithFSType fsGroup policy, persistent volumes only, no
republishing, and (the SELinuxMountReadWriteOncePod gate is on by default in 1.32) no SELinux
mount option."""

from __future__ import annotations

from setpoint.cluster.registry.gozero import default_unset as _set
from setpoint.cluster.registry.gozero import struct_field as _dict
from setpoint.cluster.registry.podspec_defaults import canonical_resource_list
from setpoint.machinery.objects import Obj


def _spec(obj: Obj) -> Obj:
    return _dict(obj, "spec")


def _pvc_spec(spec: Obj) -> None:
    _set(spec, "volumeMode", "Filesystem")
    resources = spec.get("resources")
    if isinstance(resources, dict):
        for key in ("requests", "limits"):
            if isinstance(resources.get(key), dict):
                resources[key] = canonical_resource_list(resources[key])


def default_pvc(obj: Obj) -> None:
    _pvc_spec(_spec(obj))


def default_pvc_template(claim: Obj) -> None:
    # A claim template is serialized whole, status included (Go writes its defaults).
    _dict(claim, "metadata").setdefault("creationTimestamp", None)
    _pvc_spec(_spec(claim))
    _set(_dict(claim, "status"), "phase", "Pending")


def default_pv(obj: Obj) -> None:
    spec = _spec(obj)
    _set(spec, "persistentVolumeReclaimPolicy", "Retain")
    _set(spec, "volumeMode", "Filesystem")
    if isinstance(spec.get("capacity"), dict):
        spec["capacity"] = canonical_resource_list(spec["capacity"])


def default_storage_class(obj: Obj) -> None:
    _set(obj, "reclaimPolicy", "Delete")
    _set(obj, "volumeBindingMode", "Immediate")


_POINTER_DEFAULTS = (
    ("attachRequired", True),
    ("podInfoOnMount", False),
    ("storageCapacity", False),
    ("fsGroupPolicy", "ReadWriteOnceWithFSType"),
)


def default_csi_driver(obj: Obj) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        spec = obj["spec"] = {}
    for key, value in _POINTER_DEFAULTS:
        if spec.get(key) is None:
            spec[key] = value
    if not spec.get("volumeLifecycleModes"):
        spec["volumeLifecycleModes"] = ["Persistent"]
    for key in ("requiresRepublish", "seLinuxMount"):
        if spec.get(key) is None:
            spec[key] = False

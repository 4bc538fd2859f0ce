"""storage.k8s.io/v1 CSIDriver defaults (kubernetes v1.32 pkg/apis/storage/v1/defaults.go
``SetDefaults_CSIDriver``), which Go's decoder applies before validation requires the
fields: a driver needs attaching, gets no pod info on mount, no capacity tracking, the
ReadWriteOnceWithFSType fsGroup policy, persistent volumes only, no republishing, and (the
SELinuxMountReadWriteOncePod gate is on by default in 1.32) no SELinux mount option."""

from __future__ import annotations

from setpoint.machinery.objects import Obj

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

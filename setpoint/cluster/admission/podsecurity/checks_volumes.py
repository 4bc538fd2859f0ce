"""The volume checks: no hostPath volumes (baseline), only the restricted set of volume
sources (restricted) (k8s.io/pod-security-admission policy/check_hostPathVolumes.go,
check_restrictedVolumes.go)."""

from __future__ import annotations

from setpoint.cluster.admission.podsecurity.levels import BASELINE, RESTRICTED
from setpoint.cluster.admission.podsecurity.policy import (
    ALLOWED,
    Check,
    CheckResult,
    Obj,
    VersionedCheck,
    join_quote,
    pluralize,
    v,
)

HOST_PATH_VOLUMES = "hostPathVolumes"

ALLOWED_SOURCES = ("configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
                   "persistentVolumeClaim", "projected", "secret")
# the sources restrictedVolumes names, in its switch's order; any other is "unknown"
NAMED_SOURCES = ("hostPath", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "nfs",
                 "iscsi", "glusterfs", "rbd", "flexVolume", "cinder", "cephfs", "flocker",
                 "fc", "azureFile", "vsphereVolume", "quobyte", "azureDisk",
                 "photonPersistentDisk", "portworxVolume", "scaleIO", "storageos")


def _volumes(spec: Obj) -> list[Obj]:
    return [volume for volume in spec.get("volumes") or () if isinstance(volume, dict)]


def host_path_volumes_1_0(meta: Obj, spec: Obj) -> CheckResult:
    bad = [str(volume.get("name") or "") for volume in _volumes(spec)
           if volume.get("hostPath") is not None]
    if bad:
        return CheckResult(False, "hostPath volumes",
                           f"{pluralize('volume', 'volumes', len(bad))} {join_quote(bad)}")
    return ALLOWED


def restricted_volumes_1_0(meta: Obj, spec: Obj) -> CheckResult:
    bad: list[str] = []
    types: set[str] = set()
    for volume in _volumes(spec):
        if any(volume.get(source) is not None for source in ALLOWED_SOURCES):
            continue
        bad.append(str(volume.get("name") or ""))
        types.add(next((source for source in NAMED_SOURCES if volume.get(source) is not None),
                       "unknown"))
    if bad:
        return CheckResult(False, "restricted volume types", (
            f"{pluralize('volume', 'volumes', len(bad))} {join_quote(bad)} "
            f"{pluralize('uses', 'use', len(bad))} "
            f"{pluralize('restricted volume type', 'restricted volume types', len(types))} "
            f"{join_quote(sorted(types))}"))
    return ALLOWED


CHECKS = (
    Check(HOST_PATH_VOLUMES, BASELINE, (VersionedCheck(v(0), host_path_volumes_1_0),)),
    Check("restrictedVolumes", RESTRICTED, (
        VersionedCheck(v(0), restricted_volumes_1_0, (HOST_PATH_VOLUMES,)),)),
)

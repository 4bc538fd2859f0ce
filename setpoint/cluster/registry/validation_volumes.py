"""Pod volume validation (``pkg/apis/core/validation``: ValidateVolumes, validateVolumeSource;
each source's own validator is ``validation_volumesources``'s).

Every volume names exactly one source; a second is Forbidden at the second's own path — the
Go field names two of them oddly (``cephFS``, ``downwarAPI``), and so do we. An ephemeral
volume's claim is named ``<pod>-<volume>``, which must itself be a valid claim name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from setpoint.cluster.registry.validation_volumesources import iscsi_volume_name, validate_source
from setpoint.machinery import fielderrors as fe
from setpoint.machinery import names
from setpoint.machinery.errors import Cause
from setpoint.machinery.objects import Obj

# validateVolumeSource's order, each with the path its "more than 1" error names
_SOURCES: tuple[tuple[str, str], ...] = (
    ("emptyDir", "emptyDir"), ("hostPath", "hostPath"), ("gitRepo", "gitRepo"),
    ("gcePersistentDisk", "gcePersistentDisk"), ("awsElasticBlockStore", "awsElasticBlockStore"),
    ("secret", "secret"), ("nfs", "nfs"), ("iscsi", "iscsi"), ("glusterfs", "glusterfs"),
    ("flocker", "flocker"), ("persistentVolumeClaim", "persistentVolumeClaim"), ("rbd", "rbd"),
    ("cinder", "cinder"), ("cephfs", "cephFS"), ("quobyte", "quobyte"),
    ("downwardAPI", "downwarAPI"), ("fc", "fc"), ("flexVolume", "flexVolume"),
    ("configMap", "configMap"), ("azureFile", "azureFile"), ("vsphereVolume", "vsphereVolume"),
    ("photonPersistentDisk", "photonPersistentDisk"), ("portworxVolume", "portworxVolume"),
    ("azureDisk", "azureDisk"), ("storageos", "storageos"), ("projected", "projected"),
    ("scaleIO", "scaleIO"), ("csi", "csi"), ("ephemeral", "ephemeral"), ("image", "image"),
)


def _volume_source(volume: Mapping[str, Any], path: str, pod_name: str) -> list[Cause]:
    """``validateVolumeSource``: exactly one source, and that source well formed."""
    causes: list[Cause] = []
    count = 0
    for key, forbidden_as in _SOURCES:
        source = volume.get(key)
        if not isinstance(source, dict):
            continue
        if count:
            causes.append(fe.forbidden(f"{path}.{forbidden_as}",
                                       "may not specify more than 1 volume type"))
        else:
            count += 1
            causes.extend(validate_source(key, source, f"{path}.{key}"))
            if key == "ephemeral":
                causes.extend(_ephemeral_claim_name(volume, path, pod_name))
        if key == "iscsi":
            causes.extend(iscsi_volume_name(volume, path))
    if count == 0:
        causes.append(fe.required(path, "must specify a volume type"))
    return causes


def _ephemeral_claim_name(volume: Mapping[str, Any], path: str, pod_name: str
                          ) -> list[Cause]:
    """The claim an ephemeral volume gets is ``<pod>-<volume>``: a PersistentVolume name."""
    name = volume.get("name")
    if not pod_name or not isinstance(name, str) or not name:
        return []
    claim = f"{pod_name}-{name}"
    return [fe.invalid(f"{path}.name", name, f"PVC name {fe.go_quote(claim)}: {m}")
            for m in names.name_is_dns_subdomain(claim, False)]


def validate_volumes(volumes: Any, pod_meta: Obj | None, path: str
                     ) -> tuple[dict[str, Obj], list[Cause]]:
    """``ValidateVolumes``: the valid volumes by name (what mounts may name), and the
    causes. A volume with any fault is left out of the names, as Go leaves it out."""
    valid: dict[str, Obj] = {}
    causes: list[Cause] = []
    pod_name = (pod_meta or {}).get("name") or ""
    created_claims = {f"{pod_name}-{v.get('name')}" for v in volumes or []
                      if pod_name and isinstance(v, dict) and isinstance(v.get("ephemeral"), dict)}
    seen: set[str] = set()
    for i, volume in enumerate(volumes or []):
        if not isinstance(volume, dict):
            continue
        p = f"{path}[{i}]"
        name = volume.get("name") or ""
        errs = _volume_source(volume, p, pod_name)
        if not name:
            errs.append(fe.required(f"{p}.name"))
        else:
            errs.extend(fe.invalid(f"{p}.name", name, m) for m in names.is_dns1123_label(name))
        if name in seen:
            errs.append(fe.duplicate(f"{p}.name", name))
        if errs:
            causes.extend(errs)
        else:
            seen.add(name)
            valid[name] = volume
        claim = volume.get("persistentVolumeClaim")
        if isinstance(claim, dict) and claim.get("claimName") in created_claims:
            causes.append(fe.invalid(f"{p}.persistentVolumeClaim.claimName", claim["claimName"],
                                     "must not reference a PVC that gets created for an "
                                     "ephemeral volume"))
    return valid, causes

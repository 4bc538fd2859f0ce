"""Pod volume validation (``pkg/apis/core/validation``: ValidateVolumes, validateVolumeSource
and the source validators users meet: emptyDir, hostPath, secret, configMap,
persistentVolumeClaim, downwardAPI, projected, nfs, csi, ephemeral).

Every volume names exactly one source; a second is Forbidden at the second's own path — the
Go field names two of them oddly (``cephFS``, ``downwarAPI``), and so do we.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import Any

from setpoint.cluster.registry.validation_claims import validate_claim_spec
from setpoint.machinery import fielderrors as fe
from setpoint.machinery import names
from setpoint.machinery.errors import Cause
from setpoint.machinery.objects import Obj
from setpoint.machinery.quantity import Quantity, QuantityError

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
HOST_PATH_TYPES = ("", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File",
                   "FileOrCreate", "Socket")
FILE_MODE_ERROR = "must be a number between 0 and 0777 (octal), both inclusive"


def _mode(value: Any, path: str) -> list[Cause]:
    if isinstance(value, int) and not 0 <= value <= 0o777:
        return [fe.invalid(path, value, FILE_MODE_ERROR)]
    return []


def _no_backsteps(target: str, path: str) -> list[Cause]:
    """``validatePathNoBacksteps``."""
    if ".." in target.replace("\\", "/").split("/"):
        return [fe.invalid(path, target, "must not contain '..'")]
    return []


def _local_path(target: str, path: str) -> list[Cause]:
    """``ValidateLocalNonReservedPath``: relative, no ``..``, not starting with ``..``."""
    causes: list[Cause] = []
    if posixpath.isabs(target):
        causes.append(fe.invalid(path, target, "must be a relative path"))
    causes.extend(_no_backsteps(target, path))
    if target.startswith(".."):
        causes.append(fe.invalid(path, target, "must not start with '..'"))
    return causes


def _items(items: Any, path: str) -> list[Cause]:
    """``validateKeyToPath`` of each item."""
    causes: list[Cause] = []
    for i, item in enumerate(items or []):
        if not isinstance(item, dict):
            continue
        p = f"{path}[{i}]"
        if not item.get("key"):
            causes.append(fe.required(f"{p}.key"))
        if not item.get("path"):
            causes.append(fe.required(f"{p}.path"))
        causes.extend(_local_path(item.get("path") or "", f"{p}.path"))
        causes.extend(_mode(item.get("mode"), f"{p}.mode"))
    return causes


def _source(kind: str, source: Mapping[str, Any], path: str) -> list[Cause]:
    """The checks of one volume source."""
    causes: list[Cause] = []
    if kind == "emptyDir":
        limit = source.get("sizeLimit")
        try:
            negative = limit is not None and Quantity.from_json(limit).sign() < 0
        except (QuantityError, TypeError, ValueError):
            negative = False
        if negative:
            causes.append(fe.forbidden(f"{path}.sizeLimit",
                                       "SizeLimit field must be a valid resource quantity"))
    elif kind == "hostPath":
        target = source.get("path") or ""
        if not target:
            return [fe.required(f"{path}.path")]
        causes.extend(_no_backsteps(target, f"{path}.path"))
        kind_of = source.get("type")
        if kind_of is not None and kind_of not in HOST_PATH_TYPES:
            causes.append(fe.not_supported(f"{path}.type", kind_of, HOST_PATH_TYPES))
    elif kind in ("secret", "configMap"):
        key = "secretName" if kind == "secret" else "name"
        if not source.get(key):
            causes.append(fe.required(f"{path}.{key}"))
        causes.extend(_mode(source.get("defaultMode"), f"{path}.defaultMode"))
        causes.extend(_items(source.get("items"), f"{path}.items"))
    elif kind == "persistentVolumeClaim":
        if not source.get("claimName"):
            causes.append(fe.required(f"{path}.claimName"))
    elif kind == "nfs":
        target = source.get("path") or ""
        if not source.get("server"):
            causes.append(fe.required(f"{path}.server"))
        if not target:
            causes.append(fe.required(f"{path}.path"))
        if not posixpath.isabs(target):
            causes.append(fe.invalid(f"{path}.path", target, "must be an absolute path"))
    elif kind == "downwardAPI":
        causes.extend(_mode(source.get("defaultMode"), f"{path}.defaultMode"))
        for item in source.get("items") or []:
            if not isinstance(item, dict):
                continue
            if not item.get("path"):
                causes.append(fe.required(f"{path}.path"))
            causes.extend(_local_path(item.get("path") or "", f"{path}.path"))
            if not item.get("fieldRef") and not item.get("resourceFieldRef"):
                causes.append(fe.required(path, "one of fieldRef and resourceFieldRef is "
                                                "required"))
            elif item.get("fieldRef") and item.get("resourceFieldRef"):
                causes.append(fe.invalid(path, "resource", "fieldRef and resourceFieldRef can "
                                                           "not be specified simultaneously"))
            causes.extend(_mode(item.get("mode"), f"{path}.mode"))
    elif kind == "projected":
        causes.extend(_mode(source.get("defaultMode"), f"{path}.defaultMode"))
    elif kind == "csi":
        driver = source.get("driver") or ""
        if not driver:
            causes.append(fe.required(f"{path}.driver"))
        else:
            causes.extend(fe.invalid(f"{path}.driver", driver, m)
                          for m in names.is_dns1123_subdomain(driver.lower()))
    elif kind == "ephemeral":
        template = source.get("volumeClaimTemplate")
        if not isinstance(template, dict):
            causes.append(fe.required(f"{path}.volumeClaimTemplate"))
        else:
            causes.extend(validate_claim_spec(template.get("spec"),
                                              f"{path}.volumeClaimTemplate.spec"))
    return causes


def _volume_source(volume: Mapping[str, Any], path: str) -> list[Cause]:
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
            continue
        count += 1
        causes.extend(_source(key, source, f"{path}.{key}"))
    if count == 0:
        causes.append(fe.required(path, "must specify a volume type"))
    return causes


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
        errs = _volume_source(volume, p)
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

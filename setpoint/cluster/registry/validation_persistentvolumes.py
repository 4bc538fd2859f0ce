"""PersistentVolume validation (``pkg/apis/core/validation``: ValidatePersistentVolume,
ValidatePersistentVolumeSpec and its PV-only source validators, ValidatePersistentVolumeUpdate;
``pkg/volume/validation/pv_validation.go``: the mount-options annotation check the strategy adds).

A volume names exactly one source: a second is Forbidden at its own path ("may not specify more
than 1 volume type", the Go path of CephFS being ``cephFS``), none is Required at ``spec``.
The source is fixed once created (Forbidden at ``spec.persistentvolumesource``); volumeMode and
a node affinity once set are immutable under the Go paths ``volumeMode`` and ``nodeAffinity``
(no ``spec.``). VolumeAttributesClass is beta and off in 1.32, so its field is not validated
on create and any change of it is Forbidden.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping
from typing import Any

from setpoint.cluster.registry.validation_claims import validate_access_modes
from setpoint.cluster.registry.validation_scheduling import validate_node_selector
from setpoint.cluster.registry.validation_volumesources import (
    ISCSI_NAME_TOO_LONG,
    SOURCE_VALIDATORS,
    no_backsteps,
    validate_csi_driver_name,
)
from setpoint.machinery import fielderrors as fe
from setpoint.machinery import names
from setpoint.machinery.errors import Cause
from setpoint.machinery.objects import Obj
from setpoint.machinery.quantity import try_from_json

RECLAIM_POLICIES = ("Delete", "Recycle", "Retain")
VOLUME_MODES = ("Block", "Filesystem")
MOUNT_OPTIONS_ANNOTATION = "volume.beta.kubernetes.io/mount-options"
# the sources whose plugins take mount options (checkMountOption)
_MOUNTABLE = ("gcePersistentDisk", "awsElasticBlockStore", "glusterfs", "nfs", "rbd",
              "quobyte", "iscsi", "cinder", "cephfs", "azureFile", "vsphereVolume",
              "azureDisk", "photonPersistentDisk")

SourceCheck = Callable[[Mapping[str, Any], str, str], list[Cause]]


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _pod_rule(key: str) -> SourceCheck:
    """A source whose PV form is validated as the pod volume's."""
    return lambda source, path, _name: SOURCE_VALIDATORS[key](source, path)


def _glusterfs(source: Mapping[str, Any], path: str, _name: str) -> list[Cause]:
    """``validateGlusterfsPersistentVolumeSource``."""
    causes = [fe.required(f"{path}.{k}") for k in ("endpoints", "path") if not source.get(k)]
    namespace = source.get("endpointsNamespace")
    if isinstance(namespace, str):
        np = f"{path}.endpointsNamespace"
        if not namespace:
            causes.append(fe.invalid(np, namespace, "if the endpointnamespace is set, it must "
                                                    "be a valid namespace name"))
        causes.extend(fe.invalid(np, namespace, m)
                      for m in (names.name_is_dns_label(namespace, False) if namespace else []))
    return causes


def _iscsi(source: Mapping[str, Any], path: str, pv_name: str) -> list[Cause]:
    """``validateISCSIPersistentVolumeSource``: the pod rules, the length rule on the PV's
    name (at the oddly cased ``targetportal``)."""
    causes = SOURCE_VALIDATORS["iscsi"](source, path)
    portal = _str(source.get("targetPortal"))
    if source.get("initiatorName") is not None and len(f"{pv_name}:{portal}") > 64:
        causes.append(fe.invalid(f"{path}.targetportal", portal, ISCSI_NAME_TOO_LONG))
    return causes


def _named_ref(ref: Any, path: str, name_rule: Callable[[str], list[str]]) -> list[Cause]:
    """A SecretReference that must name both its secret and the secret's namespace."""
    if not isinstance(ref, dict):
        return []
    causes: list[Cause] = []
    for key, rule in (("name", name_rule), ("namespace", names.is_dns1123_label)):
        value = _str(ref.get(key))
        if not value:
            causes.append(fe.required(f"{path}.{key}"))
        else:
            causes.extend(fe.invalid(f"{path}.{key}", value, m) for m in rule(value))
    return causes


def _secret_ref_required(source: Mapping[str, Any], path: str) -> list[Cause]:
    """A PV source's ``secretRef`` (a SecretReference) needs both name and namespace."""
    ref = source.get("secretRef")
    if not isinstance(ref, dict):
        return []
    return [fe.required(f"{path}.secretRef.{k}") for k in ("name", "namespace") if not ref.get(k)]


def _cinder(source: Mapping[str, Any], path: str, _name: str) -> list[Cause]:
    """``validateCinderPersistentVolumeSource``."""
    causes = [] if source.get("volumeID") else [fe.required(f"{path}.volumeID")]
    causes.extend(_secret_ref_required(source, path))
    return causes


def _flex(source: Mapping[str, Any], path: str, _name: str) -> list[Cause]:
    """``validateFlexPersistentVolumeSource``."""
    causes = SOURCE_VALIDATORS["flexVolume"](source, path)
    causes.extend(_secret_ref_required(source, path))
    return causes


def _azure_file(source: Mapping[str, Any], path: str, _name: str) -> list[Cause]:
    """``validateAzureFilePV``."""
    causes = SOURCE_VALIDATORS["azureFile"](source, path)
    namespace = source.get("secretNamespace")
    if isinstance(namespace, str):
        if not namespace:
            causes.append(fe.required(f"{path}.secretNamespace"))
        causes.extend(fe.invalid(f"{path}.secretNamespace", namespace, m)
                      for m in (names.is_dns1123_label(namespace) if namespace else []))
    return causes


def _scale_io(source: Mapping[str, Any], path: str, _name: str) -> list[Cause]:
    """``validateScaleIOPersistentVolumeSource``."""
    return [fe.required(f"{path}.{k}") for k in ("gateway", "system", "volumeName")
            if not source.get(k)]


def _local(source: Mapping[str, Any], path: str, _name: str) -> list[Cause]:
    """``validateLocalVolumeSource`` (1.32: no absolute-path rule)."""
    target = _str(source.get("path"))
    if not target:
        return [fe.required(f"{path}.path")]
    return no_backsteps(target, f"{path}.path")


def _storage_os(source: Mapping[str, Any], path: str, _name: str) -> list[Cause]:
    """``validateStorageOSPersistentVolumeSource``."""
    causes = SOURCE_VALIDATORS["storageos"](source, path)
    ref = source.get("secretRef")
    if isinstance(ref, dict) and not ref.get("namespace"):
        causes.append(fe.required(f"{path}.secretRef.namespace"))
    return causes


def _csi(source: Mapping[str, Any], path: str, _name: str) -> list[Cause]:
    """``validateCSIPersistentVolumeSource`` and ``validatePVSecretReference``."""
    causes = validate_csi_driver_name(_str(source.get("driver")), f"{path}.driver")
    if not source.get("volumeHandle"):
        causes.append(fe.required(f"{path}.volumeHandle"))
    for key in ("controllerPublishSecretRef", "controllerExpandSecretRef",
                "nodePublishSecretRef", "nodeExpandSecretRef"):
        causes.extend(_named_ref(source.get(key), f"{path}.{key}", names.is_dns1123_subdomain))
    return causes


# ValidatePersistentVolumeSpec's order: (JSON key, path of the "more than 1" error, check)
_SOURCES: tuple[tuple[str, str, SourceCheck], ...] = (
    ("hostPath", "hostPath", _pod_rule("hostPath")),
    ("gcePersistentDisk", "gcePersistentDisk", _pod_rule("gcePersistentDisk")),
    ("awsElasticBlockStore", "awsElasticBlockStore", _pod_rule("awsElasticBlockStore")),
    ("glusterfs", "glusterfs", _glusterfs),
    ("flocker", "flocker", _pod_rule("flocker")),
    ("nfs", "nfs", _pod_rule("nfs")),
    ("rbd", "rbd", _pod_rule("rbd")),
    ("quobyte", "quobyte", _pod_rule("quobyte")),
    ("cephfs", "cephFS", _pod_rule("cephfs")),
    ("iscsi", "iscsi", _iscsi),
    ("cinder", "cinder", _cinder),
    ("fc", "fc", _pod_rule("fc")),
    ("flexVolume", "", _flex),  # (counted, but never refused as a second source)
    ("azureFile", "azureFile", _azure_file),
    ("vsphereVolume", "vsphereVolume", _pod_rule("vsphereVolume")),
    ("photonPersistentDisk", "photonPersistentDisk", _pod_rule("photonPersistentDisk")),
    ("portworxVolume", "portworxVolume", _pod_rule("portworxVolume")),
    ("azureDisk", "azureDisk", _pod_rule("azureDisk")),
    ("scaleIO", "scaleIO", _scale_io),
    ("local", "local", _local),
    ("storageos", "storageos", _storage_os),
    ("csi", "csi", _csi),
)
SOURCE_KEYS = tuple(key for key, _, _ in _SOURCES)


def _go_resource_list(capacity: Any) -> fe.GoValue:
    """``%#v`` of a ``core.ResourceList`` as NotSupported prints it (the quantities' inner
    representation is shown by its canonical string)."""
    if not isinstance(capacity, dict):
        return fe.GoValue("core.ResourceList(nil)")
    items = ", ".join(f"{fe.go_quote(str(k))}:resource.MustParse({fe.go_quote(str(v))})"
                      for k, v in sorted(capacity.items()))
    return fe.GoValue(f"core.ResourceList{{{items}}}")


def _capacity(spec: Obj) -> list[Cause]:
    capacity = spec.get("capacity")
    values = capacity if isinstance(capacity, dict) else {}
    causes: list[Cause] = []
    if not values:
        causes.append(fe.required("spec.capacity"))
    if "storage" not in values or len(values) > 1:
        causes.append(fe.not_supported("spec.capacity", _go_resource_list(capacity),
                                       ("storage",)))
    for resource, raw in values.items():
        q = try_from_json(raw)
        if q is None:
            continue
        path = f"spec.capacity[{resource}]"
        if q.value() < 0:  # validateBasicResource
            causes.append(fe.invalid(path, q.value(), "must be a valid resource quantity"))
        if q.sign() <= 0:  # ValidatePositiveQuantityValue
            causes.append(fe.invalid(path, str(q), "must be greater than zero"))
    return causes


def _access_modes(spec: Obj) -> list[Cause]:
    modes = spec.get("accessModes") or []
    causes = [] if modes else [fe.required("spec.accessModes")]
    return causes + validate_access_modes(modes, "spec.accessModes")


def _sources(spec: Obj, pv_name: str, affinity_set: bool) -> list[Cause]:
    causes: list[Cause] = []
    count = 0
    for key, forbidden_as, check in _SOURCES:
        source = spec.get(key)
        if not isinstance(source, dict):
            continue
        if count and forbidden_as:
            causes.append(fe.forbidden(f"spec.{forbidden_as}",
                                       "may not specify more than 1 volume type"))
            continue
        count += 1
        causes.extend(check(source, f"spec.{key}", pv_name))
        if key == "local" and not affinity_set:
            causes.append(fe.required("spec.nodeAffinity", "Local volume requires node affinity"))
    if count == 0:
        causes.append(fe.required("spec", "must specify a volume type"))
    return causes


def validate_persistent_volume_spec(spec: Any, pv_name: str) -> list[Cause]:
    """``ValidatePersistentVolumeSpec`` for a PersistentVolume object (not an inline spec)."""
    if not isinstance(spec, dict):
        spec = {}
    causes = _access_modes(spec) + _capacity(spec)
    policy = spec.get("persistentVolumeReclaimPolicy")
    if policy and policy not in RECLAIM_POLICIES:
        causes.append(fe.not_supported("spec.persistentVolumeReclaimPolicy", policy,
                                       RECLAIM_POLICIES))
    affinity = spec.get("nodeAffinity")
    affinity_set = isinstance(affinity, dict)
    if affinity_set:
        required = affinity.get("required")
        if isinstance(required, dict):
            causes.extend(validate_node_selector(required, "spec.nodeAffinity.required"))
        else:
            causes.append(fe.required("spec.nodeAffinity.required",
                                      "must specify required node constraints"))
    causes.extend(_sources(spec, pv_name, affinity_set))
    host_path = spec.get("hostPath")
    if isinstance(host_path, dict) and policy == "Recycle" and _str(host_path.get("path")) \
            and posixpath.normpath(_str(host_path.get("path"))) == "/":
        causes.append(fe.forbidden("spec.persistentVolumeReclaimPolicy",
                                   "may not be 'recycle' for a hostPath mount of '/'"))
    class_name = spec.get("storageClassName")
    if class_name:
        causes.extend(fe.invalid("spec.storageClassName", class_name, m)
                      for m in names.is_dns1123_subdomain(class_name))
    mode = spec.get("volumeMode")
    if mode is not None and mode not in VOLUME_MODES:
        causes.append(fe.not_supported("spec.volumeMode", mode, VOLUME_MODES))
    return causes


def _mount_options(obj: Obj) -> list[Cause]:
    """pv_validation.go ``checkMountOption``: the beta mount-options annotation only on a
    volume type whose plugin takes mount options."""
    spec = obj.get("spec") or {}
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    if any(isinstance(spec.get(k), dict) for k in _MOUNTABLE) or \
            MOUNT_OPTIONS_ANNOTATION not in annotations:
        return []
    return [fe.forbidden(f"metadata.annotations.{MOUNT_OPTIONS_ANNOTATION}",
                         "may not specify mount options for this volume type")]


def validate_persistent_volume(obj: Obj) -> list[Cause]:
    """The strategy's ``Validate`` past ``ValidateObjectMeta`` (the caller's): the spec, then
    the mount options check."""
    name = _str((obj.get("metadata") or {}).get("name"))
    return validate_persistent_volume_spec(obj.get("spec"), name) + _mount_options(obj)


def _source_of(spec: Obj) -> dict[str, Any]:
    return {k: spec[k] for k in SOURCE_KEYS if spec.get(k) is not None}


def _diff(old: Obj, new: Obj) -> str:
    changed = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
    return "\n".join(f"  {k}: {old.get(k)!r} -> {new.get(k)!r}" for k in changed)


def _go_affinity(value: Any) -> fe.GoValue:
    if not isinstance(value, dict):
        return fe.GoValue("null")
    required = fe.go_pointer("core.NodeSelector", value.get("required") is not None)
    return fe.GoValue(f"core.VolumeNodeAffinity{{Required:{required}}}")


def validate_persistent_volume_update(new: Obj, old: Obj) -> list[Cause]:
    """``ValidatePersistentVolumeUpdate``'s own rules (the new volume's validation is the
    caller's)."""
    new_spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    new_source, old_source = _source_of(new_spec), _source_of(old_spec)
    old_csi, new_csi = old_source.get("csi"), new_source.get("csi")
    if isinstance(old_csi, dict) and isinstance(new_csi, dict) \
            and old_csi.get("controllerExpandSecretRef") is None:
        # a CSI volume may gain the expansion secret once
        new_source["csi"] = {k: v for k, v in new_csi.items()
                             if k != "controllerExpandSecretRef"}
    causes: list[Cause] = []
    if new_source != old_source:
        causes.append(fe.forbidden("spec.persistentvolumesource",
                                   "spec.persistentvolumesource is immutable after creation\n"
                                   + _diff(old_source, new_source)))
    new_mode, old_mode = new_spec.get("volumeMode"), old_spec.get("volumeMode")
    if new_mode != old_mode:
        shown = "null" if new_mode is None else fe.go_quote(str(new_mode))
        causes.append(fe.invalid("volumeMode", fe.GoValue(shown), "field is immutable"))
    old_affinity = old_spec.get("nodeAffinity")
    if old_affinity is not None and new_spec.get("nodeAffinity") != old_affinity:
        causes.append(fe.invalid("nodeAffinity", _go_affinity(new_spec.get("nodeAffinity")),
                                 "field is immutable"))
    if new_spec.get("volumeAttributesClassName") != old_spec.get("volumeAttributesClassName"):
        causes.append(fe.forbidden("spec.volumeAttributesClassName",
                                   "update is forbidden when the VolumeAttributesClass feature "
                                   "gate is disabled"))
    return causes

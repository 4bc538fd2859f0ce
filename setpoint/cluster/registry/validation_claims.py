"""PersistentVolumeClaim validation (``pkg/apis/core/validation``: ValidatePersistentVolumeClaim,
ValidatePersistentVolumeClaimSpec, ValidatePersistentVolumeClaimUpdate).

A claim's spec is fixed once created — quota and limit ranges are enforced on it — except
that the volume binder may fill ``volumeName`` once, a nil ``storageClassName`` may be set
once, and a bound claim may grow ``resources.requests.storage`` (RecoverVolumeExpansionFailure
is on by default in 1.32, so it may also shrink, but never to or below ``status.capacity``).
"""

from __future__ import annotations

import copy
from typing import Any

from setpoint.cluster.registry.validation_nodes import validate_resource_quantity_value
from setpoint.machinery import fielderrors as fe
from setpoint.machinery import labels, names
from setpoint.machinery.errors import Cause
from setpoint.machinery.objects import Obj
from setpoint.machinery.quantity import Quantity, try_from_json

ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")
VOLUME_MODES = ("Block", "Filesystem")
NOT_POSITIVE = "must be greater than zero"
BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
SPEC_IMMUTABLE = ("spec is immutable after creation except resources.requests and "
                  "volumeAttributesClassName for bound claims")


def validate_access_modes(modes: list[Any], path: str) -> list[Cause]:
    """The access-mode rules a volume and a claim share: each mode known, and
    ReadWriteOncePod alone (the emptiness check differs between the two: the caller's)."""
    causes: list[Cause] = []
    once_pod = other = False
    for mode in modes:
        if mode not in ACCESS_MODES:
            causes.append(fe.not_supported(path, mode, ACCESS_MODES))
        elif mode == "ReadWriteOncePod":
            once_pod = True
        else:
            other = True
    if once_pod and other:
        causes.append(fe.forbidden(path, "may not use ReadWriteOncePod with other access modes"))
    return causes


def _data_source(ref: Any, path: str, namespaced: bool) -> list[Cause]:
    """``validateDataSource`` / ``validateDataSourceRef``."""
    if not isinstance(ref, dict):
        return []
    causes: list[Cause] = []
    if not ref.get("name"):
        causes.append(fe.required(f"{path}.name"))
    kind = ref.get("kind") or ""
    if not kind:
        causes.append(fe.required(f"{path}.kind"))
    group = ref.get("apiGroup") or ""
    if not group and kind != "PersistentVolumeClaim":
        causes.append(fe.invalid(path, kind, "must be 'PersistentVolumeClaim' when referencing "
                                             "the default apiGroup"))
    if group:
        causes.extend(fe.invalid(f"{path}.apiGroup", group, m)
                      for m in names.is_dns1123_subdomain(group))
    namespace = ref.get("namespace") if namespaced else None
    if namespace:
        causes.extend(fe.invalid(f"{path}.namespace", namespace, m)
                      for m in names.name_is_dns_label(namespace, False))
    return causes


def validate_claim_spec(spec: Any, path: str) -> list[Cause]:
    """``ValidatePersistentVolumeClaimSpec``."""
    if not isinstance(spec, dict):
        spec = {}
    causes: list[Cause] = []
    modes = spec.get("accessModes") or []
    if not modes:
        causes.append(fe.required(f"{path}.accessModes", "at least 1 access mode is required"))
    if spec.get("selector") is not None:
        causes.extend(labels.validate_label_selector(spec["selector"], f"{path}.selector"))
    causes.extend(validate_access_modes(modes, f"{path}.accessModes"))
    storage_path = f"{path}.resources[storage]"
    requests = (spec.get("resources") or {}).get("requests") or {}
    if "storage" not in requests:
        causes.append(fe.required(storage_path))
    else:
        q = try_from_json(requests["storage"])
        if q is not None and q.sign() <= 0:
            causes.append(fe.invalid(storage_path, str(q), NOT_POSITIVE))
        else:
            causes.extend(validate_resource_quantity_value("storage", requests["storage"],
                                                           storage_path))
    class_name = spec.get("storageClassName")
    if class_name:
        causes.extend(fe.invalid(f"{path}.storageClassName", class_name, m)
                      for m in names.is_dns1123_subdomain(class_name))
    mode = spec.get("volumeMode")
    if mode is not None and mode not in VOLUME_MODES:
        causes.append(fe.not_supported(f"{path}.volumeMode", mode, VOLUME_MODES))
    source, source_ref = spec.get("dataSource"), spec.get("dataSourceRef")
    causes.extend(_data_source(source, f"{path}.dataSource", False))
    causes.extend(_data_source(source_ref, f"{path}.dataSourceRef", True))
    if isinstance(source, dict) and isinstance(source_ref, dict):
        if source_ref.get("namespace"):
            causes.append(fe.invalid(path, f"{path}.dataSource",
                                     "may not be specified when dataSourceRef.namespace is "
                                     "specified"))
        elif any(source.get(k) != source_ref.get(k) for k in ("apiGroup", "kind", "name")):
            causes.append(fe.invalid(path, f"{path}.dataSource", "must match dataSourceRef"))
    return causes


def validate_claim(obj: Obj) -> list[Cause]:
    """The spec part of ``ValidatePersistentVolumeClaim`` (metadata: the caller)."""
    return validate_claim_spec(obj.get("spec"), "spec")


def _storage(obj: Obj, key: str) -> Quantity:
    holder = (obj.get("spec") or {}).get("resources") or {} if key == "requests" else (
        obj.get("status") or {})
    values = holder.get(key if key == "requests" else "capacity") or {}
    return try_from_json(values.get("storage")) or Quantity()


def _class_upgrade_from_annotation(new: Obj, old: Obj) -> bool:
    """``validateStorageClassUpgradeFromAnnotation``."""
    old_annotations = (old.get("metadata") or {}).get("annotations") or {}
    new_annotations = (new.get("metadata") or {}).get("annotations") or {}
    if BETA_STORAGE_CLASS not in old_annotations:
        return False
    old_class = old_annotations[BETA_STORAGE_CLASS]
    new_name = (new.get("spec") or {}).get("storageClassName")
    return ((old.get("spec") or {}).get("storageClassName") is None
            and new_name is not None and new_name == old_class
            and new_annotations.get(BETA_STORAGE_CLASS, old_class) == old_class)


def validate_claim_update(new: Obj, old: Obj) -> list[Cause]:
    """``ValidatePersistentVolumeClaimUpdate``'s immutability rules (the new claim's own
    validation is the caller's)."""
    causes: list[Cause] = []
    new_spec = copy.deepcopy(new.get("spec") or {})
    old_spec = copy.deepcopy(old.get("spec") or {})
    if not old_spec.get("volumeName"):
        # the binder may name the volume once
        if "volumeName" in new_spec:
            old_spec["volumeName"] = new_spec["volumeName"]
        else:
            old_spec.pop("volumeName", None)
    if _class_upgrade_from_annotation(new, old):
        new_spec.pop("storageClassName", None)
    else:
        new_value = ((new.get("metadata") or {}).get("annotations") or {}).get(
            BETA_STORAGE_CLASS, "")
        old_value = ((old.get("metadata") or {}).get("annotations") or {}).get(
            BETA_STORAGE_CLASS, "")
        if new_value != old_value:
            causes.append(fe.invalid(f"metadata.annotations.{BETA_STORAGE_CLASS}", new_value,
                                     "field is immutable"))
        old_annotations = (old.get("metadata") or {}).get("annotations") or {}
        new_name = (new.get("spec") or {}).get("storageClassName")
        if new_name is not None and (old.get("spec") or {}).get("storageClassName") is None \
                and old_annotations.get(BETA_STORAGE_CLASS, new_name) == new_name:
            new_spec["storageClassName"] = old_spec.get("storageClassName")
            if new_spec["storageClassName"] is None:
                new_spec.pop("storageClassName")
    bound = (new.get("status") or {}).get("phase") == "Bound"
    requests = (new_spec.get("resources") or {}).get("requests")
    if bound and isinstance(requests, dict):
        old_storage = ((old_spec.get("resources") or {}).get("requests") or {}).get("storage")
        if old_storage is None:
            requests.pop("storage", None)
        else:
            requests["storage"] = old_storage
    if bound and new_spec.get("volumeAttributesClassName") is not None:
        new_spec["volumeAttributesClassName"] = old_spec.get("volumeAttributesClassName")
    if new_spec != old_spec:
        # (go-cmp's report, loaded for a refused update only: not at the server's start)
        from setpoint.cluster.registry.podspecdiff import claim_spec_diff

        diff = claim_spec_diff(old_spec, new_spec)
        causes.append(fe.forbidden("spec", f"{SPEC_IMMUTABLE}\n{diff}"))
    new_size, old_size = _storage(new, "requests"), _storage(old, "requests")
    if new_size.cmp(old_size) < 0 and new_size.cmp(_storage(old, "capacity")) <= 0:
        causes.append(fe.forbidden("spec.resources.requests.storage",
                                   "field can not be less than status.capacity"))
    new_mode = (new.get("spec") or {}).get("volumeMode")
    old_mode = (old.get("spec") or {}).get("volumeMode")
    if new_mode != old_mode:
        causes.append(fe.invalid("volumeMode", fe.GoValue(_go_string_pointer(new_mode)),
                                 "field is immutable"))
    new_class = (new.get("spec") or {}).get("volumeAttributesClassName")
    if new_class != (old.get("spec") or {}).get("volumeAttributesClassName"):
        causes.append(fe.forbidden("spec.volumeAttributesClassName",
                                   "update is forbidden when the VolumeAttributesClass feature "
                                   "gate is disabled"))
    return causes


def _go_string_pointer(value: Any) -> str:
    """How ``field.Invalid`` prints a ``*PersistentVolumeMode``: nil as ``null``, else the
    pointed-to string."""
    return "null" if value is None else fe.go_quote(str(value))

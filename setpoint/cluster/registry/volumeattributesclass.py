"""The fields of the VolumeAttributesClass gate, beta and off by default in 1.32: dropped from
what a write sends unless the stored object already uses them (pkg/api/persistentvolume
util.go ``DropDisabledSpecFields``; pkg/api/persistentvolumeclaim util.go
``DropDisabledFieldsFromSpec`` and ``DropDisabledFieldsFromStatus``)."""

from __future__ import annotations

from setpoint.machinery.objects import Obj

STATUS_FIELDS = ("currentVolumeAttributesClassName", "modifyVolumeStatus")


def drop_disabled_spec(new: Obj, old: Obj | None) -> None:
    """``spec.volumeAttributesClassName`` of a claim or volume, kept only where the old
    spec has one (``vacInuse``)."""
    spec = new.get("spec")
    old_spec = (old or {}).get("spec") or {}
    if isinstance(spec, dict) and old_spec.get("volumeAttributesClassName") is None:
        spec.pop("volumeAttributesClassName", None)


def drop_disabled_claim_status(new: Obj, old: Obj) -> None:
    """A claim's status fields of the gate, each kept only where the old status has it."""
    status = new.get("status")
    old_status = old.get("status") or {}
    if isinstance(status, dict):
        for key in STATUS_FIELDS:
            if old_status.get(key) is None:
                status.pop(key, None)

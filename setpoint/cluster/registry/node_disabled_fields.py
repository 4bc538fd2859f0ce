"""The Node fields dropped from writes, as pkg/registry/core/node/strategy.go 1.32 drops them
(``dropDisabledFields``, nodeStatusStrategy ``PrepareForUpdate``): ``spec.configSource`` and
``status.config`` are left over from the removed DynamicKubeletConfig and are kept only where
the stored node has them (``configSource`` never on a create); ``status.features`` belongs to
SupplementalGroupsPolicy, alpha and off in 1.32, kept only where the stored node has it."""

from __future__ import annotations

from setpoint.machinery.objects import Obj


def _part(obj: Obj | None, key: str) -> Obj:
    value = (obj or {}).get(key)
    return value if isinstance(value, dict) else {}


def drop_disabled_fields(node: Obj, old: Obj | None) -> None:
    """``dropDisabledFields``: on a create (``old`` None) and on an update."""
    spec, status = node.get("spec"), node.get("status")
    if isinstance(spec, dict) and (old is None or _part(old, "spec").get("configSource")
                                   is None):
        spec.pop("configSource", None)
    if isinstance(status, dict) and _part(old, "status").get("features") is None:
        status.pop("features", None)


def drop_disabled_status_fields(node: Obj, old: Obj) -> None:
    """nodeStatusStrategy ``PrepareForUpdate``: the status fields kept only in use."""
    status, old_status = node.get("status"), _part(old, "status")
    if isinstance(status, dict):
        for key in ("config", "features"):
            if old_status.get(key) is None:
                status.pop(key, None)

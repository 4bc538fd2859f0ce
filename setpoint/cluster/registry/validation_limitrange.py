"""LimitRange validation (kubernetes v1.32 pkg/apis/core/validation/validation.go:
ValidateLimitRange, validateLimitRangeTypeName, validateLimitRangeResourceName).

Each item has a unique, known (or domain-qualified) type; Pod items take no defaults; a
PersistentVolumeClaim item needs a storage min or max; for every resource the item names,
min <= defaultRequest <= default <= max, 1 <= maxLimitRequestRatio <= max/min, and a resource
that cannot be overcommitted has default == defaultRequest. The checks run on the defaulted
object (a Container item's default and defaultRequest are filled from max and min first).
Go walks the resources in map order; here they come sorted.
"""

from __future__ import annotations

from typing import Any

from setpoint.cluster.registry.validation_containers import overcommit_allowed, resource_name
from setpoint.cluster.registry.validation_nodes import go_quantity
from setpoint.cluster.registry.validation_resourcequota import validate_resource_name
from setpoint.machinery import fielderrors as fe
from setpoint.machinery import names
from setpoint.machinery.errors import Cause
from setpoint.machinery.objects import Obj
from setpoint.machinery.quantity import Quantity, try_from_json

LIMIT_TYPES = ("Pod", "Container", "PersistentVolumeClaim")
_KINDS = ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio")
_MAX_MILLI = 2 ** 63 // 1000  # resource.MaxMilliValue


def _type_name(value: str, path: str) -> list[Cause]:
    """``validateLimitRangeTypeName``."""
    causes = [fe.invalid(path, value, m) for m in names.is_qualified_name(value)]
    if not causes and "/" not in value and value not in LIMIT_TYPES:
        causes.append(fe.invalid(path, value, "must be a standard limit type or fully qualified"))
    return causes


def _resource_name(limit_type: str, name: str, path: str) -> list[Cause]:
    """``validateLimitRangeResourceName``: container rules for Pod and Container items."""
    if limit_type in ("Pod", "Container"):
        return resource_name(name, path)
    return validate_resource_name(name, path)


def _quantities(values: Any) -> dict[str, tuple[Quantity, str]]:
    out: dict[str, tuple[Quantity, str]] = {}
    for key, raw in (values or {}).items() if isinstance(values, dict) else ():
        q = try_from_json(raw)
        if q is None:
            continue
        out[str(key)] = (q, str(q))
    return out


def _go_float(value: float) -> str:
    """fmt's ``%f``."""
    return f"{value:f}"


def _item(item: Obj, path: str, seen: set[str]) -> list[Cause]:
    kind = str(item.get("type") or "")
    causes = _type_name(kind, f"{path}.type")
    if kind in seen:
        causes.append(fe.duplicate(f"{path}.type", kind))
    keys: set[str] = set()
    for part in ("max", "min"):
        for name in item.get(part) or {}:
            causes.extend(_resource_name(kind, str(name), fe.key(f"{path}.{part}", str(name))))
            keys.add(str(name))
    if kind == "Pod":
        for part in ("default", "defaultRequest"):
            if item.get(part):
                causes.append(fe.forbidden(f"{path}.{part}",
                                           "may not be specified when `type` is 'Pod'"))
    else:
        for part in ("default", "defaultRequest"):
            for name in item.get(part) or {}:
                causes.extend(_resource_name(kind, str(name),
                                             fe.key(f"{path}.{part}", str(name))))
                keys.add(str(name))
    if kind == "PersistentVolumeClaim" and "storage" not in (item.get("min") or {}) \
            and "storage" not in (item.get("max") or {}):
        causes.append(fe.required(f"{path}.limits", "either minimum or maximum storage value "
                                                    "is required, but neither was provided"))
    for name in item.get("maxLimitRequestRatio") or {}:
        causes.extend(_resource_name(kind, str(name),
                                     fe.key(f"{path}.maxLimitRequestRatio", str(name))))
        keys.add(str(name))
    got = {part: _quantities(item.get(part)) for part in _KINDS}
    if kind == "Pod":
        got["default"], got["defaultRequest"] = {}, {}
    for name in sorted(keys):
        causes.extend(_bounds(name, {p: got[p].get(name) for p in _KINDS}, path))
    return causes


def _bounds(name: str, q: dict[str, tuple[Quantity, str] | None], path: str) -> list[Cause]:
    lo, hi, default, request, ratio = (q["min"], q["max"], q["default"], q["defaultRequest"],
                                       q["maxLimitRequestRatio"])
    causes: list[Cause] = []

    def bad(part: str, shown: tuple[Quantity, str], message: str) -> None:
        causes.append(fe.invalid(fe.key(f"{path}.{part}", name), go_quantity(*shown), message))

    if lo and hi and lo[0].cmp(hi[0]) > 0:
        bad("min", lo, f"min value {lo[1]} is greater than max value {hi[1]}")
    if request and lo and lo[0].cmp(request[0]) > 0:
        bad("defaultRequest", request,
            f"min value {lo[1]} is greater than default request value {request[1]}")
    if request and hi and request[0].cmp(hi[0]) > 0:
        bad("defaultRequest", request,
            f"default request value {request[1]} is greater than max value {hi[1]}")
    if request and default and request[0].cmp(default[0]) > 0:
        bad("defaultRequest", request,
            f"default request value {request[1]} is greater than default limit value "
            f"{default[1]}")
    if default and lo and lo[0].cmp(default[0]) > 0:
        bad("default", lo, f"min value {lo[1]} is greater than default value {default[1]}")
    if default and hi and default[0].cmp(hi[0]) > 0:
        bad("default", hi, f"default value {default[1]} is greater than max value {hi[1]}")
    if ratio and ratio[0].cmp(Quantity.from_int(1)) < 0:
        bad("maxLimitRequestRatio", ratio, f"ratio {ratio[1]} is less than 1")
    if ratio and lo and hi:
        ratio_value, lo_value, hi_value = float(ratio[0].value()), lo[0].value(), hi[0].value()
        if max(ratio[0].value(), lo_value, hi_value) < _MAX_MILLI:
            ratio_value = ratio[0].milli_value() / 1000
            lo_value, hi_value = lo[0].milli_value(), hi[0].milli_value()
        limit = hi_value / lo_value if lo_value else float("inf")
        if ratio_value > limit:
            shown = "+Inf" if limit == float("inf") else _go_float(limit)
            bad("maxLimitRequestRatio", ratio,
                f"ratio {ratio[1]} is greater than max/min = {shown}")
    if not overcommit_allowed(name) and default and request and default[0].cmp(request[0]):
        bad("defaultRequest", request, f"default value {default[1]} must equal to "
                                       f"defaultRequest value {request[1]} in {name}")
    return causes


def validate_limit_range(obj: Obj) -> list[Cause]:
    """``ValidateLimitRange`` past its metadata (the caller's)."""
    raw = obj.get("spec")
    spec: Obj = raw if isinstance(raw, dict) else {}
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, item in enumerate(spec.get("limits") or []):
        if not isinstance(item, dict):
            continue
        causes.extend(_item(item, f"spec.limits[{i}]", seen))
        kind = str(item.get("type") or "")
        seen.add(kind)
    return causes

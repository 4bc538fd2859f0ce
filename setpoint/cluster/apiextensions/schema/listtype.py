"""The x-kubernetes-list-type invariants of a custom resource: a ``set`` holds each value once, a
``map`` each key once (apiextensions-apiserver pkg/apiserver/schema/listtype/validation.go
ValidateListSetsAndMaps).

It is its own pass, after the OpenAPI schema, the scale paths and the embedded resources,
and it ratchets as a whole: an update is checked only when the stored object has no such
error (pkg/registry/customresource/strategy.go ValidateUpdate, status_strategy.go).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from setpoint.machinery.errors import Cause

from . import fielderrors as fe


def validate_list_sets_and_maps(schema: Mapping[str, Any], obj: Any, path: str = ""
                                ) -> list[Cause]:
    """Every set and map list of ``obj`` checked, nested ones included."""
    if isinstance(obj, list):
        return _array(schema, obj, path)
    if not isinstance(obj, dict):
        return []
    errs: list[Cause] = []
    additional = schema.get("additionalProperties")
    if isinstance(additional, Mapping):
        for k, v in obj.items():
            errs += validate_list_sets_and_maps(additional, v, fe.key(path, k))
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        for k, v in obj.items():
            sub = properties.get(k)
            if isinstance(sub, Mapping):
                errs += validate_list_sets_and_maps(sub, v, fe.child(path, k))
    return errs


def _array(schema: Mapping[str, Any], value: list[Any], path: str) -> list[Cause]:
    errs: list[Cause] = []
    list_type = schema.get("x-kubernetes-list-type")
    if list_type == "set":
        errs += [fe.duplicate(fe.index(path, i), value[i]) for i in _repeated(value)]
    elif list_type == "map":
        errs += _list_map(list(schema.get("x-kubernetes-list-map-keys") or []), value, path)
    items = schema.get("items")
    if isinstance(items, Mapping):
        for i, item in enumerate(value):
            errs += validate_list_sets_and_maps(items, item, fe.index(path, i))
    return errs


def _identity(value: Any) -> Any:
    """What validateListSet keys a value by: a compound by its JSON, a scalar as Go's
    interface equality sees it (an int64 1 is not a float64 1.0, nor a bool)."""
    if isinstance(value, dict | list):
        return ("json", orjson.dumps(value, option=orjson.OPT_SORT_KEYS))
    return (type(value).__name__, value)


def _repeated(values: list[Any]) -> list[int]:
    """validateListSet: the index of each value's second occurrence (a third is not
    reported again)."""
    return _repeated_ids([_identity(v) for v in values])


_UNSPECIFIED = object()


def _list_map(keys: list[str], value: list[Any], path: str) -> list[Cause]:
    """validateListMap: every item an object, then each combination of keys once."""
    for i, item in enumerate(value):
        if item is not None and not isinstance(item, dict):
            return [fe.invalid(fe.index(path, i), item,
                               "must be an object for an array of list-type map")]
    if len(value) <= 1:
        return []
    if len(keys) == 1:
        [name] = keys
        found = [item.get(name, _UNSPECIFIED) if isinstance(item, dict) else _UNSPECIFIED
                 for item in value]
        # (the unspecified key is one value of its own: repeated, it is a duplicate too)
        ids = [("unspecified",) if k is _UNSPECIFIED else _identity(k) for k in found]
        return [fe.duplicate(fe.index(path, i), {} if found[i] is _UNSPECIFIED
                             else {name: found[i]}) for i in _repeated_ids(ids)]
    combos = [{k: item[k] for k in keys if k in item} if isinstance(item, dict) else {}
              for item in value]
    return [fe.duplicate(fe.index(path, i), combos[i]) for i in _repeated(combos)]


def _repeated_ids(ids: list[Any]) -> list[int]:
    seen: dict[Any, int] = {}
    out: list[int] = []
    for i, key in enumerate(ids):
        seen[key] = seen.get(key, 0) + 1
        if seen[key] == 2:
            out.append(i)
    return out


__all__ = ["validate_list_sets_and_maps"]

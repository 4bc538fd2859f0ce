"""Schema defaults (``apiextensions-apiserver/pkg/apiserver/schema/defaulting``).

A property that is absent, or null while not nullable, gets a deep copy of its ``default``;
defaulting then continues inside it, so defaults nest. The same runs on write and on read
(objects stored before a default was added show it without a new resourceVersion).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any


def _non_nullable_null(x: Any, s: Mapping[str, Any] | None) -> bool:
    return x is None and s is not None and not s.get("nullable")


def _schema_for_field(k: str, s: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    if s is None:
        return None
    props = s.get("properties") or {}
    if k in props:
        sub: Mapping[str, Any] = props[k]
        return sub
    additional = s.get("additionalProperties")
    return additional if isinstance(additional, Mapping) else None


def prune_non_nullable_nulls_without_defaults(x: Any, s: Mapping[str, Any] | None) -> None:
    """Drop nulls the schema does not allow and cannot default (``prunenulls.go``).

    Runs right after pruning, before validation: a null that is not ``nullable`` and has no
    ``default`` vanishes instead of failing ``must be of type``; one with a default is left
    for ``apply_defaults`` to replace; a ``nullable`` null is kept as null.
    """
    if isinstance(x, dict):
        for k in list(x):
            sub = _schema_for_field(k, s)
            if x[k] is None and sub is not None and not sub.get("nullable") \
                    and sub.get("default") is None:
                del x[k]
            else:
                prune_non_nullable_nulls_without_defaults(x[k], sub)
    elif isinstance(x, list):
        items = s.get("items") if s is not None else None
        for v in x:
            prune_non_nullable_nulls_without_defaults(
                v, items if isinstance(items, Mapping) else None)


def apply_defaults(x: Any, s: Mapping[str, Any] | None) -> None:
    """Fill defaults into ``x`` in place."""
    if s is None:
        return
    if isinstance(x, dict):
        props: Mapping[str, Any] = s.get("properties") or {}
        for k, prop in props.items():
            if not isinstance(prop, Mapping) or prop.get("default") is None:
                continue
            if k not in x or _non_nullable_null(x[k], prop):
                x[k] = copy.deepcopy(prop["default"])
        additional = s.get("additionalProperties")
        for k in list(x):
            if k in props:
                apply_defaults(x[k], props[k])
            elif isinstance(additional, Mapping):
                if _non_nullable_null(x[k], additional) and additional.get("default") is not None:
                    x[k] = copy.deepcopy(additional["default"])
                apply_defaults(x[k], additional)
    elif isinstance(x, list):
        items = s.get("items")
        if not isinstance(items, Mapping):
            return
        for i in range(len(x)):
            if _non_nullable_null(x[i], items) and items.get("default") is not None:
                x[i] = copy.deepcopy(items["default"])
            apply_defaults(x[i], items)


def has_defaults(s: Any) -> bool:
    """Whether any node of the schema declares a default."""
    if not isinstance(s, Mapping):
        return False
    if s.get("default") is not None:
        return True
    for k in ("items", "additionalProperties", "not"):
        if has_defaults(s.get(k)):
            return True
    for sub in (s.get("properties") or {}).values():
        if has_defaults(sub):
            return True
    return any(has_defaults(sub) for k in ("allOf", "anyOf", "oneOf") for sub in s.get(k) or [])

"""Comparing desired and live objects, so that writes that change nothing are not sent."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def contains(live: Any, desired: Any) -> bool:
    """Whether ``live`` already holds everything ``desired`` says.

    Maps: every desired key is present with a contained value (extra live keys, such as
    server defaults, are fine). Lists: same length, item by item contained. Scalars:
    equal (``1 == 1.0``). A desired ``None`` asks for the key to be absent or null.
    """
    if isinstance(desired, Mapping):
        if not isinstance(live, Mapping):
            return False
        for key, value in desired.items():
            if value is None:
                if live.get(key) is not None:
                    return False
            elif key not in live or not contains(live[key], value):
                return False
        return True
    if isinstance(desired, list):
        if not isinstance(live, list) or len(live) != len(desired):
            return False
        return all(contains(a, b) for a, b in zip(live, desired, strict=True))
    return _same(live, desired)


def _same(a: Any, b: Any) -> bool:
    # True == 1 in Python, but not in JSON
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return bool(a == b)


def merge_patch(live: Any, desired: Any) -> Any:
    """The JSON merge patch (RFC 7386) that turns ``live`` into ``desired``; an empty dict
    when they are equal."""
    # JSON objects are dicts: their exact type is asked first, the ABC (a slower check)
    # only for other mappings
    if not (type(live) is dict or isinstance(live, Mapping)) \
            or not (type(desired) is dict or isinstance(desired, Mapping)):
        return desired
    patch: dict[str, Any] = {}
    for key, value in desired.items():
        if key not in live:
            patch[key] = value
        elif (type(value) is dict or isinstance(value, Mapping)) \
                and (type(live[key]) is dict or isinstance(live[key], Mapping)):
            sub = merge_patch(live[key], value)
            if sub != {}:
                patch[key] = sub
        elif not _same(live[key], value):
            patch[key] = value
    for key in live:
        if key not in desired:
            patch[key] = None
    return patch


def apply_merge_patch(target: Any, patch: Any) -> Any:
    """``target`` with the merge patch applied (a new value; ``target`` is not changed)."""
    if not isinstance(patch, Mapping):
        return patch
    out = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = apply_merge_patch(out.get(key), value)
    return out

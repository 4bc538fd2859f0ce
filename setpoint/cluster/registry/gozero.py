"""Go's zero values as the generated defaulters see them (``zz_generated.defaults.go``).

A defaulter fills a field only when Go would find it unset: a pointer that is nil or a
string that is empty. Nested structs that are not pointers always exist in Go, so a
defaulter of an inner field first makes the outer one.
"""

from __future__ import annotations

from typing import Any

from setpoint.machinery.objects import Obj


def default_unset(d: Obj, key: str, value: Any) -> None:
    """Default a field Go would consider unset (absent, null or the empty string)."""
    if d.get(key) is None or d.get(key) == "":
        d[key] = value


def struct_field(d: Obj, key: str) -> Obj:
    """The dict at ``key``, created when absent (a non-pointer struct in Go)."""
    value = d.get(key)
    if not isinstance(value, dict):
        value = {}
        d[key] = value
    return value


__all__ = ["default_unset", "struct_field"]

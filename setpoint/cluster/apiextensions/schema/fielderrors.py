"""Field errors for custom resources, whose values are decoded JSON (Go ``interface{}``).

The constructors are the machinery's (``setpoint.machinery.fielderrors``); only the rendering
of the offending value differs from the built-in kinds' typed fields, so these wrappers pass it
pre-rendered the way the apiextensions validators print it.
"""

from __future__ import annotations

from typing import Any

from setpoint.machinery import fielderrors as _fe
from setpoint.machinery.errors import Cause
from setpoint.machinery.fielderrors import (
    GoValue,
    child,
    forbidden,
    go_interface,
    go_quote,
    index,
    internal,
    json_value,
    key,
    required,
    too_long,
    too_many,
)
from setpoint.machinery.gofmt import go_float

__all__ = [
    "GoValue", "Rendered", "child", "duplicate", "forbidden", "go_float", "go_pointer",
    "go_quote",
    "go_sharp", "go_value", "index", "internal", "invalid", "key", "not_supported", "required",
    "too_long", "too_many", "type_invalid",
]

Rendered = GoValue  # a value already written as Go prints it (e.g. a struct)
go_sharp = go_interface


# Go's %#v prints a non-nil pointer field as its heap address, which no two runs share; an
# address of the same shape stands in for it
_GO_HEAP_ADDRESS = "0xc000000000"


def go_pointer(type_name: str, is_set: bool) -> str:
    """``%#v`` of a pointer field of type ``*type_name``: nil, or an address."""
    return f"(*{type_name})({_GO_HEAP_ADDRESS if is_set else 'nil'})"


def go_value(value: Any) -> str:
    return json_value(value).text


def invalid(path: str, value: Any, detail: str = "") -> Cause:
    return _fe.invalid(path, json_value(value), detail)


def type_invalid(path: str, value: Any, detail: str = "") -> Cause:
    return _fe.type_invalid(path, json_value(value), detail)


def not_supported(path: str, value: Any, supported: list[str]) -> Cause:
    return _fe.not_supported(path, json_value(value), supported)


def duplicate(path: str, value: Any) -> Cause:
    return _fe.duplicate(path, json_value(value))

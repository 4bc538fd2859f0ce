"""Field-level validation errors worded exactly as ``k8s.io/apimachinery/.../validation/field``.

Every validator of the embedded server reports :class:`~setpoint.machinery.errors.Cause`
objects built here, so that ``details.causes[]`` and the summary message of a 422 read like
the real kube-apiserver's: ``Invalid value: "x": <detail>``, ``Required value``, ...

Go prints the offending value with ``%q`` for strings, ``%v`` for numbers and booleans and
``%#v`` for everything else; :class:`GoValue` lets a caller pass a value already written the
way Go would write it (``map[string]string{"app":"web"}``) when the Python value cannot say
which Go type it had.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from setpoint.machinery.errors import Cause
from setpoint.machinery.gofmt import GoValue as GoValue
from setpoint.machinery.gofmt import go_float
from setpoint.machinery.gofmt import go_interface as go_interface
from setpoint.machinery.gofmt import go_pointer as go_pointer
from setpoint.machinery.gofmt import go_quote as go_quote
from setpoint.machinery.gofmt import go_string_map as go_string_map
from setpoint.machinery.gofmt import go_string_slice as go_string_slice

REQUIRED = "FieldValueRequired"
INVALID = "FieldValueInvalid"
TYPE_INVALID = "FieldValueTypeInvalid"
NOT_SUPPORTED = "FieldValueNotSupported"
DUPLICATE = "FieldValueDuplicate"
FORBIDDEN = "FieldValueForbidden"
TOO_LONG = "FieldValueTooLong"
TOO_MANY = "FieldValueTooMany"
NOT_FOUND = "FieldValueNotFound"
INTERNAL = "InternalError"


def format_value(value: Any) -> str:
    """How ``field.Error.ErrorBody`` prints a bad value."""
    if isinstance(value, GoValue):
        return value.text
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return go_string_slice(list(value)).text
    if isinstance(value, Mapping) and all(isinstance(v, str) for v in value.values()):
        return go_string_map(value).text
    return repr(value)


# -- decoded JSON values (custom resources): Go prints them as interface{} values ----------

def unmarshal_kind(value: Any) -> str:
    """How encoding/json's UnmarshalTypeError names a JSON value (``cannot unmarshal
    string into ...``): object, array, bool, number or string, never a Python type."""
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return "string"


def json_value(value: Any) -> GoValue:
    """A decoded JSON value as ``field.Error`` prints it: scalars plainly, the rest ``%#v``."""
    if isinstance(value, GoValue):
        return value
    if value is None:
        return GoValue("null")
    if isinstance(value, float) and not isinstance(value, bool):
        return GoValue(go_float(value))
    if isinstance(value, dict | list):
        return GoValue(go_interface(value))
    return GoValue(format_value(value))


# -- paths -----------------------------------------------------------------------------------

def child(path: str, name: str) -> str:
    """``path.name`` (``name`` alone at the root)."""
    return f"{path}.{name}" if path else name


def key(path: str, k: str) -> str:
    """``path[k]``, the way field.Path renders a map key."""
    return f"{path}[{k}]"


def index(path: str, i: int) -> str:
    return f"{path}[{i}]"


# -- constructors ----------------------------------------------------------------------------

def _with_detail(head: str, detail: str) -> str:
    return f"{head}: {detail}" if detail else head


def required(path: str, detail: str = "") -> Cause:
    """``field.Required``."""
    return Cause(REQUIRED, _with_detail("Required value", detail), path)


def invalid(path: str, value: Any, detail: str = "") -> Cause:
    """``field.Invalid``."""
    return Cause(INVALID, _with_detail(f"Invalid value: {format_value(value)}", detail), path)


def type_invalid(path: str, value: Any, detail: str = "") -> Cause:
    """``field.TypeInvalid``."""
    return Cause(TYPE_INVALID, _with_detail(f"Invalid value: {format_value(value)}", detail),
                 path)


def not_supported(path: str, value: Any, valid: Iterable[str] = ()) -> Cause:
    """``field.NotSupported``: lists the supported values, quoted."""
    valid = list(valid)
    detail = "supported values: " + ", ".join(go_quote(v) for v in valid) if valid else ""
    return Cause(NOT_SUPPORTED,
                 _with_detail(f"Unsupported value: {format_value(value)}", detail), path)


def duplicate(path: str, value: Any) -> Cause:
    """``field.Duplicate``."""
    return Cause(DUPLICATE, f"Duplicate value: {format_value(value)}", path)


def forbidden(path: str, detail: str = "") -> Cause:
    """``field.Forbidden``."""
    return Cause(FORBIDDEN, _with_detail("Forbidden", detail), path)


def not_found(path: str, value: Any) -> Cause:
    """``field.NotFound``."""
    return Cause(NOT_FOUND, f"Not found: {format_value(value)}", path)


def too_long(path: str, max_length: int) -> Cause:
    """``field.TooLong`` (the value itself is never printed; "bytes" even for 1 in
    apimachinery v0.32, pkg/util/validation/field/errors.go)."""
    if max_length >= 0:
        detail = f"may not be more than {max_length} bytes"
    else:
        detail = "value is too long"
    return Cause(TOO_LONG, f"Too long: {detail}", path)


def too_many(path: str, actual: int, max_items: int) -> Cause:
    """``field.TooMany``."""
    detail = f"must have at most {max_items} items" if max_items >= 0 else "has too many items"
    head = f"Too many: {actual}" if actual >= 0 else "Too many"
    return Cause(TOO_MANY, f"{head}: {detail}", path)


def internal(path: str, detail: str) -> Cause:
    """``field.InternalError``."""
    return Cause(INTERNAL, f"Internal error: {detail}", path)


def error_text(cause: Cause) -> str:
    """``field.Error.Error()``: ``<field>: <message>`` (an empty field still gets its colon)."""
    return f"{cause.field}: {cause.message}"


def aggregate_text(causes: Iterable[Cause]) -> str:
    """``ErrorList.ToAggregate().Error()``: duplicates dropped, several in brackets."""
    seen: list[str] = []
    for c in causes:
        text = error_text(c)
        if text not in seen:
            seen.append(text)
    if len(seen) == 1:
        return seen[0]
    return "[" + ", ".join(seen) + "]"

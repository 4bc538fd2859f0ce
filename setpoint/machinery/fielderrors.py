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

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from setpoint.machinery.errors import Cause
from setpoint.machinery.gofmt import go_float

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


@dataclass(frozen=True, slots=True)
class GoValue:
    """A bad value already rendered as Go's ``%#v`` would render it."""

    text: str

    def __str__(self) -> str:
        return self.text


_GO_ESCAPES = {
    "\a": r"\a", "\b": r"\b", "\f": r"\f", "\n": r"\n", "\r": r"\r", "\t": r"\t",
    "\v": r"\v", "\\": "\\\\", '"': '\\"',
}


def go_quote(s: str) -> str:
    """``strconv.Quote``: a double-quoted Go string literal."""
    out = ['"']
    for ch in s:
        esc = _GO_ESCAPES.get(ch)
        if esc is not None:
            out.append(esc)
        elif ch.isprintable():
            out.append(ch)
        else:
            code = ord(ch)
            if code < 0x80:
                out.append(f"\\x{code:02x}")
            elif code <= 0xFFFF:
                out.append(f"\\u{code:04x}")
            else:
                out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def go_string_slice(values: Sequence[str] | None) -> GoValue:
    """``%#v`` of a ``[]string``."""
    if values is None:
        return GoValue("[]string(nil)")
    return GoValue("[]string{" + ", ".join(go_quote(v) for v in values) + "}")


def go_string_map(values: Mapping[str, str] | None) -> GoValue:
    """``%#v`` of a ``map[string]string`` (Go prints map keys sorted)."""
    if values is None:
        return GoValue("map[string]string(nil)")
    items = ", ".join(f"{go_quote(k)}:{go_quote(str(values[k]))}" for k in sorted(values))
    return GoValue("map[string]string{" + items + "}")


_fake_pointers = itertools.count(0xC000100000, 0x10)


def go_pointer(type_name: str, present: bool) -> str:
    """``%#v`` of a pointer field: ``(*bool)(nil)`` or ``(*bool)(0xc000...)``."""
    if not present:
        return f"(*{type_name})(nil)"
    return f"(*{type_name})(0x{next(_fake_pointers):x})"


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


def go_interface(value: Any) -> str:
    """``%#v`` of a decoded JSON value (``map[string]interface {}{...}``)."""
    if value is None:
        return "interface {}(nil)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, dict):
        inner = ", ".join(f"{go_quote(k)}:{go_interface(v)}" for k, v in sorted(value.items()))
        return "map[string]interface {}{" + inner + "}"
    if isinstance(value, list):
        return "[]interface {}{" + ", ".join(go_interface(v) for v in value) + "}"
    return repr(value)


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
    """``field.TooLong`` (the value itself is never printed)."""
    if max_length >= 0:
        unit = "byte" if max_length == 1 else "bytes"
        detail = f"may not be more than {max_length} {unit}"
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

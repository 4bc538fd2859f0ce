"""Field errors worded like ``k8s.io/apimachinery/pkg/util/validation/field``.

Kubernetes builds every validation failure from a handful of error types whose message is
``<type>: <value>: <detail>``; the value is rendered the way Go's ``fmt`` would render the
decoded JSON value. Reproducing that rendering keeps our causes word for word with the real
apiserver's.
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any

from setpoint.machinery.errors import Cause

_OMIT = object()


# -- paths -----------------------------------------------------------------------------------

def child(path: str, name: str) -> str:
    """``path.name`` (``name`` alone at the root)."""
    return f"{path}.{name}" if path else name


def key(path: str, k: str) -> str:
    """``path[k]``, the way field.Path renders a map key."""
    return f"{path}[{k}]"


def index(path: str, i: int) -> str:
    return f"{path}[{i}]"


# -- Go value rendering ------------------------------------------------------------------------

def go_float(f: float) -> str:
    """``fmt.Sprint(float64)``: shortest digits; exponent form below 1e-4 and from 1e6 on."""
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    if f == 0:
        return "0"
    _, digit_tuple, exponent = Decimal(repr(abs(f))).normalize().as_tuple()
    digits = "".join(str(d) for d in digit_tuple)
    exp = len(digits) + int(exponent) - 1
    prefix = "-" if f < 0 else ""
    if exp < -4 or exp >= 6:
        body = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{prefix}{body}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if exp < 0:
        return f"{prefix}0.{'0' * (-exp - 1)}{digits}"
    if len(digits) <= exp + 1:
        return f"{prefix}{digits}{'0' * (exp + 1 - len(digits))}"
    return f"{prefix}{digits[:exp + 1]}.{digits[exp + 1:]}"


def go_quote(s: str) -> str:
    """``%q`` of a Go string (close enough: JSON escaping without ASCII-folding)."""
    return json.dumps(s, ensure_ascii=False)


def go_sharp(value: Any) -> str:
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
        inner = ", ".join(f"{go_quote(k)}:{go_sharp(v)}" for k, v in sorted(value.items()))
        return "map[string]interface {}{" + inner + "}"
    if isinstance(value, list):
        return "[]interface {}{" + ", ".join(go_sharp(v) for v in value) + "}"
    return repr(value)


class Rendered:
    """A bad value already rendered as Go prints it (e.g. a struct), shown verbatim."""

    def __init__(self, text: str) -> None:
        self.text = text


def go_value(value: Any) -> str:
    """The value part of ``field.Error.ErrorBody``."""
    if isinstance(value, Rendered):
        return value.text
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, str):
        return go_quote(value)
    return go_sharp(value)


# -- constructors ------------------------------------------------------------------------------

def _with_detail(body: str, detail: str) -> str:
    return f"{body}: {detail}" if detail else body


def required(path: str, detail: str = "") -> Cause:
    return Cause("FieldValueRequired", _with_detail("Required value", detail), path)


def forbidden(path: str, detail: str = "") -> Cause:
    return Cause("FieldValueForbidden", _with_detail("Forbidden", detail), path)


def invalid(path: str, value: Any, detail: str = "") -> Cause:
    return Cause("FieldValueInvalid", _with_detail(f"Invalid value: {go_value(value)}", detail),
                 path)


def type_invalid(path: str, value: Any, detail: str = "") -> Cause:
    return Cause("FieldValueTypeInvalid",
                 _with_detail(f"Invalid value: {go_value(value)}", detail), path)


def not_supported(path: str, value: Any, supported: list[str]) -> Cause:
    detail = "supported values: " + ", ".join(go_quote(s) for s in supported) if supported else ""
    return Cause("FieldValueNotSupported",
                 _with_detail(f"Unsupported value: {go_value(value)}", detail), path)


def duplicate(path: str, value: Any) -> Cause:
    rendered = go_sharp(value) if isinstance(value, dict | list) else go_value(value)
    return Cause("FieldValueDuplicate", f"Duplicate value: {rendered}", path)


def too_long(path: str, max_length: int) -> Cause:
    return Cause("FieldValueTooLong", f"Too long: may not be more than {max_length} bytes", path)


def too_many(path: str, actual: int, maximum: int) -> Cause:
    return Cause("FieldValueTooMany", f"Too many: {actual}: must have at most {maximum} items",
                 path)


def internal(path: str, detail: str) -> Cause:
    return Cause("InternalError", f"Internal error: {detail}", path)

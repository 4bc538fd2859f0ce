"""How Go prints and compares the values of a decoded JSON tree (``map[string]interface{}``).

The real server's error messages print such values with ``fmt`` (``%v``, ``%s``, ``%T``) and
compare them with Go's ``==``; answering with the same messages needs the same rules, written
once here for the patch algorithms, the field errors and the printed columns.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any


def go_equal(a: Any, b: Any) -> bool:
    """Go's ``==`` on two ``interface{}`` values decoded from JSON: same dynamic type and value.

    Python's ``1 == True`` and ``1 == 1.0`` are false in Go (``bool``/``int64``/``float64``
    differ).
    """
    return type(a) is type(b) and a == b


def type_name(value: Any) -> str:
    """``reflect.TypeOf(value)`` printed with ``%s`` for a value of a decoded JSON tree (a nil
    value has no type: ``%!s(<nil>)``)."""
    if value is None:
        return "%!s(<nil>)"
    if isinstance(value, dict):
        return "map[string]interface {}"
    if isinstance(value, list):
        return "[]interface {}"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    return "string"


def go_float(f: float) -> str:
    """Go's ``%v`` of a float64 (``strconv.FormatFloat(f, 'g', -1, 64)``): the shortest
    digits that round-trip, exponent form below 1e-04 and from 1e+06 on."""
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    if f == 0:
        return "-0" if math.copysign(1.0, f) < 0 else "0"
    digits, exp = _shortest_digits(f)
    sign = "-" if f < 0 else ""
    # %e when the decimal exponent is < -4 or >= 6 (the precision fmt picks for shortest)
    if exp < -4 or exp >= 6:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if exp < 0:
        return f"{sign}0.{'0' * (-exp - 1)}{digits}"
    if len(digits) <= exp + 1:
        return sign + digits + "0" * (exp + 1 - len(digits))
    return f"{sign}{digits[: exp + 1]}.{digits[exp + 1 :]}"


def _shortest_digits(f: float) -> tuple[str, int]:
    """The shortest round-tripping decimal digits of ``|f|`` and the exponent of the first."""
    sign_digits_exp = Decimal(repr(abs(f))).normalize().as_tuple()
    digits = "".join(str(d) for d in sign_digits_exp.digits)
    exponent = int(sign_digits_exp.exponent)
    return digits, len(digits) - 1 + exponent


def go_type(value: Any) -> str:
    """Go's ``%T`` of a decoded JSON value (numbers without a fraction decode to int64)."""
    return "<nil>" if value is None else type_name(value)


def format_v(value: Any) -> str:
    """``fmt.Sprintf("%v", value)`` for a decoded JSON tree (map keys sorted, as fmt does)."""
    if value is None:
        return "<nil>"
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{format_v(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(format_v(v) for v in value) + "]"
    return str(value)


def format_s(value: Any) -> str:
    """``fmt.Sprintf("%s", value)``: like ``%v`` but non-strings print as ``%!s(type=v)``."""
    if isinstance(value, str):
        return value
    if value is None:
        return "%!s(<nil>)"
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{format_s(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(format_s(v) for v in value) + "]"
    return f"%!s({type_name(value)}={format_v(value)})"

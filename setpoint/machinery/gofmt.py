"""How Go prints and compares the values of a decoded JSON tree (``map[string]interface{}``).

The real server's error messages print such values with ``fmt`` (``%v``, ``%s``, ``%T``, and
``%#v``/``strconv.Quote`` for Go syntax) and compare them with Go's ``==``; answering with the
same messages needs the same rules, written once here for the patch algorithms, the field
errors, the warnings and the printed columns.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
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


def format_q_slice(values: Iterable[str]) -> str:
    """``fmt.Sprintf("%q", values)`` for a ``[]string``: ``["a" "b"]``."""
    return "[" + " ".join(go_quote(v) for v in values) + "]"


# -- %#v: Go syntax ---------------------------------------------------------------------------

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


def go_interface(value: Any) -> str:
    """``%#v`` of a decoded JSON value (``map[string]interface {}{...}``)."""
    if value is None:
        return "interface {}(nil)"
    if isinstance(value, bool | int | float):  # (numbers and booleans: as %v prints them)
        return format_v(value)
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, dict):
        inner = ", ".join(f"{go_quote(k)}:{go_interface(v)}" for k, v in sorted(value.items()))
        return "map[string]interface {}{" + inner + "}"
    if isinstance(value, list):
        return "[]interface {}{" + ", ".join(go_interface(v) for v in value) + "}"
    return repr(value)

"""Go semantics the patch algorithms depend on: value equality, ``%v`` printing, stable sort.

The real server's patch code is Go working on ``map[string]interface{}`` trees. Its error
messages print those trees with ``fmt`` and its list ordering relies on ``sort.SliceStable``
with a comparison that is not always a strict weak order, so reproducing its answers exactly
needs these three pieces of Go behaviour.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any


def go_equal(a: Any, b: Any) -> bool:
    """Go's ``==`` on two ``interface{}`` values decoded from JSON: same dynamic type and value.

    Python's ``1 == True`` and ``1 == 1.0`` are false in Go (``bool``/``int64``/``float64``
    differ).
    """
    return type(a) is type(b) and a == b


def type_name(value: Any) -> str:
    """``reflect.TypeOf(value).String()`` for a value of a decoded JSON tree."""
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


def _float_v(f: float) -> str:
    """``strconv.FormatFloat(f, 'g', -1, 64)`` as ``fmt`` uses it for ``%v``."""
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
        return _float_v(value)
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


def stable_sort(items: Sequence[Any], less: Callable[[Any, Any], bool]) -> list[Any]:
    """Go's ``sort.SliceStable``: insertion sort on blocks of 20, then SymMerge.

    Ported step by step because apimachinery sorts with a ``less`` that is true for every
    element it cannot place; only the exact algorithm gives the same order for those.
    """
    data = list(items)
    n = len(data)

    def lt(i: int, j: int) -> bool:
        return less(data[i], data[j])

    def swap(i: int, j: int) -> None:
        data[i], data[j] = data[j], data[i]

    def insertion(a: int, b: int) -> None:
        for i in range(a + 1, b):
            j = i
            while j > a and lt(j, j - 1):
                swap(j, j - 1)
                j -= 1

    def swap_range(a: int, b: int, count: int) -> None:
        for i in range(count):
            swap(a + i, b + i)

    def rotate(a: int, m: int, b: int) -> None:
        i, j = m - a, b - m
        while i != j:
            if i > j:
                swap_range(m - i, m, j)
                i -= j
            else:
                swap_range(m - i, m + j - i, i)
                j -= i
        swap_range(m - i, m, i)

    def sym_merge(a: int, m: int, b: int) -> None:
        if m - a == 1:
            i, j = m, b
            while i < j:
                h = (i + j) >> 1
                if lt(h, a):
                    i = h + 1
                else:
                    j = h
            for k in range(a, i - 1):
                swap(k, k + 1)
            return
        if b - m == 1:
            i, j = a, m
            while i < j:
                h = (i + j) >> 1
                if not lt(m, h):
                    i = h + 1
                else:
                    j = h
            for k in range(m, i, -1):
                swap(k, k - 1)
            return
        mid = (a + b) >> 1
        nn = mid + m
        if m > mid:
            start, r = nn - b, mid
        else:
            start, r = a, m
        p = nn - 1
        while start < r:
            c = (start + r) >> 1
            if not lt(p - c, c):
                start = c + 1
            else:
                r = c
        end = nn - start
        if start < m < end:
            rotate(start, m, end)
        if a < start < mid:
            sym_merge(a, start, mid)
        if mid < end < b:
            sym_merge(mid, end, b)

    block = 20
    a, b = 0, block
    while b <= n:
        insertion(a, b)
        a, b = b, b + block
    insertion(a, n)
    while block < n:
        a, b = 0, 2 * block
        while b <= n:
            sym_merge(a, a + block, b)
            a, b = b, b + 2 * block
        m = a + block
        if m < n:
            sym_merge(a, m, n)
        block *= 2
    return data

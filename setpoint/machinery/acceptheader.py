"""An HTTP Accept header's clauses as github.com/munnerz/goautoneg (a7dc8b61c822, the version
kube-apiserver 1.32 vendors) parses and orders them: the apiserver's content negotiation
(endpoints/handlers/negotiation) and kube-openapi's handlers both take them in this order."""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from fractions import Fraction

from .gosort import go_sort


@dataclass(frozen=True, slots=True)
class AcceptClause:
    """One clause of an Accept header as github.com/munnerz/goautoneg (a7dc8b61c822, the
    version kube-apiserver 1.32 vendors) parses it: type, subtype, q and the other params."""
    type: str
    subtype: str
    q: float
    params: tuple[tuple[str, str], ...]

    def param(self, key: str) -> str:
        for k, v in self.params:
            if k == key:
                return v
        return ""

    def has(self, key: str) -> bool:
        return any(k == key for k, _ in self.params)


def _go_float32(text: str) -> float:
    """strconv.ParseFloat(text, 32) with its error dropped: 0 for what is no number (spaces
    around it, non-ASCII digits, a sign before NaN, a hex mantissa without its "p" exponent
    included), ±Inf beyond float32's range, else the value rounded to float32. (Underscores,
    which Go allows after a base prefix only, are refused everywhere.)"""
    if text != text.strip() or "_" in text or not text.isascii():
        return 0.0
    unsigned = text.lstrip("+-")
    if len(text) - len(unsigned) > 1 or (unsigned.lower() == "nan" and unsigned != text):
        return 0.0
    exact: Fraction | None
    try:
        if unsigned[:2].lower() == "0x":
            if "p" not in unsigned.lower():
                return 0.0
            value = float.fromhex(text)
            exact = Fraction(value) if len(text) < 16 else _hex_fraction(text)
        else:
            value = float(text)
            exact = None if not math.isfinite(value) else Fraction(text)
    except (ValueError, ZeroDivisionError):
        return 0.0
    try:
        return _nearest_float32(value, exact)
    except OverflowError:
        return math.copysign(math.inf, value)


def _float32(value: float) -> float:
    return float(struct.unpack("f", struct.pack("f", value))[0])


def _float32_beside(value: float, toward: float) -> float:
    """The float32 next to ``value`` (a float32) in the direction of ``toward``."""
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    up = (toward > value) == (value >= 0 and not (value == 0 and toward < 0))
    if value == 0:
        return _float32(math.copysign(1e-45, toward))
    return float(struct.unpack("<f", struct.pack("<I", bits + (1 if up else -1)))[0])


def _nearest_float32(value: float, exact: Fraction | None) -> float:
    """The float32 nearest the number ``exact`` (ties to even), as strconv.ParseFloat(s, 32)
    rounds the decimal text once. ``value`` is ``exact`` rounded to float64 first, and
    rounding that again to float32 is wrong only where it fell on the midpoint of two
    float32s while ``exact`` was not on it: the side ``exact`` lies on decides."""
    rounded = _float32(value)
    if exact is None or rounded == value or math.isinf(rounded):
        return rounded
    other = _float32_beside(rounded, value)
    if Fraction(value) * 2 != Fraction(rounded) + Fraction(other) or exact == Fraction(value):
        return rounded  # not a midpoint, or a true tie (ties to even, as pack rounds)
    return rounded if (exact > Fraction(value)) == (rounded > value) else other


def _hex_fraction(text: str) -> Fraction:
    """The exact value of a hexadecimal float text ("0x1.8p-3")."""
    sign = -1 if text.startswith("-") else 1
    mantissa, _, exponent = text.lstrip("+-")[2:].lower().partition("p")
    whole, _, fraction = mantissa.partition(".")
    digits = int(whole + fraction or "0", 16)
    return sign * Fraction(digits) * Fraction(2) ** (int(exponent) - 4 * len(fraction))


_Keyed = tuple[float, bool, bool, AcceptClause]


def _less(a: _Keyed, b: _Keyed) -> bool:
    """goautoneg's acceptSlice.Less over (q, type is not "*", subtype is not "*", clause):
    higher q first, then a concrete type before "*", then a concrete subtype before "*"
    (not a strict order: the sort below is what decides)."""
    return a[0] > b[0] or (a[1] and not b[1]) or (a[2] and not b[2])


def _clause(part: str) -> AcceptClause | None:
    """One comma-separated part as ParseAccept reads it (``str.partition`` is goautoneg's
    nextSplitElement); None when it is dropped."""
    media_range, _, raw_params = part.strip(" ").partition(";")
    ctype, _, rest = media_range.partition("/")
    ctype = ctype.strip(" ")
    if not rest:  # "type", "type/": only "*" (and "*/") stand for */*
        if ctype != "*":
            return None
        subtype = "*"
    else:
        subtype, _, rest = rest.partition("/")
        if rest:  # "a/b/c" (but "a/b/" is a/b)
            return None
        subtype = subtype.strip(" ")
    q = 1.0
    params: dict[str, str] = {}
    while raw_params:
        raw, _, raw_params = raw_params.partition(";")
        key, _, rest = raw.partition("=")
        if not rest:  # "k" and "k=" are dropped
            continue
        value, _, extra = rest.partition("=")
        if extra:  # "k=v=w" is dropped ("k=v=" is k=v)
            continue
        key = key.strip(" ")
        if key == "q":
            q = _go_float32(value)
        else:
            params[key] = value.strip(" ")
    return AcceptClause(ctype, subtype, q, tuple(params.items()))


def _keyed(part: str) -> _Keyed | None:
    clause = _clause(part)
    if clause is None:
        return None
    return (clause.q, clause.type != "*", clause.subtype != "*", clause)


def parse_accept(header: str) -> list[AcceptClause]:
    """goautoneg.ParseAccept: the clauses, split at "," and ";" and trimmed of spaces only; a
    media range that is neither "type/subtype" nor "*" is dropped; "q" (ParseFloat of the raw
    value) is taken out of the params. The clauses are then sorted with Go's ``sort.Sort``
    (``gosort.go_sort``: insertion sort up to 12 clauses, pdqsort beyond), reproduced step
    for step since Less is no strict weak order and another sort would order some headers
    differently. Linear parsing and O(n log n) comparisons: a header as large as the server
    takes (1 MiB) costs no quadratic work."""
    parts = header.split(",")
    parsed = {part: _keyed(part) for part in set(parts)}  # a part repeated is parsed once
    keyed = [k for k in map(parsed.__getitem__, parts) if k is not None]
    go_sort(keyed, _less)
    return [k[3] for k in keyed]

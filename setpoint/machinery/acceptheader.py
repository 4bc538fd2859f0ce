"""An HTTP Accept header's clauses as github.com/munnerz/goautoneg (a7dc8b61c822, the version
kube-apiserver 1.32 vendors) parses and orders them: the apiserver's content negotiation
(endpoints/handlers/negotiation) and kube-openapi's handlers both take them in this order."""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

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
    try:
        if unsigned[:2].lower() == "0x":
            if "p" not in unsigned.lower():
                return 0.0
            value = float.fromhex(text)
        else:
            value = float(text)
    except ValueError:
        return 0.0
    try:
        return float(struct.unpack("f", struct.pack("f", value))[0])
    except OverflowError:
        return math.copysign(math.inf, value)


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

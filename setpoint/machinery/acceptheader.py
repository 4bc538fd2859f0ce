"""An HTTP Accept header's clauses as github.com/munnerz/goautoneg (a7dc8b61c822, the version
kube-apiserver 1.32 vendors) parses and orders them: the apiserver's content negotiation
(endpoints/handlers/negotiation) and kube-openapi's handlers both take them in this order."""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass


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
    around it included), ±Inf beyond float32's range, else the value rounded to float32."""
    if text != text.strip() or "_" in text:
        return 0.0
    try:
        value = float(text)
    except ValueError:
        return 0.0
    try:
        return float(struct.unpack("f", struct.pack("f", value))[0])
    except OverflowError:
        return math.copysign(math.inf, value)


def _less(a: AcceptClause, b: AcceptClause) -> bool:
    """goautoneg's accept_slice.Less: higher q first, then a concrete type before "*", then
    a concrete subtype before "*" (not a strict order: the sort below is what decides)."""
    if a.q > b.q:
        return True
    if a.type != "*" and b.type == "*":
        return True
    return a.subtype != "*" and b.subtype == "*"


def parse_accept(header: str) -> list[AcceptClause]:
    """goautoneg.ParseAccept: the clauses, split at "," and ";" and trimmed of spaces only; a
    media range that is neither "type/subtype" nor "*" is dropped; "q" (ParseFloat of the raw
    value) is taken out of the params. The clauses are then sorted with sort.Sort, which for
    up to 12 elements (every real Accept header) is Go's insertion sort: reproduced here
    step for step, since Less is no strict weak order and another sort would order some
    headers differently."""
    clauses: list[AcceptClause] = []
    for part in header.split(","):
        part = part.strip(" ")
        media_range, *raw_params = part.split(";")
        sp = media_range.split("/")
        ctype = sp[0].strip(" ")
        if len(sp) == 1 and ctype == "*":
            subtype = "*"
        elif len(sp) == 2:
            subtype = sp[1].strip(" ")
        else:
            continue
        q = 1.0
        params: dict[str, str] = {}
        for raw in raw_params:
            if "=" not in raw:
                continue
            key, value = raw.split("=", 1)
            key = key.strip(" ")
            if key == "q":
                q = _go_float32(value)
            else:
                params[key] = value.strip(" ")
        clauses.append(AcceptClause(ctype, subtype, q, tuple(params.items())))
    for i in range(1, len(clauses)):  # sort.insertionSort
        j = i
        while j > 0 and _less(clauses[j], clauses[j - 1]):
            clauses[j], clauses[j - 1] = clauses[j - 1], clauses[j]
            j -= 1
    return clauses

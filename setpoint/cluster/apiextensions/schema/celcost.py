"""Sizes and costs of cel-go's static cost estimate of a rule (checker/cost.go), with
the Kubernetes estimator's call costs (apiserver pkg/cel/library/cost.go) and value sizes
bounded by the schema or by the 3 MiB request (pkg/cel/common/schemas.go)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

MAX_REQUEST_SIZE_BYTES = 3 * 1024 * 1024


@dataclass
class T:
    """The checked type of an expression with its estimated size and cost."""

    kind: str  # bool int uint double string bytes list map object dyn null timestamp ...
    schema: Mapping[str, Any] | None = None
    elem: T | None = None
    size: float = 1.0
    cost: float = 0.0
    fields: dict[str, T] = field(default_factory=dict)
    # a free type parameter (optional.none()'s): cel-go binds it to what it is joined with
    free: bool = False


def min_size_json(s: Mapping[str, Any] | None) -> int:
    """The smallest JSON text a value of this schema can take (``estimateMinSizeJSON``)."""
    if not s:
        return 1
    t = s.get("type")
    if t == "boolean":
        return 4
    if t in ("number", "integer"):
        return 1
    if t in ("string", "array"):
        return 2
    if t == "object":
        size = 2
        props = s.get("properties") or {}
        for name in s.get("required") or []:
            prop = props.get(name)
            if isinstance(prop, Mapping) and prop.get("default") is None:
                size += len(name) + min_size_json(prop) + 4
        return size
    return 1


def max_elements(s: Mapping[str, Any]) -> float:
    """The bound of a list's items or a map's entries."""
    if s.get("type") == "array":
        if isinstance(s.get("maxItems"), int):
            return float(s["maxItems"])
        items = s.get("items") if isinstance(s.get("items"), Mapping) else None
        return float((MAX_REQUEST_SIZE_BYTES - 2) // (min_size_json(items) + 1))
    if isinstance(s.get("maxProperties"), int):
        return float(s["maxProperties"])
    ap = s.get("additionalProperties")
    value = ap if isinstance(ap, Mapping) else None
    return float((MAX_REQUEST_SIZE_BYTES - 2) // (min_size_json(value) + 5))


def max_string_length(s: Mapping[str, Any]) -> float:
    if isinstance(s.get("maxLength"), int):
        return float(s["maxLength"])
    fmt = s.get("format")
    if fmt in ("date-time", "datetime"):
        return 35.0
    if fmt == "date":
        return 12.0
    if fmt == "duration":
        return 70.0
    return float(MAX_REQUEST_SIZE_BYTES - 2)


def literal_length(text: str) -> int:
    """The length of a string or bytes literal's value, not of its quoted spelling."""
    body = text.lstrip("rRbB")
    quote = 3 if body[:3] in ('"""', "'''") else 1
    return max(0, len(body) - 2 * quote)


def method_cost(name: str, target: T, args: list[T]) -> float:
    """What a receiver-style call itself costs: cel-go checker/cost.go functionCost with the
    Kubernetes CostEstimator.EstimateCallCost (apiserver pkg/cel/library/cost.go); 1 for
    the O(1) rest."""
    tenth = 0.1 * sized(target)
    if target.kind in ("string", "dyn"):
        if name in ("startsWith", "endsWith") and args:
            return math.ceil(0.1 * sized(args[0]))
        if name == "contains" and args:
            return math.ceil(tenth) * math.ceil(0.1 * sized(args[0]))
        if name in ("matches", "find", "findAll") and args:
            return math.ceil(0.1 * (sized(target) + 1)) * math.ceil(0.25 * sized(args[0]))
        if name in ("lowerAscii", "upperAscii", "substring", "trim", "indexOf",
                    "lastIndexOf"):
            return math.ceil(tenth)
        if name in ("replace", "split"):
            return math.ceil(2 * tenth)
    if target.kind == "list" and name in ("isSorted", "sum", "max", "min", "indexOf",
                                          "lastIndexOf"):
        elem = target.elem or T("dyn")
        per = 1 + (math.ceil(0.1 * elem.size) if elem.kind in ("string", "bytes") else 0)
        return target.size * per
    if target.kind == "list" and name == "join":
        elem = target.elem or T("dyn")
        return math.ceil(0.1 * target.size * sized(elem))
    return 1


def sized(t: T) -> float:
    """cel-go sizeEstimate: the size of strings, bytes, lists and maps, 1 for scalars."""
    return t.size if t.kind in ("string", "bytes", "list", "map", "dyn") else 1.0


def comprehension_cost(name: str, target: T, body: float, bodies: int) -> float:
    """A macro's cost: cel-go parser/macro.go's expansion costed by checker/cost.go
    costComprehension, range + init + result + size * (condition + step)."""
    init, result, per_item = {
        "all": (0, 1, 3 + body),  # @not_strictly_false(r); r && p
        "exists": (0, 1, 4 + body),  # @not_strictly_false(!r); r || p
        "exists_one": (0, 2, body + 2),  # p ? r + 1 : r; r == 1
        "existsOne": (0, 2, body + 2),
        # ext/comprehensions.go: transformList appends like map; transformMap(Entry)
        # inserts into a map created empty (cel.@mapInsert(r, k, e))
        "transformList": (10, 1, (12 if bodies == 1 else 13) + body),
        "transformMap": (30, 1, (3 if bodies == 1 else 4) + body),
        "transformMapEntry": (30, 1, (3 if bodies == 1 else 4) + body),
        "map": (10, 1, (12 if bodies == 1 else 13) + body),  # r + [e], or p ? r + [e] : r
        "filter": (10, 1, 13 + body),  # p ? r + [x] : r
    }[name]
    return target.cost + init + result + target.size * per_item

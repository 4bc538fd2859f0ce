"""ResourceList arithmetic: k8s.io/apiserver/pkg/quota/v1/resources.go.

A ResourceList is a mapping of resource name to :class:`Quantity`; quotas store them as JSON
strings. Adding keeps the first operand's format unless it is zero (``Quantity.Add``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from setpoint.machinery.quantity import Quantity, QuantityError

ResourceList = dict[str, Quantity]


def parse(raw: Mapping[str, Any] | None) -> ResourceList:
    """A ResourceList from JSON (values that are not quantities are left out: validation
    refuses them before they are stored)."""
    out: ResourceList = {}
    for name, value in (raw or {}).items():
        try:
            out[name] = Quantity.from_json(value)
        except QuantityError:
            continue
    return out


def to_json(resources: Mapping[str, Quantity]) -> dict[str, str]:
    return {name: str(q) for name, q in sorted(resources.items())}


def add(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> ResourceList:
    """``quota.Add``: every key of either, summed where both have it."""
    out = dict(a)
    for name, q in b.items():
        out[name] = out[name] + q if name in out else q
    return out


def subtract_non_negative(a: Mapping[str, Quantity],
                          b: Mapping[str, Quantity]) -> ResourceList:
    """``quota.SubtractWithNonNegativeResult``: a - b, floored at zero, keys of a and b."""
    out: ResourceList = {}
    for name, q in a.items():
        diff = q - b[name] if name in b else q
        out[name] = diff if diff.sign() > 0 else Quantity(0, q.format)
    for name, q in b.items():
        if name not in out:
            out[name] = Quantity(0, q.format)
    return out


def mask(resources: Mapping[str, Quantity], names: Iterable[str]) -> ResourceList:
    """``quota.Mask``: only the named resources."""
    keep = set(names)
    return {name: q for name, q in resources.items() if name in keep}


def remove_zeros(resources: Mapping[str, Quantity]) -> ResourceList:
    return {name: q for name, q in resources.items() if not q.is_zero()}


def negative(resources: Mapping[str, Quantity]) -> list[str]:
    """``quota.IsNegative``: the names whose value is below zero."""
    return [name for name, q in resources.items() if q.sign() < 0]


def exceeded(used: Mapping[str, Quantity], hard: Mapping[str, Quantity]) -> list[str]:
    """``quota.LessThanOrEqual``'s second answer: names in both whose use is above hard."""
    return [name for name, q in used.items() if name in hard and q.cmp(hard[name]) > 0]


def equals(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> bool:
    """``quota.Equals``: the same names with equal values."""
    return a.keys() == b.keys() and all(a[name] == b[name] for name in a)


def pretty_print(resources: Mapping[str, Quantity]) -> str:
    """``prettyPrint`` of the admission controller: ``name=value`` sorted, comma-joined."""
    return ",".join(f"{name}={resources[name]}" for name in sorted(resources))

"""Which CEL rule failures of an update are ratcheted (CRDValidationRatcheting, on in 1.32).

apiserver v0.32 pkg/cel/common/equality.go ``CorrelatedObject`` pairs each node of the new
object with its old value: map fields by name (any map, atomic or not), list items only in
``x-kubernetes-list-type: map`` lists (by their keys); set and atomic list items have no old
value. apiextensions-apiserver pkg/apiserver/schema/cel/validation.go ``ratchetingOptions``
keeps the current node's correlation and the nearest correlated ancestor's:
``shouldRatchetError`` asks the current node, or, where it has no old value, that ancestor,
whether it equals its old value (``CachedDeepEqual``, in which map-list items compare by key
whatever their order). On create nothing is correlated and nothing ratchets.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .openapi import MISSING


@dataclass(frozen=True)
class _Node:
    """A correlated pair: the new value, its old value and their schema."""

    value: Any
    old: Any
    schema: Mapping[str, Any]

    def key(self, k: str) -> _Node | None:
        """``CorrelatedObject.Key``: both maps hold ``k`` and the schema describes it."""
        if not (isinstance(self.value, dict) and isinstance(self.old, dict)):
            return None
        if k not in self.value or k not in self.old:
            return None
        sub = (self.schema.get("properties") or {}).get(k)
        if sub is None:
            additional = self.schema.get("additionalProperties")
            sub = additional if isinstance(additional, Mapping) else None
        if not isinstance(sub, Mapping):
            return None
        return _Node(self.value[k], self.old[k], sub)

    def index(self, i: int) -> _Node | None:
        """``CorrelatedObject.Index``: only map-list items, matched by their keys."""
        items = self.schema.get("items")
        if not (isinstance(self.value, list) and isinstance(self.old, list)
                and isinstance(items, Mapping) and i < len(self.value)):
            return None
        old = _map_list_match(self.schema, self.old, self.value[i])
        return None if old is MISSING else _Node(self.value[i], old, items)

    def equal(self) -> bool:
        """``CorrelatedObject.CachedDeepEqual``."""
        new, old = self.value, self.old
        if isinstance(new, list) and isinstance(old, list):
            if len(new) != len(old):
                return False
            if not _is_map_list(self.schema):
                return bool(new == old)
            for i in range(len(new)):
                child = self.index(i)
                if child is None or not child.equal():
                    return False
            return True
        if isinstance(new, dict) and isinstance(old, dict):
            if len(new) != len(old):
                return False
            for k in new:
                child = self.key(k)
                if child is None or not child.equal():
                    return False
            return True
        return bool(new == old) and type(new) is type(old)


def _is_map_list(schema: Mapping[str, Any]) -> bool:
    return schema.get("x-kubernetes-list-type") == "map" and bool(
        schema.get("x-kubernetes-list-map-keys"))


def _map_list_match(schema: Mapping[str, Any], old: list[Any], item: Any) -> Any:
    if not _is_map_list(schema) or not isinstance(item, dict):
        return MISSING
    keys = list(schema.get("x-kubernetes-list-map-keys") or [])
    for o in old:
        if isinstance(o, dict) and all(o.get(k) == item.get(k) for k in keys):
            return o
    return MISSING


@dataclass(frozen=True)
class Correlation:
    """``ratchetingOptions``: the current node's correlation and the nearest correlated
    ancestor's (None where there is none)."""

    current: _Node | None = None
    nearest_parent: _Node | None = None

    @staticmethod
    def root(schema: Mapping[str, Any], obj: Any, old: Any) -> Correlation:
        """The whole object against the stored one (none on create)."""
        return Correlation() if old is MISSING else Correlation(_Node(obj, old, schema))

    def key(self, k: str) -> Correlation:
        if self.current is None:
            return self
        return Correlation(self.current.key(k), self.current)

    def index(self, i: int) -> Correlation:
        if self.current is None:
            return self
        return Correlation(self.current.index(i), self.current)

    def should_ratchet(self) -> bool:
        node = self.current if self.current is not None else self.nearest_parent
        return node is not None and node.equal()

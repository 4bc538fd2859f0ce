"""Pruning of unknown fields (``apiextensions-apiserver/pkg/apiserver/schema/pruning``).

Fields the structural schema does not specify are dropped, except below
``x-kubernetes-preserve-unknown-fields`` and for ``apiVersion``/``kind``/``metadata`` of the
resource root and of embedded resources. ``metadata`` keeps only ``ObjectMeta`` fields.
The dropped paths are what ``fieldValidation=Warn|Strict`` report as ``unknown field "..."``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

OBJECT_META_FIELDS = frozenset({
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
    "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
    "annotations", "ownerReferences", "finalizers", "managedFields",
})
_META_FIELDS = ("apiVersion", "kind", "metadata")


def _child(path: str, k: str) -> str:
    return f"{path}.{k}" if path else k


def prune(obj: Any, schema: Mapping[str, Any] | None, is_resource_root: bool = True
          ) -> list[str]:
    """Drop unknown fields of ``obj`` in place; return the dropped paths in the apiserver's
    order: the root's ``metadata`` first (its schema coercer reads ObjectMeta before pruning,
    ``customresource_handler.go``), then the pruned paths sorted (``pruning/algorithm.go``),
    then the ``metadata`` of embedded resources (``objectmeta/coerce.go`` runs last)."""
    pruned: list[str] = []
    if schema is not None and is_resource_root:
        schema = {**schema, "x-kubernetes-embedded-resource": True}
    _prune(obj, schema, "", pruned)
    root_meta = sorted(p for p in pruned if p.startswith(_META_MARK + "metadata."))
    embedded_meta = sorted(p for p in pruned if p.startswith(_META_MARK)
                           and p not in root_meta)
    rest = sorted(p for p in pruned if not p.startswith(_META_MARK))
    return [p.removeprefix(_META_MARK) for p in root_meta + rest + embedded_meta]


# marks a path found by the ObjectMeta coercion rather than by pruning proper
_META_MARK = "\0"


def _coerce_metadata(meta: Any, path: str, pruned: list[str]) -> None:
    if not isinstance(meta, dict):
        return
    for k in list(meta):
        if k not in OBJECT_META_FIELDS:
            pruned.append(_META_MARK + _child(path, k))
            del meta[k]


def _prune(x: Any, s: Mapping[str, Any] | None, path: str, pruned: list[str]) -> None:
    if s is not None and s.get("x-kubernetes-preserve-unknown-fields"):
        _skip_prune(x, s, path, pruned)
        return
    if isinstance(x, dict):
        if s is None:
            for k in list(x):
                pruned.append(_child(path, k))
                del x[k]
            return
        props = s.get("properties") or {}
        additional = s.get("additionalProperties")
        embedded = bool(s.get("x-kubernetes-embedded-resource"))
        for k in list(x):
            v = x[k]
            if embedded and _keep_meta(k, v, path, pruned):
                continue
            if k in props:
                _prune(v, props[k], _child(path, k), pruned)
            elif isinstance(additional, Mapping):
                _prune(v, additional, _child(path, k), pruned)
            elif additional is True:
                continue
            else:
                pruned.append(_child(path, k))
                del x[k]
    elif isinstance(x, list):
        items = s.get("items") if s is not None else None
        for i, v in enumerate(x):
            _prune(v, items if isinstance(items, Mapping) else None, f"{path}[{i}]", pruned)


def _keep_meta(k: str, v: Any, path: str, pruned: list[str]) -> bool:
    """apiVersion/kind (strings) and metadata (an object) of a resource are never pruned."""
    if k in ("apiVersion", "kind"):
        return isinstance(v, str)
    if k == "metadata" and isinstance(v, dict):
        _coerce_metadata(v, _child(path, k), pruned)
        return True
    return False


def _skip_prune(x: Any, s: Mapping[str, Any], path: str, pruned: list[str]) -> None:
    """Under preserve-unknown-fields only the specified parts are pruned further."""
    if isinstance(x, dict):
        props = s.get("properties") or {}
        additional = s.get("additionalProperties")
        embedded = bool(s.get("x-kubernetes-embedded-resource"))
        for k in list(x):
            if embedded and k in _META_FIELDS:
                if k == "metadata":
                    _coerce_metadata(x[k], _child(path, k), pruned)
                continue
            if k in props:
                _prune(x[k], props[k], _child(path, k), pruned)
            elif isinstance(additional, Mapping):
                _prune(x[k], additional, _child(path, k), pruned)
    elif isinstance(x, list):
        items = s.get("items")
        if isinstance(items, Mapping):
            for i, v in enumerate(x):
                _skip_prune(v, items, f"{path}[{i}]", pruned)

"""The relative field paths of x-kubernetes-validations ``fieldPath`` (``cel.ValidFieldPath``)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_TOKEN = re.compile(r"\.([A-Za-z_][A-Za-z0-9_-]*)|\['((?:[^'\\]|\\.)*)'\]|\[(\d+)\]")


def valid_field_path(path: str, schema: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]] | None:
    """The normalized path (``a.b[c]``) and the schema it reaches, or None when invalid.

    Supported: ``.field``, ``['field']`` (also map keys) and ``[index]`` of lists.
    """
    pos = 0
    out = ""
    node: Mapping[str, Any] = schema
    if not path:
        return None
    while pos < len(path):
        m = _TOKEN.match(path, pos)
        if m is None:
            return None
        pos = m.end()
        name = m.group(1) if m.group(1) is not None else m.group(2)
        if name is not None:
            props = node.get("properties") or {}
            if name in props:
                node = props[name]
                out = f"{out}.{name}" if out else name
            elif isinstance(node.get("additionalProperties"), Mapping):
                node = node["additionalProperties"]
                out = f"{out}[{name}]"
            else:
                return None
        else:
            items = node.get("items")
            if node.get("type") != "array" or not isinstance(items, Mapping):
                return None
            node = items
            out = f"{out}[{m.group(3)}]"
    return out, node


_SELECTABLE_TOKEN = re.compile(r"[.\[\]]|[^.\[\]]+")


def selectable_field_path(json_path: str, schema: Mapping[str, Any]
                          ) -> tuple[str, Mapping[str, Any] | None, str]:
    """``cel.ValidFieldPath`` with ``WithFieldPathAllowArrayNotation(false)``, as CRD
    validation reads a version's selectableFields (apiextensions-apiserver pkg/apiserver/
    schema/cel/validation.go): the ``field.Path`` string (``spec.a``, a map's key as
    ``spec.m[k]``), the schema reached, and the error's words ("" when valid)."""
    out = ""
    node: Mapping[str, Any] | None = schema
    tokens = iter(_SELECTABLE_TOKEN.findall(json_path))
    for tok in tokens:
        if tok == "[":
            return "", None, "array notation is not allowed"
        if tok != ".":
            return "", None, f"expected [ or . but got: {tok}"
        name = next(tokens, None)
        if name is None:
            return "", None, "unexpected end of JSON path"
        props = (node or {}).get("properties")
        extra = (node or {}).get("additionalProperties")
        if props is not None:
            if name not in props:
                return "", None, "does not refer to a valid field"
            node = props[name]
            out = f"{out}.{name}" if out else name
        elif extra is not None:
            node = extra if isinstance(extra, Mapping) else None
            out = f"{out}[{name}]"
        else:
            return "", None, "does not refer to a valid field"
    return out, node, ""

"""The CEL type of a structural schema node, as the Kubernetes environment declares it
(apiserver pkg/cel/common/schemas.go SchemaDeclType): objects with properties are objects
(the root and embedded resources gain apiVersion, kind and metadata.name/generateName),
additionalProperties make maps, formats date-time/date, duration and byte make timestamps,
durations and bytes; int-or-string and schemaless nodes are dyn. Sizes bound cost estimates.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .celcost import T, max_elements, max_string_length


def type_of_schema(s: Mapping[str, Any] | None, root: bool = False) -> T:
    """The CEL type the Kubernetes environment gives values of schema ``s``."""
    if not s or s.get("x-kubernetes-int-or-string"):
        return T("dyn", s)
    t = s.get("type")
    if t == "object":
        props = s.get("properties") or {}
        if isinstance(s.get("additionalProperties"), Mapping) and not props:
            return T("map", s, type_of_schema(s["additionalProperties"]), max_elements(s))
        if s.get("x-kubernetes-preserve-unknown-fields") and not props:
            return T("dyn", s)
        fields = {k: type_of_schema(v) for k, v in props.items() if isinstance(v, Mapping)}
        if root or s.get("x-kubernetes-embedded-resource"):
            fields.setdefault("apiVersion", T("string", {"type": "string"}, size=256))
            fields.setdefault("kind", T("string", {"type": "string"}, size=256))
            fields["metadata"] = T("object", {"type": "object"}, fields={
                "name": T("string", size=253), "generateName": T("string", size=253)})
        return T("object", s, fields=fields,
                 size=float(len(fields)) if not s.get("x-kubernetes-preserve-unknown-fields")
                 else max_elements(s))
    if t == "array":
        items = s.get("items") if isinstance(s.get("items"), Mapping) else None
        return T("list", s, type_of_schema(items), max_elements(s))
    if t == "string":
        fmt = s.get("format")
        if fmt in ("date-time", "datetime", "date"):
            return T("timestamp", s)
        if fmt == "duration":
            return T("duration", s)
        if fmt == "byte":
            return T("bytes", s, size=max_string_length(s))
        return T("string", s, size=max_string_length(s))
    return T({"integer": "int", "number": "double", "boolean": "bool"}.get(str(t), "dyn"), s)



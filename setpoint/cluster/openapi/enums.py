"""The ``enum`` lists and "Possible enum values" text of built-in properties.

kube-apiserver 1.32 serves what openapi-gen generated (pkg/generated/openapi/
zz_generated.openapi.go) with the ``OpenAPIEnums`` feature gate on (beta, the default;
k8s.io/apiserver pkg/util/openapi/enablement.go prunes them only when it is off). A member
whose Go type is a string type marked ``// +enum`` gets (k8s.io/kube-openapi
pkg/generators/enum.go and openapi.go):

- ``enum``: the type's constants' values, sorted as Go-quoted strings;
- its description followed by a paragraph ``Possible enum values:`` and one line per value,
  `` - `"Value"` <the constant's doc comment, its name trimmed off, whitespace collapsed>``,
  the lines sorted.

The definitions this server starts from were rendered with the gate off (as the spec files
checked into kubernetes/kubernetes are), so ``enums.json`` (written by tools/openapi_enums.py
from k8s.io/api v0.32.0) holds what the gate adds, and ``with_enums`` puts it back into a
built-in definition, in both the v3 and the v2 documents.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from setpoint.machinery.gofmt import go_quote
from setpoint.machinery.objects import Obj

_DATA = Path(__file__).with_name("enums.json")
_HEADER = "Possible enum values:"
_WHITESPACE = re.compile(r"\s+")


class _EnumTable:
    __slots__ = ("fields", "types")

    def __init__(self, data: Mapping[str, Any]) -> None:
        # type -> [[value, constant name, doc comment], ...]
        self.types: dict[str, list[list[str]]] = data["types"]
        # definition -> {property: type}
        self.fields: dict[str, dict[str, str]] = data["fields"]


@functools.cache
def _table() -> _EnumTable:
    return _EnumTable(json.loads(_DATA.read_bytes()))


def _value_line(value: str, const_name: str, comment: str) -> str:
    """enum.go ``enumValue.Description``: the comment without the constant's leading name."""
    text = comment.strip()
    if text.startswith(const_name):
        text = text[len(const_name):]
    text = _WHITESPACE.sub(" ", text.strip())
    # openapi.go's generateDescription trims each line's trailing spaces
    return f" - `{go_quote(value)}` {text}".rstrip(" ")


@functools.cache
def enum_of(go_type: str) -> tuple[list[str], str]:
    """The ``enum`` list of ``go_type`` and the paragraph appended to a description."""
    entries = _table().types.get(go_type) or []
    values = [v for _, v in sorted((go_quote(e[0]), e[0]) for e in entries)]
    lines = sorted(_value_line(*e) for e in entries)
    return values, "\n".join([_HEADER, *lines])


def with_enums(definition: str, schema: Obj) -> Obj:
    """``schema`` (the rendered definition ``definition``) with its enum properties filled in."""
    fields = _table().fields.get(definition)
    props = schema.get("properties")
    if not fields or not isinstance(props, dict):
        return schema
    for prop, go_type in fields.items():
        node = props.get(prop)
        if not isinstance(node, dict):
            continue
        values, paragraph = enum_of(go_type)
        if not values:
            continue
        described = dict(node)
        base = str(node.get("description") or "").rstrip("\n")
        # generateDescription: an empty line starts the new paragraph; a leading one is trimmed
        described["description"] = f"{base}\n\n{paragraph}" if base else paragraph
        described["enum"] = list(values)
        props[prop] = dict(sorted(described.items()))
    return schema

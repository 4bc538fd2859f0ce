"""The ``default`` values of built-in properties in the /openapi/v3 documents.

openapi-gen (k8s.io/kube-openapi pkg/generators/openapi.go ``generateDefault``) gives a member
the value of its ``+default=`` tag, else the zero value it cannot be without (``{}`` for a
struct, ``""``/``0``/``false`` for a builtin that is not ``omitempty``), and a slice's items or a
map's values the same. kube-apiserver 1.32 serves them in OpenAPI v3 only; a ``$ref`` with a
``default`` beside it is spelled ``{"allOf": [{"$ref": ...}], "default": ...}``. The
kubernetes-validate definitions this server starts from have none of them, so the registry's
table of Go members (``registry/gomembers.py``, which fills the same members into the objects
written) holds them and ``with_defaults`` puts them back.
"""

from __future__ import annotations

from typing import Any

from setpoint.cluster.registry.gomembers import member_defaults
from setpoint.machinery.objects import Obj


def _defaulted(node: Any, entry: dict[str, Any]) -> Any:
    """``node`` with the ``default`` of ``entry`` and those of its items or values, nested."""
    if not isinstance(node, dict):
        return node
    out = dict(node)
    for key in ("items", "additionalProperties"):
        if key in entry and isinstance(out.get(key), dict):
            out[key] = _defaulted(out[key], entry[key])
    if "default" not in entry:
        return out
    ref = out.pop("$ref", None)
    if ref is not None:
        out["allOf"] = [{"$ref": ref}]
    out["default"] = entry["default"]
    return dict(sorted(out.items()))


def with_defaults(definition: str, schema: Obj) -> Obj:
    """``schema`` (the v3 form of ``definition``) with openapi-gen's defaults filled in."""
    fields = member_defaults().get(definition)
    props = schema.get("properties")
    if not fields or not isinstance(props, dict):
        return schema
    for prop, entry in fields.items():
        if prop in props:
            props[prop] = _defaulted(props[prop], entry)
    return schema

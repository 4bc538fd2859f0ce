"""The members a built-in object always has once Go has decoded and encoded it.

kube-apiserver decodes a body into the kind's Go struct and encodes the struct it stores, so
what JSON lacks comes back as Go's ``encoding/json`` writes it: a non-pointer struct member
always (``omitempty`` never omits a struct: a Deployment's ``status: {}``, an EndpointSlice
endpoint's ``conditions: {}``), a builtin member that is not ``omitempty`` as its zero value
(a StatefulSet's ``serviceName: ""``, a VolumeAttachment's ``attached: false``), each inside
the structs it belongs to. defaulter-gen's ``+default=`` tags fill the same members with their
tag's value (a ServicePort's ``protocol: TCP``).

openapi-gen records exactly these as the OpenAPI v3 ``default`` of each member
(k8s.io/kube-openapi pkg/generators/openapi.go ``mustEnforceDefault``), so one table,
``gomembers.json``, written by tools/openapi_defaults.py from the Go sources of k8s.io/api
v0.32.0 and its siblings, serves both the v3 documents and the writes here.
"""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path
from typing import Any, NamedTuple

from setpoint.machinery.objects import Obj
from setpoint.machinery.schema import definitions

_DATA = Path(__file__).with_name("gomembers.json")
_REF_PREFIXES = ("#/$defs/", "#/definitions/")
_NO_DEFAULT = object()
_SCALARS: dict[str, tuple[type, ...]] = {"string": (str,), "boolean": (bool,),
                                         "integer": (int,), "number": (int, float)}


@functools.cache
def member_defaults() -> dict[str, dict[str, dict[str, Any]]]:
    """Each definition's members' ``default`` (and its items' or values'), by member name."""
    table: dict[str, dict[str, dict[str, Any]]] = json.loads(_DATA.read_bytes())
    return table


class _Member(NamedTuple):
    name: str
    default: Any  # _NO_DEFAULT: Go writes nothing of its own when it is absent
    child: str | None  # the definition of the value, of each item or of each map value
    shape: str  # "object", "array" or "map"


def _ref(schema: Any) -> str | None:
    if not isinstance(schema, dict):
        return None
    ref = schema.get("$ref")
    if ref is None:
        for part in schema.get("allOf") or ():
            ref = part.get("$ref") if isinstance(part, dict) else None
            if ref:
                break
    if not isinstance(ref, str):
        return None
    for prefix in _REF_PREFIXES:
        if ref.startswith(prefix):
            return ref[len(prefix):]
    return None


def _types(schema: dict[str, Any]) -> set[str]:
    kind = schema.get("type")
    return set(kind) if isinstance(kind, list) else {kind} if isinstance(kind, str) else set()


def _fits(default: Any, schema: dict[str, Any], child: str | None) -> bool:
    """Whether ``default`` is a value of ``schema``: a struct's ``{}`` only for a reference to
    an object (not metav1.Duration, a struct Go writes as a string), a builtin's zero only
    for its own JSON type."""
    if isinstance(default, dict):
        target = definitions().raw.get(child or "")
        return target is not None and "object" in _types(target)
    return any(isinstance(default, py) and not (py is int and isinstance(default, bool))
               for name in _types(schema) for py in _SCALARS.get(name, ()))


@functools.cache
def _plan(definition: str) -> tuple[_Member, ...]:
    """The members of ``definition`` to fill or to descend into, computed once each."""
    _plan_in_progress.add(definition)
    try:
        raw = definitions().raw.get(definition) or {}
        defaults = member_defaults().get(definition, {})
        members: list[_Member] = []
        for name, schema in (raw.get("properties") or {}).items():
            if not isinstance(schema, dict):
                continue
            child, shape = _ref(schema), "object"
            if child is None and isinstance(schema.get("items"), dict):
                child, shape = _ref(schema["items"]), "array"
            elif child is None and isinstance(schema.get("additionalProperties"), dict):
                child, shape = _ref(schema["additionalProperties"]), "map"
            default = (defaults.get(name) or {}).get("default", _NO_DEFAULT)
            if shape != "object" or not _fits(default, schema, child):
                default = _NO_DEFAULT
            if child is not None and not _has_work(child):
                child = None
            if default is not _NO_DEFAULT or child is not None:
                members.append(_Member(name, default, child, shape))
        return tuple(members)
    finally:
        _plan_in_progress.discard(definition)


_plan_in_progress: set[str] = set()


def _has_work(definition: str) -> bool:
    # a definition that (indirectly) holds itself counts as having work: its plan is still
    # being made, and descending into it finds out per object
    return definition in _plan_in_progress or bool(_plan(definition))


def fill(obj: Obj, definition: str) -> None:
    """Give ``obj``, an object of ``definition``, the members Go would write though they are
    absent or null (in place; nested structs, list items and map values included)."""
    for member in _plan(definition):
        value = obj.get(member.name)
        if value is None and member.default is not _NO_DEFAULT:
            value = copy.deepcopy(member.default)
            obj[member.name] = value
        if member.child is None or value is None:
            continue
        if member.shape == "object":
            if isinstance(value, dict):
                fill(value, member.child)
        elif member.shape == "array":
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, dict):
                        fill(item, member.child)
        elif isinstance(value, dict):
            for item in value.values():
                if isinstance(item, dict):
                    fill(item, member.child)


def fill_kind(group: str, version: str, kind: str, obj: Obj) -> None:
    """``fill`` for an object of a built-in kind (nothing for a kind without a definition)."""
    definition = definitions().name_for_kind(group, version, kind)
    if definition is not None:
        fill(obj, definition)


__all__ = ["fill", "fill_kind", "member_defaults"]

"""OpenAPI schemas as a navigable tree.

One ``Schema`` type serves both the built-in kinds (the Kubernetes OpenAPI definitions that
the ``kubernetes-validate`` package ships, resolved lazily through ``$ref``) and custom
resources (a CRD's ``openAPIV3Schema``). Patch, apply, pruning, validation and the OpenAPI
documents all walk the same tree, so the list types, map types and merge keys are read in
one place.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import orjson

Resolver = Callable[[str], "Schema"]

_SCALAR_TYPES = {"string", "integer", "number", "boolean"}


class Schema:
    """A node of an OpenAPI v3 schema; children are resolved on first access."""

    __slots__ = ("_additional", "_element", "_items", "_properties", "_resolve", "_shared",
                 "_type", "raw", "ref")

    def __init__(self, raw: Mapping[str, Any], resolve: Resolver | None = None) -> None:
        self.ref = _ref_name(raw)  # the definition this node names, if it is a $ref
        # a $ref node shares its children with the (cached) definition it names, so walking
        # the same kind twice builds its tree once
        self._shared = resolve(self.ref) if self.ref is not None and resolve is not None \
            else None
        self.raw: Mapping[str, Any] = self._shared.raw \
            if self._shared is not None and len(raw) == 1 else _deref(raw, resolve)
        self._resolve = resolve
        self._properties: dict[str, Schema] | None = None
        self._element: Schema | bool | None = False
        self._items: Schema | bool | None = False
        self._additional: Schema | bool | None = False
        self._type: str | bool | None = False

    def __repr__(self) -> str:
        return f"Schema(type={self.type!r}, properties={len(self.raw.get('properties', {}))})"

    # -- shape ---------------------------------------------------------------------------
    @property
    def type(self) -> str | None:
        """The JSON type, with the ``["string", "null"]`` spelling folded to ``"string"``."""
        if self._type is False:
            self._type = self._compute_type()
        # False marks "not computed yet" and was replaced just above
        return self._type  # type: ignore[return-value]

    def _compute_type(self) -> str | None:
        t = self.raw.get("type")
        if isinstance(t, list):
            t = next((x for x in t if x != "null"), None)
        if t is None and self.int_or_string:
            return None
        if t is None and "properties" in self.raw:
            return "object"
        return t

    @property
    def nullable(self) -> bool:
        t = self.raw.get("type")
        return bool(self.raw.get("nullable")) or (isinstance(t, list) and "null" in t)

    @property
    def is_scalar(self) -> bool:
        return self.type in _SCALAR_TYPES or self.int_or_string

    @property
    def properties(self) -> dict[str, Schema]:
        if self._shared is not None:
            return self._shared.properties
        if self._properties is None:
            self._properties = {
                k: Schema(v, self._resolve) for k, v in (self.raw.get("properties") or {}).items()
            }
        return self._properties

    def field(self, name: str) -> Schema | None:
        return self.properties.get(name)

    @property
    def items(self) -> Schema | None:
        if self._shared is not None:
            return self._shared.items
        if self._items is False:
            raw = self.raw.get("items")
            self._items = Schema(raw, self._resolve) if isinstance(raw, Mapping) else None
        # False marks "not computed yet" and was replaced just above
        return self._items  # type: ignore[return-value]

    @property
    def additional_properties(self) -> Schema | None:
        if self._shared is not None:
            return self._shared.additional_properties
        if self._additional is False:
            raw = self.raw.get("additionalProperties")
            if isinstance(raw, Mapping):
                self._additional = Schema(raw, self._resolve)
            elif raw is True:
                self._additional = Schema({}, self._resolve)
            else:
                self._additional = None
        # False marks "not computed yet" and was replaced just above
        return self._additional  # type: ignore[return-value]

    def element(self) -> Schema | None:
        """The schema of list items or map values."""
        if self._element is False:
            self._element = self.items if self.type == "array" else self.additional_properties
        # False marks "not computed yet" and was replaced just above
        return self._element  # type: ignore[return-value]

    def child(self, key: str) -> Schema | None:
        """The schema of field ``key`` of an object, or of any value of a map."""
        prop = self.field(key)
        if prop is not None:
            return prop
        return self.additional_properties

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(self.raw.get("required") or ())

    # -- Kubernetes extensions -----------------------------------------------------------
    @property
    def list_type(self) -> str | None:
        lt = self.raw.get("x-kubernetes-list-type")
        if lt:
            return str(lt)
        strategy = self.patch_strategy or ""
        if "merge" in strategy.split(","):
            return "map" if self.patch_merge_key else "set"
        return None

    @property
    def list_map_keys(self) -> tuple[str, ...]:
        keys = self.raw.get("x-kubernetes-list-map-keys")
        if keys:
            return tuple(keys)
        mk = self.patch_merge_key
        return (mk,) if mk else ()

    @property
    def map_type(self) -> str | None:
        return self.raw.get("x-kubernetes-map-type")

    @property
    def patch_strategy(self) -> str | None:
        return self.raw.get("x-kubernetes-patch-strategy")

    @property
    def patch_merge_key(self) -> str | None:
        return self.raw.get("x-kubernetes-patch-merge-key")

    @property
    def int_or_string(self) -> bool:
        return bool(self.raw.get("x-kubernetes-int-or-string"))

    @property
    def preserve_unknown_fields(self) -> bool:
        return bool(self.raw.get("x-kubernetes-preserve-unknown-fields"))

    @property
    def embedded_resource(self) -> bool:
        return bool(self.raw.get("x-kubernetes-embedded-resource"))

    @property
    def description(self) -> str:
        return str(self.raw.get("description") or "")


def _ref_name(raw: Mapping[str, Any]) -> str | None:
    ref = raw.get("$ref")
    if ref is None:
        all_of = raw.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], Mapping):
            ref = all_of[0].get("$ref")
    return ref.rsplit("/", 1)[-1] if isinstance(ref, str) else None


def _deref(raw: Mapping[str, Any], resolve: Resolver | None) -> Mapping[str, Any]:
    """Follow ``$ref`` (also the ``allOf: [{$ref}]`` spelling) and fold int-or-string forms."""
    ref = raw.get("$ref")
    if ref is None:
        all_of = raw.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1 and "$ref" in all_of[0]:
            ref = all_of[0]["$ref"]
    if ref is not None and resolve is not None:
        target = resolve(ref.rsplit("/", 1)[-1]).raw
        extra = {k: v for k, v in raw.items() if k not in ("$ref", "allOf")}
        return {**target, **extra} if extra else target
    one_of = raw.get("oneOf")
    if isinstance(one_of, list) and {_type_name(o) for o in one_of} == {"string", "integer"}:
        rest = {k: v for k, v in raw.items() if k != "oneOf"}
        return {**rest, "x-kubernetes-int-or-string": True}
    if isinstance(one_of, list) and {_type_name(o) for o in one_of} == {"string", "number"}:
        # resource.Quantity: a string on the wire; numbers are accepted on input
        rest = {k: v for k, v in raw.items() if k != "oneOf"}
        return {**rest, "x-kubernetes-int-or-string": True, "format": "quantity"}
    return raw


def openapi_type(kinds: list[str]) -> str | list[str]:
    """The OpenAPI ``type`` of a JSON-Schema ``type`` list (the definitions' rendering of a
    nullable field, ``[t, "null"]``): ``null`` dropped, a lone type as itself."""
    types = [t for t in kinds if t != "null"]
    return types[0] if len(types) == 1 else types


def _type_name(raw: Any) -> str | None:
    t = raw.get("type") if isinstance(raw, Mapping) else None
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), None)
    return t


# -- the built-in definitions -------------------------------------------------------------

KUBERNETES_SCHEMA_VERSION = "v1.32.0"


class Definitions:
    """The Kubernetes OpenAPI definitions, by name and by group/version/kind."""

    def __init__(self, defs: dict[str, Any]) -> None:
        self.raw = defs
        self._cache: dict[str, Schema] = {}
        self.by_gvk: dict[tuple[str, str, str], str] = {}
        for name, d in defs.items():
            for gvk in d.get("x-kubernetes-group-version-kind") or ():
                key = (gvk.get("group", ""), gvk["version"], gvk["kind"])
                # the first definition wins: meta/v1 DeleteOptions etc. list many GVKs
                self.by_gvk.setdefault(key, name)

    def get(self, name: str) -> Schema:
        s = self._cache.get(name)
        if s is None:
            s = Schema(self.raw[name], self.get)
            self._cache[name] = s
        return s

    def for_kind(self, group: str, version: str, kind: str) -> Schema | None:
        name = self.by_gvk.get((group, version, kind))
        return self.get(name) if name else None

    def name_for_kind(self, group: str, version: str, kind: str) -> str | None:
        return self.by_gvk.get((group, version, kind))


@functools.cache
def definitions() -> Definitions:
    """The definitions of Kubernetes ``KUBERNETES_SCHEMA_VERSION``, loaded once."""
    import importlib.util

    # locate the package's data without importing it (its import pulls in jsonschema)
    spec = importlib.util.find_spec("kubernetes_validate")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the kubernetes-validate package is not installed")
    root = Path(next(iter(spec.submodule_search_locations))) / "kubernetes-json-schema"
    path = root / f"{KUBERNETES_SCHEMA_VERSION}-local" / "_definitions.json"
    data = orjson.loads(path.read_bytes())
    return Definitions(data.get("$defs") or data.get("definitions") or {})

"""``CustomResourceSchema``: what the server does to a custom resource of one served version.

The order the apiserver applies on a write is: prune (while decoding; the pruned paths become
``unknown field`` warnings or strict errors), default, then validate. On every read the
stored object is defaulted again, so defaults added to the CRD later show up.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from setpoint.machinery.errors import Cause
from setpoint.machinery.gofmt import format_v, go_type
from setpoint.machinery.names import validate_object_meta, validate_path_segment_name
from setpoint.machinery.schema import Schema

from . import fielderrors as fe
from .defaulting import apply_defaults, prune_non_nullable_nulls_without_defaults
from .listtype import validate_list_sets_and_maps
from .names import is_dns1035_label, name_is_dns_subdomain
from .openapi import MISSING, validate_value
from .pruning import prune
from .validations import declares_validations

if TYPE_CHECKING:
    from .cel import RuleSet

MAX_INT32 = 2**31 - 1


def find_version(crd: Mapping[str, Any], version: str) -> Mapping[str, Any]:
    v: Mapping[str, Any]
    for v in (crd.get("spec") or {}).get("versions") or []:
        if v.get("name") == version:
            return v
    raise KeyError(f"version {version} not found in {crd.get('metadata', {}).get('name')}")


_BLOCKING_REASONS = frozenset({"FieldValueNotSupported", "FieldValueRequired",
                               "FieldValueTooLong", "FieldValueTooMany",
                               "FieldValueTypeInvalid"})
_RULES_NOT_CHECKED = ("some validation rules were not checked because the object was "
                      "invalid; correct the existing errors to complete validation")


class CustomResourceSchema:
    """The structural schema of one version of a CRD, with its pruning, defaults and rules."""

    def __init__(self, crd: Mapping[str, Any], version: str) -> None:
        spec = crd.get("spec") or {}
        self.group: str = spec.get("group", "")
        self.version = version
        self.kind: str = (spec.get("names") or {}).get("kind", "")
        self.namespaced = spec.get("scope") == "Namespaced"
        v = find_version(crd, version)
        raw = ((v.get("schema") or {}).get("openAPIV3Schema")) or {
            "type": "object", "x-kubernetes-preserve-unknown-fields": True}
        self.raw: dict[str, Any] = copy.deepcopy(dict(raw))
        self.scale: Mapping[str, Any] | None = (v.get("subresources") or {}).get("scale")
        self.has_status = "status" in (v.get("subresources") or {})
        self.rules: RuleSet | None = None
        if declares_validations(self.raw):
            from .cel import RuleSet

            self.rules = RuleSet(self.raw)
        self._schema: Schema | None = None
        self.has_defaults = _declares_defaults(self.raw)
        # objects stored under another schema of this version (an earlier CRD generation, or
        # a previous run of the server) may hold fields this one prunes: read them pruned
        self.prunes_on_read = False

    def __repr__(self) -> str:
        return f"CustomResourceSchema({self.group}/{self.version}, Kind={self.kind})"

    @property
    def schema(self) -> Schema:
        """The navigable schema, for patch and apply."""
        if self._schema is None:
            self._schema = Schema(self.raw)
        return self._schema

    # -- decoding ------------------------------------------------------------------------------
    def prune(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Drop unknown fields of ``obj`` in place and return it."""
        self.prune_and_report(obj)
        return obj

    def prune_and_report(self, obj: dict[str, Any]) -> list[str]:
        """Drop unknown fields of ``obj`` in place; return their paths, sorted.

        Then the nulls the schema neither allows nor defaults go too, as the apiserver's
        schema coercer does right after pruning (``customresource_handler.go``).
        """
        paths = prune(obj, self.raw, is_resource_root=True)
        prune_non_nullable_nulls_without_defaults(obj, self.raw)
        return paths

    def embedded_coerce_error(self, obj: Mapping[str, Any],
                              meta_error: Callable[[Any], str | None]) -> Cause | None:
        """What decoding refuses in the embedded resources of ``obj`` (the root's own
        metadata is decoded apart): the unstructuredSchemaCoercer's objectmeta.Coerce."""
        return embedded_coerce_error(self.raw, obj, "", False, meta_error)

    def unknown_fields(self, obj: Mapping[str, Any]) -> list[str]:
        """The paths pruning would drop from ``obj`` (``obj`` is left alone)."""
        return prune(copy.deepcopy(dict(obj)), self.raw, is_resource_root=True)

    def default(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Apply schema defaults to ``obj`` in place and return it."""
        apply_defaults(obj, self.raw)
        return obj

    # -- validation ----------------------------------------------------------------------------
    def validate(self, obj: Mapping[str, Any], old: Mapping[str, Any] | None = None,
                 warnings: list[str] | None = None, prior: list[Cause] | None = None
                 ) -> list[Cause]:
        """Causes of a create (``old`` None) or an update of ``obj``.

        Covers type meta (``kind: must be Widget``), the name, the OpenAPI schema, list
        set/map uniqueness, embedded resources, the scale replicas paths and the CEL rules.
        Unchanged parts of an update are ratcheted like Kubernetes does: the CEL rules'
        ratcheted failures are added to ``warnings``. ``prior``: the causes the generic
        validation found (metadata), which may block the rules as the schema's do.
        """
        errs = self.validate_type_meta(obj)
        if errs:
            return errs
        # the name is checked with the rest of metadata by the generic validation
        previous: Any = MISSING if old is None else old
        # in customresource/strategy.go's order: the schema and the scale paths (the
        # validator), the embedded resources, then the list types, checked on update only
        # when the stored object has no such error
        errs += validate_value(self.raw, dict(obj), "", previous)
        errs += self.validate_scale(obj)
        errs += validate_embedded_resources(self.raw, obj, "", previous)
        if old is None or not validate_list_sets_and_maps(self.raw, dict(old)):
            errs += validate_list_sets_and_maps(self.raw, dict(obj))
        if self.rules:
            # customresource/strategy.go hasBlockingErr: after an error of one of these
            # types the rules are not run; one cause says so instead
            if any(c.reason in _BLOCKING_REASONS for c in [*(prior or ()), *errs]):
                errs.append(fe.invalid("<nil>", "null", _RULES_NOT_CHECKED))
            else:
                errs += self.rules.validate(dict(obj), previous, warnings=warnings)
        return errs

    def validate_type_meta(self, obj: Mapping[str, Any]) -> list[Cause]:
        errs = []
        kind = obj.get("kind")
        if kind != self.kind:
            errs.append(fe.invalid("kind", kind, f"must be {self.kind}"))
        api_version = f"{self.group}/{self.version}"
        if obj.get("apiVersion") != api_version:
            errs.append(fe.invalid("apiVersion", obj.get("apiVersion"), f"must be {api_version}"))
        return errs

    @staticmethod
    def validate_name(obj: Mapping[str, Any]) -> list[Cause]:
        meta = obj.get("metadata") or {}
        name, generate = meta.get("name") or "", meta.get("generateName") or ""
        if not name and not generate:
            return [fe.required("metadata.name", "name or generateName is required")]
        errs = [fe.invalid("metadata.name", name, m) for m in name_is_dns_subdomain(name, False)] \
            if name else []
        if generate:
            errs += [fe.invalid("metadata.generateName", generate, m)
                     for m in name_is_dns_subdomain(generate, True)]
        return errs

    def validate_scale(self, obj: Mapping[str, Any]) -> list[Cause]:
        if not self.scale:
            return []
        errs: list[Cause] = []
        for key in ("specReplicasPath", "statusReplicasPath"):
            path = self.scale.get(key)
            if not path:
                continue
            found, value = _lookup(obj, path)
            if not found:
                continue
            if not isinstance(value, int) or isinstance(value, bool):
                errs.append(fe.invalid(path, 0, _accessor_error(path, value, "int64")))
            elif value < 0:
                errs.append(fe.invalid(path, value, "should be a non-negative integer"))
            elif value > MAX_INT32:
                errs.append(fe.invalid(path, value,
                                       f"should be less than or equal to {MAX_INT32}"))
        selector = self.scale.get("labelSelectorPath")
        if selector:
            found, value = _lookup(obj, selector)
            if found and not isinstance(value, str):
                errs.append(fe.invalid(selector, "", _accessor_error(selector, value, "string")))
        return errs


def _accessor_error(path: str, value: Any, expected: str) -> str:
    """unstructured.NestedInt64/NestedString's error (k8s.io/apimachinery/pkg/apis/meta/v1/
    unstructured/helpers.go): ``%v accessor error: %v is of the type %T, expected int64``,
    so the value as Go's %v prints it and the Go type a JSON value decodes to."""
    return (f".{path.lstrip('.')} accessor error: {format_v(value)} is of the type "
            f"{go_type(value)}, expected {expected}")


def _declares_defaults(node: Any) -> bool:
    """Whether any node of a schema has a ``default`` (reads then need defaulting)."""
    if isinstance(node, Mapping):
        if "default" in node:
            return True
        return any(_declares_defaults(v) for k, v in node.items() if k != "enum")
    if isinstance(node, list):
        return any(_declares_defaults(v) for v in node)
    return False


def _lookup(obj: Mapping[str, Any], path: str) -> tuple[bool, Any]:
    cur: Any = obj
    for part in path.lstrip(".").split("."):
        if not isinstance(cur, Mapping) or part not in cur:
            return False, None
        cur = cur[part]
    return True, cur


def validate_embedded_resources(s: Mapping[str, Any], value: Any, path: str,
                                old: Any) -> list[Cause]:
    """objectmeta.Validate: embedded resources need apiVersion and kind, and valid metadata
    (a property by its name, an additionalProperties entry by its key)."""
    if old is not MISSING and old == value:
        return []
    errs: list[Cause] = []
    if isinstance(value, dict):
        if s.get("x-kubernetes-embedded-resource") and path:
            errs += validate_embedded_resource(value, path)
        props = s.get("properties") or {}
        additional = s.get("additionalProperties")
        old_map = old if isinstance(old, dict) else {}
        for k, v in value.items():
            sub = props.get(k) or (additional if isinstance(additional, Mapping) else None)
            if isinstance(sub, Mapping):
                sub_path = fe.child(path, k) if k in props else fe.key(path, k)
                errs += validate_embedded_resources(sub, v, sub_path, old_map.get(k, MISSING))
    elif isinstance(value, list) and isinstance(s.get("items"), Mapping):
        for i, item in enumerate(value):
            errs += validate_embedded_resources(s["items"], item, fe.index(path, i), MISSING)
    return errs


def validate_embedded_resource(x: Mapping[str, Any], path: str) -> list[Cause]:
    errs: list[Cause] = []
    for key in ("apiVersion", "kind"):
        if key not in x:
            errs.append(fe.required(fe.child(path, key), "must not be empty"))
        elif not isinstance(x[key], str):
            errs.append(fe.invalid(fe.child(path, key), x[key], "must be a string"))
        elif not x[key]:
            errs.append(fe.invalid(fe.child(path, key), x[key], "must not be empty"))
        elif key == "kind" and (msgs := is_dns1035_label(x[key].lower())):
            errs.append(fe.invalid(fe.child(path, key), x[key],
                                   "may have mixed case, but should otherwise match: "
                                   + ",".join(msgs)))
        elif key == "apiVersion" and x[key].count("/") > 1:
            # schema.ParseGroupVersion: at most one slash
            errs.append(fe.invalid(fe.child(path, key), x[key],
                                   f"unexpected GroupVersion string: {x[key]}"))
    meta = x.get("metadata")
    if isinstance(meta, dict):
        # ValidateObjectMeta with path segment names, a missing name taken as "fakename",
        # and the namespace checked only when one is given
        meta = {**meta, "name": meta.get("name") or "fakename"}
        errs += validate_object_meta(meta, bool(meta.get("namespace")),
                                     validate_path_segment_name, fe.child(path, "metadata"))
    return errs


def embedded_coerce_error(s: Mapping[str, Any], x: Any, path: str, embedded: bool,
                          meta_error: Callable[[Any], str | None]) -> Cause | None:
    """objectmeta.Coerce without dropping (request bodies, defaults): the first embedded
    resource whose apiVersion or kind is not a string, or whose metadata does not decode as
    an ObjectMeta (``meta_error``: encoding/json's complaint, or None)."""
    if isinstance(x, dict):
        props = s.get("properties") or {}
        additional = s.get("additionalProperties")
        for k, v in x.items():
            if embedded and k in ("apiVersion", "kind") and not isinstance(v, str):
                return fe.invalid(fe.child(path, k), v, "must be a string")
            if embedded and k == "metadata" and (problem := meta_error(v)):
                return fe.invalid(fe.child(path, k), v, problem)
            sub = props.get(k) or (additional if isinstance(additional, Mapping) else None)
            if isinstance(sub, Mapping):
                sub_path = fe.child(path, k) if k in props else fe.key(path, k)
                err = embedded_coerce_error(sub, v, sub_path,
                                            bool(sub.get("x-kubernetes-embedded-resource")),
                                            meta_error)
                if err is not None:
                    return err
    elif isinstance(x, list) and isinstance(s.get("items"), Mapping):
        items = s["items"]
        for i, v in enumerate(x):
            err = embedded_coerce_error(items, v, fe.index(path, i),
                                        bool(items.get("x-kubernetes-embedded-resource")),
                                        meta_error)
            if err is not None:
                return err
    return None


def unknown_field_warnings(paths: list[str]) -> list[str]:
    """``fieldValidation=Warn`` warnings for pruned paths."""
    return [f'unknown field "{p}"' for p in paths]


def strict_decoding_error(paths: list[str]) -> str:
    """The ``strict decoding error: ...`` text for pruned paths."""
    return "strict decoding error: " + ", ".join(f'unknown field "{p}"' for p in paths)

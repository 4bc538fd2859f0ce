"""The type checker of ValidatingAdmissionPolicies: k8s.io/apiserver
pkg/admission/plugin/policy/validating/typechecking.go ``TypeChecker.Check``.

Each validation's ``expression`` and ``messageExpression`` is checked once per kind the
policy's matchConstraints name exactly (``typesToCheck``: no wildcard group or version, no
wildcard or subresource resource; at most 10 kinds a rule; sorted by group, version, kind),
``object`` and ``oldObject`` typed by that kind's OpenAPI schema (refs inlined as
resolver.PopulateRefs does, a circular one an empty object; the root given apiVersion, kind
and metadata.name/generateName as common.WithTypeAndObjectMeta does), ``params`` by the
paramKind's (and undeclared when there is none, or it has no schema), ``variables`` by the
variables' own types. A kind without a schema is skipped. Each failing expression gets one
warning at ``spec.validations[i].expression`` (or ``.messageExpression``): for each failing
kind ``<group>/<version>, Kind=<kind>: <cel-go issues>\\n`` (TypeCheckingResult.String),
joined by a newline. The request, namespaceObject and authorizer are not typed here (dyn):
what the checker finds wrong about them it does not report.

The checker is Setpoint's schema checker of CRD rules (apiextensions/schema/celcheck.py); it
knows less than cel-go, so it reports less, never more, than a definite error.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from setpoint.cluster.apiextensions.schema.celcheck import Checker
from setpoint.cluster.apiextensions.schema.celcost import T
from setpoint.cluster.apiextensions.schema.celprogram import CheckError, parse
from setpoint.cluster.apiextensions.schema.celschematype import type_of_schema
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.registry import Registry

GVK = tuple[str, str, str]
# the schema of a kind with its references inlined (openapi/resolver.py), None without one
SchemaResolver = Callable[[GVK], Obj | None]

_UNDECLARED = re.compile(r"undeclared reference to '([^']+)'")
MAX_TYPES_TO_CHECK = 10  # typechecking.go maxTypesToCheck


def check(policy: Obj, registry: Registry, resolve: SchemaResolver,
          is_builtin: Callable[[GVK], bool]) -> list[Obj]:
    """``status.typeChecking.expressionWarnings`` for ``policy`` (TypeChecker.Check); a
    built-in kind's type (``is_builtin``) is made once."""
    spec = policy.get("spec") or {}
    kinds: list[tuple[GVK, T]] = []
    for gvk in types_to_check(spec, registry):
        decl = _type_of_kind(gvk, resolve, is_builtin)
        if decl is not None:
            kinds.append((gvk, decl))
    params = _params_type(spec, resolve, is_builtin)
    warnings: list[Obj] = []
    for i, validation in enumerate(spec.get("validations") or []):
        for key in ("expression", "messageExpression"):
            expression = str((validation or {}).get(key) or "")
            if key == "messageExpression" and not expression:
                continue
            text = "\n".join(f"{_gvk_string(gvk)}: {issues}\n" for gvk, object_type in kinds
                             if (issues := _issues(expression, object_type, params,
                                                   spec.get("variables") or [])))
            if text:
                warnings.append({"fieldRef": f"spec.validations[{i}].{key}", "warning": text})
    return warnings


def types_to_check(spec: Obj, registry: Registry) -> list[GVK]:
    """typesToCheck: the kinds the resource rules name without wildcards, sorted; the
    tenth kind one rule resolves ends the search (Go returns what it has by then)."""
    found: set[GVK] = set()
    for rule in (spec.get("matchConstraints") or {}).get("resourceRules") or []:
        groups = [str(g) for g in rule.get("apiGroups") or []]
        versions = [str(v) for v in rule.get("apiVersions") or []]
        if any("*" in g for g in groups) or any("*" in v for v in versions):
            continue
        resources = [str(r) for r in rule.get("resources") or []
                     if "*" not in str(r) and "/" not in str(r)]
        count = 0
        for group in sorted(groups):
            for version in sorted(versions):
                for resource in sorted(resources):
                    rt = registry.get(group, version, resource)
                    if rt is None:
                        continue
                    found.add((rt.group, rt.version, rt.kind))
                    count += 1
                    if count == MAX_TYPES_TO_CHECK:
                        return sorted(found)
    return sorted(found)


def _with_type_and_object_meta(s: Obj) -> Obj:
    """common.WithTypeAndObjectMeta: a root without string kind and apiVersion and an object
    metadata with string name and generateName gets exactly those."""
    props = s.get("properties") or {}
    meta = props.get("metadata") or {}
    meta_props = meta.get("properties") or {}

    def is_type(p: Any, t: str) -> bool:
        return isinstance(p, Mapping) and p.get("type") == t

    if (is_type(props.get("kind"), "string") and is_type(props.get("apiVersion"), "string")
            and is_type(meta, "object") and is_type(meta_props.get("name"), "string")
            and is_type(meta_props.get("generateName"), "string")):
        return s
    string = {"type": "string"}
    return {**s, "properties": {**props, "kind": string, "apiVersion": string,
                                "metadata": {"type": "object", "properties": {
                                    "name": string, "generateName": string}}}}


def _decl_type(schema: Obj) -> T:
    """common.SchemaDeclType(schema, isResourceRoot=true)."""
    return type_of_schema(_with_type_and_object_meta(schema))


def _type_of_kind(gvk: GVK, resolve: SchemaResolver, is_builtin: Callable[[GVK], bool]
                  ) -> T | None:
    """The declared type of a kind (TypeChecker.declType)."""
    if is_builtin(gvk):
        return _builtin_type(gvk, resolve)
    schema = resolve(gvk)
    return _decl_type(schema) if schema is not None else None


_BUILTIN_TYPES: dict[GVK, T | None] = {}


def _builtin_type(gvk: GVK, resolve: SchemaResolver) -> T | None:
    if gvk not in _BUILTIN_TYPES:
        schema = resolve(gvk)
        _BUILTIN_TYPES[gvk] = _decl_type(schema) if schema is not None else None
    return _BUILTIN_TYPES[gvk]


def _params_type(spec: Obj, resolve: SchemaResolver, is_builtin: Callable[[GVK], bool]
                 ) -> T | None:
    kind = spec.get("paramKind") or {}
    if not kind:
        return None
    group, _, version = str(kind.get("apiVersion", "")).rpartition("/")
    return _type_of_kind((group, version, str(kind.get("kind", ""))), resolve, is_builtin)


def _issues(expression: str, object_type: T, params: T | None, variables: list[Obj]) -> str:
    """cel-go's issues for ``expression`` in the typed environment (buildEnvSet with the
    composited variables, StoredExpressions), "" when it checks."""
    declared = {"object": object_type, "oldObject": object_type, "request": T("dyn"),
                "namespaceObject": T("dyn"), "authorizer": T("dyn")}
    if params is not None:
        declared["params"] = params
    fields: dict[str, T] = {}
    for variable in variables:  # CompileAndStoreVariables: each sees the earlier ones
        declared["variables"] = T("object", fields=dict(fields))
        fields[str(variable.get("name", ""))] = _type_or_dyn(
            str(variable.get("expression", "")), declared)
    declared["variables"] = T("object", fields=fields)
    try:
        Checker(expression, declared, lenient_functions=True).run(parse(expression))
    except CheckError as exc:
        undeclared = _UNDECLARED.search(exc.detail.partition("\n")[0])
        if undeclared and re.search(rf"\b{undeclared[1]}\s*\(", expression):
            return ""  # a function the checker here does not know (the authorizer's)
        return exc.detail
    return ""


def _type_or_dyn(expression: str, declared: dict[str, T]) -> T:
    """A variable's output type; a variable that does not check is dyn (its error is not
    reported: Check reports the validations' expressions only)."""
    try:
        return Checker(expression, dict(declared),
                       lenient_functions=True).run(parse(expression))
    except CheckError:
        return T("dyn")


def _gvk_string(gvk: GVK) -> str:
    """schema.GroupVersionKind's String()."""
    group, version, kind = gvk
    return f"{group}/{version}, Kind={kind}"


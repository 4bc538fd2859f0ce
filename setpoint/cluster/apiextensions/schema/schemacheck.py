"""Validation of one CRD schema (``validateCustomResourceDefinitionValidation``).

Structural rules first; when they hold, the defaults are checked against the schema and the
x-kubernetes-validations rules are compiled with their estimated costs. The per-node OpenAPI
checks always run. Paths are under ``<base>.openAPIV3Schema``.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from setpoint.machinery.errors import Cause
from setpoint.machinery.fielderrors import aggregate_text, unmarshal_kind

from . import fielderrors as fe
from .openapi import MISSING, validate_value
from .pruning import prune
from .resource import (
    embedded_coerce_error,
    validate_embedded_resource,
    validate_embedded_resources,
)
from .structural import META_FIELDS, NodeContext, node_checks, root_status_restrictions
from .structural import validate_structural as structural_errors
from .validations import declares_validations


@dataclass
class _Cost:
    total: float = 0.0
    contributors: list[tuple[str, float]] = field(default_factory=list)

    def observe(self, path: str, cost: float) -> None:
        self.total += cost
        self.contributors.append((path, cost))


def validate_schema(schema: Mapping[str, Any], base: str, status_enabled: bool,
                    ctx: NodeContext | None = None) -> list[Cause]:
    """Every cause a CRD's ``openAPIV3Schema`` at ``<base>.openAPIV3Schema`` earns."""
    ctx = ctx or NodeContext()
    path = fe.child(base, "openAPIV3Schema")
    errs: list[Cause] = []
    if status_enabled:
        errs += root_status_restrictions(schema, path)
    if schema.get("nullable"):
        errs.append(fe.forbidden(fe.child(path, "nullable"), "nullable cannot be true at the root"))
    cel_enabled = False
    # validation.go: a schema NewStructural cannot convert gets neither the structural nor
    # the defaults checks nor its rules compiled; the conversion's own error is reported
    # only when nothing else is (the per-node checks below name each such keyword)
    init_error = structural_conversion_error(schema)
    structural = [] if init_error else structural_errors(schema, path)
    if init_error or structural:
        errs += structural
    else:
        defaults = validate_defaults(schema, path)
        if defaults:
            errs += defaults
        else:
            cel_enabled = True
    cost = _Cost()
    schema_errs, cel_errs = _walk(schema, path, ctx, True, cel_enabled, [], cost)
    errs += schema_errs + cel_errs
    if not errs and init_error:
        errs.append(fe.invalid(path, "", init_error))
    if cel_enabled and cost.contributors:
        errs += _total_cost_errors(path, cost)
    return errs


_UNSUPPORTED = (("id", "id"), ("$schema", "schema"), ("$ref", "$ref"),
                ("patternProperties", "patternProperties"), ("dependencies", "dependencies"))


def structural_conversion_error(s: Any) -> str | None:
    """Why apiextensions' ``structuralschema.NewStructural`` (pkg/apiserver/schema/convert.go)
    refuses ``s``, in its order: the unsupported keywords, then the value validations, the
    preserve-unknown-fields false, an items array, the properties and additionalProperties."""
    if not isinstance(s, Mapping):
        return None
    for key, word in _UNSUPPORTED:
        if s.get(key):
            return f"OpenAPIV3Schema '{word}' is not supported"
    if s.get("additionalItems") is not None:
        return "OpenAPIV3Schema 'additionalItems' is not supported"
    if s.get("definitions"):
        return "OpenAPIV3Schema 'definitions' is not supported"
    nested = [s.get("not"), *(s.get("allOf") or ()), *(s.get("anyOf") or ()),
              *(s.get("oneOf") or ())]
    for sub in nested:
        err = structural_conversion_error(sub)
        if err:
            return err
    if s.get("x-kubernetes-preserve-unknown-fields") is False:
        return ("internal error: 'x-kubernetes-preserve-unknown-fields' must be true or "
                "undefined")
    items = s.get("items")
    if isinstance(items, list):
        return "OpenAPIV3Schema 'items' must be a schema, but is an array"
    for sub in (items, *(s.get("properties") or {}).values(), s.get("additionalProperties")):
        err = structural_conversion_error(sub)
        if err:
            return err
    return None


def _total_cost_errors(path: str, cost: _Cost) -> list[Cause]:
    from .cel import STATIC_ESTIMATED_CRD_COST_LIMIT, cost_error_message

    errs: list[Cause] = []
    if cost.total > STATIC_ESTIMATED_CRD_COST_LIMIT:
        for p, _ in sorted(cost.contributors, key=lambda c: -c[1])[:4]:
            errs.append(fe.forbidden(p, "contributed to estimated rule cost total exceeding "
                                        "cost limit for entire OpenAPIv3 schema"))
        errs.append(fe.forbidden(path, cost_error_message(
            "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
            cost.total, STATIC_ESTIMATED_CRD_COST_LIMIT)))
    return errs


def _walk(s: Any, path: str, ctx: NodeContext, is_root: bool, cel: bool,
          ancestors: list[Mapping[str, Any]], cost: _Cost) -> tuple[list[Cause], list[Cause]]:
    if not isinstance(s, Mapping):
        return [], []
    schema_errs = node_checks(s, path, ctx)
    cel_errs: list[Cause] = []

    def merge(result: tuple[list[Cause], list[Cause]]) -> None:
        schema_errs.extend(result[0])
        cel_errs.extend(result[1])

    ap = s.get("additionalProperties")
    if isinstance(ap, Mapping):
        sub_ctx = ctx
        if ctx.inside_resource_meta:
            sub_ctx = ctx.forbid_defaults("inside additionalProperties applying to object metadata")
        merge(_walk(ap, fe.child(path, "additionalProperties"), sub_ctx, False, cel,
                    [*ancestors, s], cost))
    for name, prop in (s.get("properties") or {}).items():
        sub_ctx = ctx
        if s.get("x-kubernetes-map-type") == "atomic":
            sub_ctx = sub_ctx.forbid_old_self(path)
        if (is_root or s.get("x-kubernetes-embedded-resource")) and name in META_FIELDS:
            sub_ctx = replace_meta(sub_ctx)
            if is_root:
                sub_ctx = sub_ctx.forbid_defaults(f"in top-level {name}")
        merge(_walk(prop, fe.key(fe.child(path, "properties"), name), sub_ctx, False, cel,
                    ancestors, cost))
    if isinstance(s.get("not"), Mapping):
        merge(_walk(s["not"], fe.child(path, "not"), ctx, False, False, ancestors, cost))
    for junctor in ("allOf", "oneOf", "anyOf"):
        for i, sub in enumerate(s.get(junctor) or []):
            merge(_walk(sub, fe.index(fe.child(path, junctor), i), ctx, False, False, ancestors,
                        cost))
    for name, sub in (s.get("definitions") or {}).items():
        merge(_walk(sub, fe.key(fe.child(path, "definitions"), name), ctx, False, False,
                    ancestors, cost))
    items = s.get("items")
    if isinstance(items, Mapping):
        sub_ctx = ctx if s.get("x-kubernetes-list-type") == "map" else ctx.forbid_old_self(path)
        merge(_walk(items, fe.child(path, "items"), sub_ctx, False, cel, [*ancestors, s], cost))
    if s.get("x-kubernetes-validations") and not schema_errs and cel:
        cel_errs += _compile_rules(s, path, ctx, is_root, ancestors, cost)
    return schema_errs, cel_errs


def replace_meta(ctx: NodeContext) -> NodeContext:
    from dataclasses import replace
    return replace(ctx, inside_resource_meta=True)


def _compile_rules(s: Mapping[str, Any], path: str, ctx: NodeContext, is_root: bool,
                   ancestors: list[Mapping[str, Any]], cost: _Cost) -> list[Cause]:
    from .cel import STATIC_ESTIMATED_COST_LIMIT, compile_rule, cost_error_message
    from .celcost import max_elements

    errs: list[Cause] = []
    card = 1.0
    for a in ancestors:
        card *= max_elements(a)
    for i, rule in enumerate(s.get("x-kubernetes-validations") or []):
        rp = fe.index(fe.child(path, "x-kubernetes-validations"), i)
        cr = compile_rule(rule, s, root=is_root, preexisting=ctx.preexisting_expressions)
        expression_cost = cr.cost * card
        if expression_cost > STATIC_ESTIMATED_COST_LIMIT:
            errs.append(fe.forbidden(fe.child(rp, "rule"), cost_error_message(
                "estimated rule cost", expression_cost, STATIC_ESTIMATED_COST_LIMIT)))
        cost.observe(fe.child(rp, "rule"), expression_cost)
        if cr.error:
            errs.append(fe.invalid(fe.child(rp, "rule"), _rule_struct(rule), cr.error))
        if cr.message_error:
            errs.append(fe.invalid(fe.child(rp, "messageExpression"), _rule_struct(rule),
                                   cr.message_error))
        elif cr.message_program is not None:
            message_cost = cr.message_cost * card
            if message_cost > STATIC_ESTIMATED_COST_LIMIT:
                errs.append(fe.forbidden(fe.child(rp, "messageExpression"), cost_error_message(
                    "estimated messageExpression cost", message_cost,
                    STATIC_ESTIMATED_COST_LIMIT)))
            cost.observe(fe.child(rp, "messageExpression"), message_cost)
        if cr.uses_old_self:
            if ctx.uncorrelatable_path is not None:
                errs.append(fe.invalid(fe.child(rp, "rule"), rule.get("rule"),
                                       "oldSelf cannot be used on the uncorrelatable portion of "
                                       f"the schema within {ctx.uncorrelatable_path}"))
        elif rule.get("optionalOldSelf") is not None and not cr.error:
            errs.append(fe.invalid(fe.child(rp, "optionalOldSelf"), rule.get("optionalOldSelf"),
                                   "may not be set if oldSelf is not used in rule"))
    return errs


def _rule_struct(rule: Mapping[str, Any]) -> Any:
    """The ValidationRule as Go prints it in the message of a compile error."""
    def q(v: Any) -> str:
        return fe.go_quote(str(v or ""))
    # Reason and OptionalOldSelf are pointer fields: %#v prints their address, not their value
    reason_text = fe.go_pointer("apiextensions.FieldValueErrorReason",
                                rule.get("reason") is not None)
    opt_text = fe.go_pointer("bool", rule.get("optionalOldSelf") is not None)
    text = (f"apiextensions.ValidationRule{{Rule:{q(rule.get('rule'))}, "
            f"Message:{q(rule.get('message'))}, "
            f"MessageExpression:{q(rule.get('messageExpression'))}, "
            f"Reason:{reason_text}, "
            f"FieldPath:{q(rule.get('fieldPath'))}, "
            f"OptionalOldSelf:{opt_text}}}")
    return fe.Rendered(text)


def validate_defaults(schema: Mapping[str, Any], path: str) -> list[Cause]:
    """``ValidateDefaults``: every default is pruned and valid against its schema."""
    root = {**schema, "x-kubernetes-embedded-resource": True}
    return _defaults(root, path, inside_meta=False)


def _defaults(s: Mapping[str, Any], path: str, inside_meta: bool,
              surrounding: _Surrounding = None) -> list[Cause]:
    """defaulting/validation.go validate: ``surrounding`` wraps a default inside TypeMeta or
    ObjectMeta into the object it would land in (SurroundingObjectFunc)."""
    embedded = bool(s.get("x-kubernetes-embedded-resource"))
    if embedded:
        inside_meta, surrounding = False, None
    errs: list[Cause] = []
    default = s.get("default")
    if default is not None:
        dpath = fe.child(path, "default")
        if inside_meta:
            errs += _meta_default(s, default, dpath, surrounding)
        else:
            pruned = copy.deepcopy(default)
            prune(pruned, s, embedded)
            if pruned != default:
                errs.append(fe.invalid(dpath, default, "must not have unknown fields"))
            value = copy.deepcopy(default)
            # objectmeta.Coerce, then objectmeta.Validate: embedded resources in the default
            # (the default itself when this node is one) need a valid TypeMeta and ObjectMeta
            coerced = embedded_coerce_error(s, value, dpath, embedded, _meta_shape_error)
            if coerced is not None:
                errs.append(coerced)
            elif meta_errs := validate_embedded_resources(s, value, dpath, MISSING):
                errs += meta_errs
            else:
                errs += _value_default(s, value, dpath)
    items = s.get("items")
    if isinstance(items, Mapping):
        errs += _defaults(items, fe.child(path, "items"), inside_meta,
                          _wrap(surrounding, _in_list))
    for name, prop in (s.get("properties") or {}).items():
        if not isinstance(prop, Mapping):
            continue
        sub_meta = inside_meta or (embedded and name in META_FIELDS)
        errs += _defaults(prop, fe.key(fe.child(path, "properties"), name), sub_meta,
                          _wrap(surrounding, functools.partial(_in_field, name)))
    return errs


# how a default nests into the embedded resource around it; None is that resource itself
_Surrounding = Callable[[Any], Any] | None


def _in_list(x: Any) -> Any:
    return [x]


def _in_field(name: str, x: Any) -> Any:
    return {name: x}


def _wrap(outer: _Surrounding, inner: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return inner if outer is None else (lambda x: outer(inner(x)))


def _value_default(s: Mapping[str, Any], default: Any, dpath: str) -> list[Cause]:
    errs = validate_value(s, default, dpath)
    if not errs and declares_validations(s):
        from .cel import RuleSet

        errs = RuleSet(s).validate(copy.deepcopy(default), path=dpath)
    return errs


def _meta_default(s: Mapping[str, Any], default: Any, dpath: str,
                  surrounding: _Surrounding) -> list[Cause]:
    """A default inside an embedded resource's apiVersion, kind or metadata must make that
    resource's TypeMeta and ObjectMeta valid (the resource has kind Validation and apiVersion
    validation/v1 unless the default sets them)."""
    obj = (surrounding or (lambda x: x))(copy.deepcopy(default))
    if not isinstance(obj, dict):
        return []
    obj.setdefault("kind", "Validation")
    obj.setdefault("apiVersion", "validation/v1")
    coerced = embedded_coerce_error({"x-kubernetes-embedded-resource": True}, obj, "", True,
                                    _meta_shape_error)
    meta_errs = [coerced] if coerced is not None else validate_embedded_resource(obj, "")
    if meta_errs:
        return [fe.invalid(dpath, default,
                           f"must result in valid metadata: {aggregate_text(meta_errs)}")]
    return _value_default(s, default, dpath)


def _meta_shape_error(meta: Any) -> str | None:
    """GetObjectMetaWithOptions' error for metadata that is not an object at all (a default
    has no typed decoder here; a wrong field type inside it is left to ObjectMeta validation)."""
    if meta is None or isinstance(meta, dict):
        return None
    return f"json: cannot unmarshal {unmarshal_kind(meta)} into Go value of type v1.ObjectMeta"

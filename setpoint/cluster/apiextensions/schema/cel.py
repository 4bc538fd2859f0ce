"""x-kubernetes-validations: compiling rules and evaluating them on custom resources.

``compile_rule`` parses a rule (and its ``messageExpression``) with ``celpy``, checks it
against the schema of the node it sits on and estimates its cost. ``validate_rules`` walks an
object along the schema and evaluates every rule, with ``oldSelf`` bound to the correlated old
value on update: transition rules run only when that old value exists (or with
``optionalOldSelf``). Rules that do not use ``oldSelf`` still run on unchanged values, but
their failures there are ratcheted into warnings, as in Kubernetes 1.32 (``ratchet.py``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from celpy import celtypes

from setpoint.machinery.errors import Cause

from . import celdeep
from . import fielderrors as fe
from .celcheck import check
from .celcost import T
from .cellib import error_text, to_cel
from .celoptional import OptionalValue
from .celprogram import (
    CEL_GO_SYNTAX_CHECK_CODE_POINTS,
    CheckError,
    ProgramError,
    is_deep,
    parse,
    program,
)
from .celruntime import COST_LIMIT_EXCEEDED, CostLimitExceeded
from .celschematype import type_of_schema
from .fieldpath import valid_field_path
from .openapi import MISSING
from .ratchet import Correlation

TOO_DEEP = ("ERROR: <input>:-1:0: expression nested too deeply for the embedded server's "
            "checker (cel-go's parser takes up to 250 levels of a grammar rule)")
"""A rule the checker could not walk even on the deep worker (celdeep.py): the parser's
limits bound every tree well within its recursion limit, so this is a last guard that
refuses the rule as invalid rather than failing the request."""

STATIC_ESTIMATED_COST_LIMIT = 10_000_000
# apiserver pkg/apis/cel/config.go RuntimeCELCostBudget: the actual
# cost all rules of one custom resource may spend
RUNTIME_CEL_COST_BUDGET = 10_000_000
# apiserver pkg/apis/cel/config.go MaxEvaluatedMessageExpressionSizeBytes
MAX_EVALUATED_MESSAGE_BYTES = 5 * 1024
_OUT_OF_BUDGET = ("validation failed due to running out of cost budget, no further "
                  "validation rules will be run")
STATIC_ESTIMATED_CRD_COST_LIMIT = 100_000_000



@dataclass
class CompiledRule:
    """One compiled entry of x-kubernetes-validations."""

    rule: Mapping[str, Any]
    program: Any = None
    message_program: Any = None
    uses_old_self: bool = False
    cost: float = 0.0
    message_cost: float = 0.0
    error: str = ""
    message_error: str = ""
    field_path: str = ""


def compile_rule(rule: Mapping[str, Any], schema: Mapping[str, Any], root: bool = False,
                 preexisting: frozenset[str] | None = None) -> CompiledRule:
    """Compile ``rule`` for a node of ``schema``; failures land in ``.error``. At a CRD's
    write, ``preexisting`` holds the old CRD's expressions: the others are checked by cel-go's
    parser first (``_cel_go_syntax``)."""
    out = CompiledRule(rule)
    self_type = type_of_schema(schema, root=root)
    # compilation.go: under optionalOldSelf, oldSelf is declared optional_type(self's type)
    old_type = T("optional", elem=self_type) if rule.get("optionalOldSelf") else self_type
    variables = {"self": self_type, "oldSelf": old_type}
    text = str(rule.get("rule") or "")
    try:
        _cel_go_syntax(text, preexisting)
        tree = parse(text)
        result, uses = celdeep.run_if(is_deep(tree), check, text, tree, variables, "bool")
        out.program = program(tree)
        out.uses_old_self = "oldSelf" in uses
        out.cost = result.cost
    except ProgramError as exc:
        out.error = f"program instantiation failed: {exc.detail}"
    except CheckError as exc:
        out.error = exc.detail if exc.detail.startswith("cel expression") \
            else f"compilation failed: {exc.detail}"
    except RecursionError:
        out.error = f"compilation failed: {TOO_DEEP}"
    expr = str(rule.get("messageExpression") or "").strip()
    if expr:
        try:
            _cel_go_syntax(expr, preexisting)
            tree = parse(expr)
            result, _ = celdeep.run_if(is_deep(tree), check, expr, tree, variables, "string")
            out.message_program = program(tree)
            out.message_cost = result.cost
        except ProgramError as exc:
            out.message_error = f"messageExpression instantiation failed: {exc.detail}"
        except CheckError as exc:
            out.message_error = ("messageExpression must evaluate to a string"
                                 if exc.detail.startswith("cel expression")
                                 else f"messageExpression compilation failed: {exc.detail}")
        except RecursionError:
            out.message_error = f"messageExpression compilation failed: {TOO_DEEP}"
    fp = rule.get("fieldPath")
    if fp:
        found = valid_field_path(str(fp), schema)
        out.field_path = found[0] if found else ""
    return out


def _cel_go_syntax(text: str, preexisting: frozenset[str] | None) -> None:
    """CheckError with the syntax errors cel-go's parser finds in ``text``, a new or changed
    rule or messageExpression at a CRD's write (``preexisting``: the old CRD's, its
    preexistingExpressions; None: not a write), which celpy's parser may take (``in`` as a
    name, ``1.``, an escape such as ``'\\q'``): they are what env.Compile reports first.
    Only writes pay the ANTLR parse (milliseconds a rule), and only for what they change;
    objects' writes and a start compile with celpy alone."""
    if (preexisting is None or text in preexisting or not text.strip()
            or len(text) > CEL_GO_SYNTAX_CHECK_CODE_POINTS):
        return
    from . import celsyntax  # (the ANTLR runtime, loaded by the first CRD write that asks)

    reported = celsyntax.syntax_errors(text)
    if reported:
        raise CheckError(celsyntax.display(text, reported))


def cost_error_message(name: str, cost: float, limit: int) -> str:
    """``getCostErrorMessage`` of the apiextensions validation."""
    factor = cost / limit
    if factor > 100.0:
        shown = "more than 100x"
    elif factor < 1.5:
        shown = f"{factor:f}x"
    else:
        shown = f"{factor:.1f}x"
    return (f"{name} exceeds budget by factor of {shown} (try simplifying the rule, or adding "
            "maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)")


# -- evaluation ---------------------------------------------------------------------------------

def _rule_error_string(rule: Mapping[str, Any]) -> str:
    msg = str(rule.get("message") or "").strip()
    return msg or str(rule.get("rule") or "").strip()


def _message_or_default(rule: Mapping[str, Any]) -> str:
    msg = str(rule.get("message") or "").strip()
    return msg or f"failed rule: {_rule_error_string(rule)}"


def _error_for_reason(path: str, stype: str, detail: str, reason: Any) -> Cause:
    if reason == "FieldValueForbidden":
        return fe.forbidden(path, detail)
    if reason == "FieldValueRequired":
        return fe.required(path, detail)
    if reason == "FieldValueDuplicate":
        return fe.duplicate(path, stype)
    return fe.invalid(path, stype, detail)


def _root_self(value: Any) -> Any:
    """At a resource root CEL sees only name and generateName of metadata."""
    if isinstance(value, dict) and isinstance(value.get("metadata"), dict):
        meta = {k: v for k, v in value["metadata"].items() if k in ("name", "generateName")}
        return {**value, "metadata": meta}
    return value


@dataclass
class _Run:
    """One validation of an object: what is left of its runtime cost budget, and
    ``stopped`` once a rule exhausted a cost limit."""

    remaining: int = RUNTIME_CEL_COST_BUDGET
    stopped: bool = False
    message: str = ""  # the last evaluated messageExpression
    warnings: list[str] = field(default_factory=list)  # the ratcheted failures


class RuleSet:
    """The compiled rules of one schema, keyed by the identity of their schema node."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        self.schema = schema
        self.compiled: dict[int, list[CompiledRule]] = {}
        self._compile(schema, root=True)

    def _compile(self, s: Any, root: bool = False) -> None:
        if not isinstance(s, Mapping):
            return
        rules = s.get("x-kubernetes-validations")
        if rules:
            self.compiled[id(s)] = [compile_rule(r, s, root=root) for r in rules]
        for sub in (s.get("properties") or {}).values():
            self._compile(sub)
        self._compile(s.get("items"))
        self._compile(s.get("additionalProperties"))

    def __bool__(self) -> bool:
        return bool(self.compiled)

    def validate(self, obj: Any, old: Any = MISSING, path: str = "",
                 warnings: list[str] | None = None) -> list[Cause]:
        """Evaluate every rule on ``obj`` (``old``: the stored object on update); the
        failures ratcheted on unchanged values go to ``warnings`` (dropped when None)."""
        correlation = Correlation.root(self.schema, obj, old)
        run = _Run(warnings=[] if warnings is None else warnings)
        return self._walk(self.schema, obj, old, path, run, correlation, root=True)

    def _walk(self, s: Mapping[str, Any], value: Any, old: Any, path: str, run: _Run,
              correlation: Correlation, root: bool = False) -> list[Cause]:
        if value is None or run.stopped:
            return []
        errs = self._node(s, value, old, path, root, run, correlation)
        correlatable = s.get("x-kubernetes-map-type") != "atomic"
        if isinstance(value, dict):
            props = s.get("properties") or {}
            additional = s.get("additionalProperties")
            old_map = old if isinstance(old, dict) and correlatable else {}
            for k, v in value.items():
                # validation.go validateMap: a property is a child (spec.x), an
                # additionalProperties value a key (spec.limits[x])
                sub, sub_path = props.get(k), fe.child(path, k)
                if sub is None and isinstance(additional, Mapping):
                    sub, sub_path = additional, fe.key(path, k)
                if isinstance(sub, Mapping):
                    errs += self._walk(sub, v, old_map.get(k, MISSING), sub_path, run,
                                       correlation.key(k))
        elif isinstance(value, list) and isinstance(s.get("items"), Mapping):
            keys = list(s.get("x-kubernetes-list-map-keys") or [])
            is_map = s.get("x-kubernetes-list-type") == "map" and keys
            old_list = old if isinstance(old, list) and is_map else []
            for i, item in enumerate(value):
                old_item = MISSING
                if is_map and isinstance(item, dict):
                    for o in old_list:
                        if isinstance(o, dict) and all(o.get(k) == item.get(k) for k in keys):
                            old_item = o
                            break
                errs += self._walk(s["items"], item, old_item, fe.index(path, i), run,
                                   correlation.index(i))
        return errs

    def _node(self, s: Mapping[str, Any], value: Any, old: Any, path: str,
              root: bool, run: _Run, correlation: Correlation) -> list[Cause]:
        compiled = self.compiled.get(id(s))
        if not compiled:
            return []
        # the strategies validate with a nil root path, which a field error prints as
        # "<nil>" (field.Path.String); a fieldPath below it is a plain child
        at = path or "<nil>"
        errs: list[Cause] = []
        declared = s.get("type")
        stype = declared if isinstance(declared, str) else ""
        if run.remaining <= 0:
            run.stopped = True
            return [fe.invalid(at, stype, _OUT_OF_BUDGET)]
        self_value = to_cel(_root_self(value) if root else value, s)
        ratchet = correlation.should_ratchet()
        for cr in compiled:
            if cr.program is None:
                continue
            activation: dict[str, Any] = {"self": self_value}
            if cr.uses_old_self:
                if cr.rule.get("optionalOldSelf"):
                    activation["oldSelf"] = OptionalValue(
                        MISSING if old is MISSING else to_cel(_root_self(old) if root else old, s))
                elif old is MISSING:
                    continue
                else:
                    activation["oldSelf"] = to_cel(_root_self(old) if root else old, s)
            try:
                result, failure, cost = cr.program.evaluate_costed(activation)
            except CostLimitExceeded:
                # validation.go validateExpressions: the rule's evaluation is cancelled by
                # cel.CostLimit(PerCallLimit) and no further rule of the object runs
                errs.append(fe.invalid(at, stype, (
                    f"'{COST_LIMIT_EXCEEDED}': no further validation rules will be run due "
                    f"to call cost exceeds limit for rule: {_rule_error_string(cr.rule)}")))
                run.stopped = True
                return errs
            # validation.go: every evaluation's actual cost is drawn from the object's
            # RuntimeCELCostBudget, failed or not
            if cost > run.remaining:
                errs.append(fe.invalid(at, stype, _OUT_OF_BUDGET))
                run.stopped = True
                return errs
            run.remaining -= cost
            if failure is not None:  # evaluation errors are rule failures, worded by cel-go
                text = error_text(failure)
                if text == "no such overload":
                    detail = ("'no such overload': call arguments did not match a supported "
                              "operator, function or macro signature for rule: "
                              + _rule_error_string(cr.rule))
                else:
                    detail = f"{text} evaluating rule: {_rule_error_string(cr.rule)}"
                errs.append(fe.invalid(at, stype, detail))
                continue
            if not isinstance(result, bool | celtypes.BoolType):
                errs.append(fe.invalid(at, stype, "rule did not evaluate to a bool"))
                continue
            if result:
                continue
            field_path = fe.child(path, cr.field_path) if cr.field_path else at
            detail = _message_or_default(cr.rule)
            if cr.message_program is not None:
                stop = self._message(cr, activation, run)
                if stop is not None:  # the budget ran out: Invalid, and no further rule
                    errs.append(fe.invalid(field_path, stype, stop))
                    run.stopped = True
                    return errs
                detail = run.message or detail
            err = _error_for_reason(field_path, stype, detail, cr.rule.get("reason"))
            if ratchet and not cr.uses_old_self:
                # validation.go validateExpressions addErr: a failure on a value equal to its
                # correlated old value is a warning (field.Error.Error()), not an error;
                # evaluation errors above are never ratcheted
                run.warnings.append(f"{err.field}: {err.message}")
            else:
                errs.append(err)
        return errs

    @staticmethod
    def _message(cr: CompiledRule, activation: dict[str, Any], run: _Run) -> str | None:
        """Evaluate the rule's messageExpression into ``run.message`` ("" when it fails
        and the rule's message stands); the error detail when the evaluation exhausted a
        cost limit. validation.go evalMessageExpression."""
        run.message = ""
        try:
            message, failure, cost = cr.message_program.evaluate_costed(activation)
        except CostLimitExceeded:
            source = json.dumps(str(cr.rule.get("messageExpression") or ""))
            return ("no further validation rules will be run due to call cost exceeds limit "
                    f"for messageExpression: {source}")
        if cost > run.remaining:
            return ("messageExpression evaluation failed due to running out of cost budget, "
                    "no further validation rules will be run")
        run.remaining -= cost
        text = str(message).strip() if failure is None and isinstance(message, str) else ""
        if text and "\n" not in text and len(text.encode()) <= MAX_EVALUATED_MESSAGE_BYTES:
            run.message = text
        return None


def cardinality(ancestors: list[Mapping[str, Any]]) -> float:
    """How many times a rule can run per object: the product of enclosing list/map bounds."""
    from .celcost import max_elements

    total = 1.0
    for s in ancestors:
        total *= max_elements(s)
    return total

"""A policy's CEL expressions evaluated for one request, binding and param.

k8s.io/apiserver pkg/admission/plugin/policy/validating/validator.go ``Validate``: the
matchConditions first (a false one skips the policy; an error, when none is false, follows
the failurePolicy), then every validation into a decision, then the auditAnnotations.
Expressions see ``object``, ``oldObject``, ``request``, ``params``, ``namespaceObject`` and
``variables`` (pkg/admission/plugin/cel/activation.go), and ``authorizer``
(:mod:`.authzlib`); a variable is evaluated before the
expressions, in order, and its error is the error of whichever expression reads it
(composition.go: ``composited variable %q fails to evaluate``), so an unread variable's error
is harmless, as Go's lazy evaluation makes it.

Every evaluation's actual cost is drawn from one budget per policy, binding and param
(validator.go Validate, condition.go ForInput, activation.go Evaluate:
``celconfig.RuntimeCELCostBudget``, 10,000,000): the validations spend it first and their
messageExpressions what is left (all of them, as Go's messageFilter evaluates every one);
the auditAnnotations start a budget of their own. An expression whose cost passes what is
left ends the evaluation with Go's "validation failed due to running out of cost budget, no
further validation rules will be run", a decision under the failurePolicy (for the message
budget: every validation's, prefixed "failed messageExpression: "). The match conditions
have a budget of their own (matchconditions/matcher.go Match:
``RuntimeCELCostBudgetMatchConditions``, 2,500,000; running out is an error under the
failurePolicy, or a skip under Ignore). The variables' lazy costs are not drawn here.

This module loads the CEL machinery: it is imported only once a policy matches a request.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from typing import Any

from celpy import celtypes
from celpy.adapter import json_to_cel
from celpy.evaluation import CELEvalError

from setpoint.cluster.admission.policy import authzlib
from setpoint.cluster.apiextensions.schema.cel import MAX_EVALUATED_MESSAGE_BYTES
from setpoint.cluster.apiextensions.schema.cellib import error_text
from setpoint.cluster.apiextensions.schema.celprogram import compile_with_library
from setpoint.cluster.apiextensions.schema.celruntime import PER_CALL_LIMIT, CostLimitExceeded
from setpoint.machinery.objects import Obj

_CEL_TYPE_NAMES = {celtypes.IntType: "int", celtypes.UintType: "uint",
                   celtypes.DoubleType: "double", celtypes.BoolType: "bool",
                   celtypes.BytesType: "bytes", celtypes.ListType: "list",
                   celtypes.MapType: "map", celtypes.DurationType: "google.protobuf.Duration",
                   celtypes.TimestampType: "google.protobuf.Timestamp"}


@dataclass
class Decision:
    """policy_decision.go PolicyDecision: deny (a failed validation or an error under
    failurePolicy Fail) or admit."""

    deny: bool
    message: str = ""
    reason: str = ""
    error: bool = False


@dataclass
class AuditAnnotation:
    key: str
    value: str = ""
    error: str = ""  # an evaluation error under failurePolicy Fail: a denial


@dataclass
class Result:
    decisions: list[Decision] = field(default_factory=list)
    annotations: list[AuditAnnotation] = field(default_factory=list)


# apiserver pkg/apis/cel/config.go
RUNTIME_CEL_COST_BUDGET = 10_000_000
RUNTIME_CEL_COST_BUDGET_MATCH_CONDITIONS = 2_500_000
OUT_OF_BUDGET = ("validation failed due to running out of cost budget, no further validation "
                 "rules will be run")


class _Failure(Exception):
    pass


class _OutOfBudget(Exception):
    pass


@dataclass
class _Budget:
    """What is left of one ForInput's runtime cost budget."""

    remaining: int = RUNTIME_CEL_COST_BUDGET

    def spend(self, cost: int) -> None:
        if cost > self.remaining:
            raise _OutOfBudget
        self.remaining -= cost


@functools.lru_cache(maxsize=512)
def _program(expression: str) -> Any:
    return compile_with_library(expression, authzlib.FUNCTIONS)


def _evaluate(expression: str, activation: dict[str, Any], budget: _Budget | None = None
              ) -> Any:
    """The expression's value; _Failure worded as activation.go's Evaluate; _OutOfBudget
    when its actual cost (an error's too) passes what is left of ``budget``."""
    try:
        program = _program(expression)
    except Exception as exc:  # CheckError, worded as cel-go's
        raise _Failure(f"compilation error: {exc}") from None
    try:
        try:
            value, failure, cost = program.evaluate_costed(activation)
        except CostLimitExceeded as exc:  # cancelled just past the per-call limit
            value, failure, cost = None, exc, PER_CALL_LIMIT + 1
        if budget is not None:
            budget.spend(cost)
        if failure is not None:
            raise failure
        if isinstance(value, Exception):
            raise value
    except _OutOfBudget:
        raise
    except Exception as exc:  # CEL reports its errors in many types
        raise _Failure(f"expression '{expression}' resulted in error: "
                       f"{_short(error_text(exc))}") from None
    return value


def _short(text: str) -> str:
    """celpy's undeclared-reference error without the activation it appends (the whole
    object and request): cel-go names the reference alone."""
    return text.partition(" (in activation")[0]


def _variables(spec: Obj, activation: dict[str, Any]) -> None:
    values: dict[Any, Any] = {}
    activation["variables"] = celtypes.MapType(values)
    for variable in spec.get("variables") or []:
        name = str(variable.get("name", ""))
        try:
            value = _evaluate(str(variable.get("expression", "")), activation)
        except _Failure as exc:
            detail = str(exc).partition("resulted in error: ")[2] or str(exc)
            value = CELEvalError(f"composited variable {json.dumps(name)} fails to evaluate: "
                                 f"{detail}")
        values[celtypes.StringType(name)] = value
        activation["variables"] = celtypes.MapType(values)


def activation(obj: Obj | None, old: Obj | None, request: Obj, params: Obj | None,
               namespace: Obj | None, user: Obj | None, decide: authzlib.Decide
               ) -> dict[str, Any]:
    return {"object": json_to_cel(obj), "oldObject": json_to_cel(old),
            "request": json_to_cel(request), "params": json_to_cel(params),
            "namespaceObject": json_to_cel(namespace),
            "authorizer": authzlib.AuthorizerValue(user or {}, decide)}


def _match_conditions(spec: Obj, activation: dict[str, Any], fail: bool) -> Decision | None:
    """None when every condition holds; an admit (skip) or a deny otherwise
    (matchconditions/matcher.go Match: a false condition wins over another's error)."""
    errors: list[str] = []
    values: list[Any] = []
    budget = _Budget(RUNTIME_CEL_COST_BUDGET_MATCH_CONDITIONS)
    try:  # ForInput evaluates them all before Match reads any
        for condition in spec.get("matchConditions") or []:
            try:
                values.append(_evaluate(str(condition.get("expression", "")), activation,
                                        budget))
            except _Failure as exc:
                values.append(exc)
    except _OutOfBudget:
        return Decision(True, OUT_OF_BUDGET, error=True) if fail else Decision(False)
    for value in values:
        if isinstance(value, _Failure):
            errors.append(str(value))
        elif value is False or (isinstance(value, celtypes.BoolType) and not value):
            return Decision(False)
    if not errors:
        return None
    if not fail:
        return Decision(False)
    unique = list(dict.fromkeys(errors))  # utilerrors.NewAggregate's Error()
    return Decision(True, unique[0] if len(unique) == 1 else f"[{', '.join(unique)}]",
                    error=True)


def _message_values(validations: list[Obj], activation: dict[str, Any], budget: _Budget
                    ) -> list[Any]:
    """Every validation's messageExpression value (None: none, or an error), evaluated
    whether or not it failed, as Go's messageFilter.ForInput; _OutOfBudget propagates."""
    values: list[Any] = []
    for validation in validations:
        source = validation.get("messageExpression")
        try:
            values.append(_evaluate(str(source), activation, budget) if source else None)
        except _Failure:
            values.append(None)
    return values


def _message(validation: Obj, value: Any) -> str:
    """validator.go: the messageExpression's string when usable, else message, else the
    expression."""
    message = ""
    if validation.get("messageExpression") and isinstance(value, str):
        message = value.strip()
        if len(message.encode()) > MAX_EVALUATED_MESSAGE_BYTES or "\n" in message:
            message = ""
    if not message:
        message = str(validation.get("message") or "").strip()
    if not message:
        message = f"failed expression: {str(validation.get('expression', '')).strip()}"
    return message


def validate(spec: Obj, activation: dict[str, Any]) -> Result:
    """validator.go Validate for one param."""
    fail = spec.get("failurePolicy", "Fail") != "Ignore"
    _variables(spec, activation)
    skipped = _match_conditions(spec, activation, fail)
    if skipped is not None:
        return Result([skipped] if skipped.deny else [])
    result = Result()
    validations = [v or {} for v in spec.get("validations") or []]
    budget = _Budget()
    outcomes: list[Any] = []
    try:
        for validation in validations:
            try:
                outcomes.append(_evaluate(str(validation.get("expression", "")), activation,
                                          budget))
            except _Failure as exc:
                outcomes.append(exc)
    except _OutOfBudget:  # ForInput's error: the policy's one decision
        return Result([Decision(fail, OUT_OF_BUDGET, error=True)])
    try:
        messages = _message_values(validations, activation, budget)
    except _OutOfBudget:
        messages = []
    for i, (validation, value) in enumerate(zip(validations, outcomes, strict=True)):
        if isinstance(value, _Failure):
            result.decisions.append(Decision(fail, str(value), error=True))
        elif len(messages) < len(validations):  # the message budget ran out
            result.decisions.append(Decision(fail, f"failed messageExpression: {OUT_OF_BUDGET}",
                                             error=True))
        elif value is True or (isinstance(value, celtypes.BoolType) and value):
            result.decisions.append(Decision(False))
        else:
            result.decisions.append(Decision(True, _message(validation, messages[i]),
                                             str(validation.get("reason") or "Invalid")))
    annotation_budget = _Budget()
    try:
        for annotation in spec.get("auditAnnotations") or []:
            result.annotations.append(_audit_annotation(annotation, activation, fail,
                                                        annotation_budget))
    except _OutOfBudget:
        return Result([Decision(fail, OUT_OF_BUDGET, error=True)])
    return result


def _audit_annotation(annotation: Obj, activation: dict[str, Any], fail: bool,
                      budget: _Budget) -> AuditAnnotation:
    key = str(annotation.get("key", ""))
    expression = str(annotation.get("valueExpression", ""))
    try:
        value = _evaluate(expression, activation, budget)
    except _Failure as exc:
        return AuditAnnotation(key, error=str(exc) if fail else "")
    if value is None or isinstance(value, type(None)):
        return AuditAnnotation(key)
    if isinstance(value, str):
        return AuditAnnotation(key, value.strip())
    type_name = next((n for t, n in _CEL_TYPE_NAMES.items() if isinstance(value, t)), "dyn")
    return AuditAnnotation(key, error=f"valueExpression '{expression}' resulted in unsupported "
                           f"return type: {type_name}. Return type must be either string or "
                           "null.")

"""A policy's CEL expressions evaluated for one request, binding and param.

k8s.io/apiserver pkg/admission/plugin/policy/validating/validator.go ``Validate``: the
matchConditions first (a false one skips the policy; an error, when none is false, follows
the failurePolicy), then every validation into a decision, then the auditAnnotations.
Expressions see ``object``, ``oldObject``, ``request``, ``params``, ``namespaceObject`` and
``variables`` (pkg/admission/plugin/cel/activation.go), and ``authorizer``
(:mod:`.authzlib`); a variable is evaluated when an expression first reads it, once per
filter (composition.go's lazy map), and its error is the error of whichever expression reads
it (``composited variable %q fails to evaluate``), so an unread variable's error is harmless.

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
failurePolicy, or a skip under Ignore). A variable's cost is drawn from the budget of the
expression that first read it, before that expression's own (activation.go Evaluate's
``compositionCtx.GetAndResetCost``).

This module loads the CEL machinery: it is imported only once a policy matches a request.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from typing import Any, cast

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
    when the variables it read first (their lazy evaluation's cost, charged before its own
    as Evaluate's ``compositionCtx.GetAndResetCost``) or its actual cost (an error's too)
    pass what is left of ``budget``."""
    try:
        program = _program(expression)
    except Exception as exc:  # CheckError, worded as cel-go's
        raise _Failure(f"compilation error: {exc}") from None
    try:
        value, failure, cost = _run(program, activation)
        variables = activation.get("variables")
        if budget is not None and isinstance(variables, _Variables):
            budget.spend(variables.take_cost())
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


def _run(program: Any, activation: dict[str, Any]) -> tuple[Any, Exception | None, int]:
    try:
        value, failure, cost = program.evaluate_costed(activation)
    except CostLimitExceeded as exc:  # cancelled just past the per-call limit
        value, failure, cost = None, exc, PER_CALL_LIMIT + 1
    return value, failure, cost


def _short(text: str) -> str:
    """celpy's undeclared-reference error without the activation it appends (the whole
    object and request): cel-go names the reference alone."""
    return text.partition(" (in activation")[0]


class _Variables(celtypes.MapType):
    """composition.go ``compositionContext.Variables``: one ForInput's ``variables``, each
    evaluated when an expression first reads it (lazy.MapValue keeps the value for the rest
    of that ForInput), its cost run up until the reading expression is charged. A variable
    sees the ForInput's activation: a messageExpression's or an auditAnnotation's has no
    ``authorizer`` (validator.go passes theirs no Authorizer)."""

    def __init__(self, variables: list[Obj], activation: dict[str, Any]) -> None:
        super().__init__({})
        self._sources = {str(v.get("name", "")): str(v.get("expression", ""))
                         for v in variables}
        self._activation = activation
        self._cost = 0

    def take_cost(self) -> int:
        """GetAndResetCost."""
        cost, self._cost = self._cost, 0
        return cost

    def __missing__(self, key: Any) -> Any:
        name = str(key)
        if name not in self._sources:
            raise KeyError(key)
        self[celtypes.StringType(name)] = cast(Any, CELEvalError(  # one reading itself
            f"composited variable {json.dumps(name)} fails to evaluate: cycle"))
        value = self._callback(name)
        self[celtypes.StringType(name)] = value
        return value

    def _callback(self, name: str) -> Any:
        """variableAccessor.Callback: Go's words for a variable that does not compile or
        fails to evaluate; its cost is reported either way."""
        try:
            program = _program(self._sources[name])
        except Exception as exc:  # CheckError
            return CELEvalError(f"composited variable {json.dumps(name)} fails to compile: "
                                f"compilation failed: {exc}")
        value, failure, cost = _run(program, self._activation)
        self._cost += cost
        if failure is None and isinstance(value, Exception):
            failure = value
        if failure is not None:
            return CELEvalError(f"composited variable {json.dumps(name)} fails to evaluate: "
                                f"{_short(error_text(failure))}")
        return value


def for_input(spec: Obj, base: dict[str, Any], *, authorizer: bool = True,
              **namespace: Obj | None) -> dict[str, Any]:
    """condition.go ForInput's activation (newActivation): ``base`` with fresh lazy
    ``variables``; without ``authorizer`` (and its ``requestResource``) for the filters
    validator.go gives no Authorizer; ``namespaceObject=`` for a filter given another
    namespace."""
    activation = dict(base)
    if not authorizer:
        activation.pop("authorizer", None)
    if "namespaceObject" in namespace:
        activation["namespaceObject"] = json_to_cel(namespace["namespaceObject"])
    activation["variables"] = _Variables(list(spec.get("variables") or []), activation)
    return activation


def activation(obj: Obj | None, old: Obj | None, request: Obj, params: Obj | None,
               namespace: Obj | None, user: Obj | None, decide: authzlib.Decide
               ) -> dict[str, Any]:
    """activation.go newActivation: ``authorizer`` asks about the request's user and
    ``authorizer.requestResource`` (NewResourceAuthorizerVal) is its check prefilled with the
    request's resource, subresource, namespace and name."""
    resource = request.get("requestResource") or {}
    authorizer = authzlib.authorizer(user or {}, decide, authzlib.ResourceCheck(
        None, str(resource.get("group", "")), str(resource.get("resource", "")),
        str(request.get("requestSubResource") or ""), str(request.get("namespace") or ""),
        str(request.get("name") or "")))
    return {"object": json_to_cel(obj), "oldObject": json_to_cel(old),
            "request": json_to_cel(request), "params": json_to_cel(params),
            "namespaceObject": json_to_cel(namespace), "authorizer": authorizer}


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


def validate(spec: Obj, base: dict[str, Any], namespace: Obj | None = None,
             match_request: Obj | None = None) -> Result:
    """validator.go Validate for one param. Each filter's ForInput has its own activation
    and so its own lazy variables: the matchConditions' without a namespace and with
    ``match_request`` (matchconditions/matcher.go Match passes nil and builds its request
    with the request's own resource), the messageExpressions' without the authorizer, the
    auditAnnotations' without the authorizer and with the whole ``namespace`` (Validate
    passes it, not CreateNamespaceObject's copy)."""
    fail = spec.get("failurePolicy", "Fail") != "Ignore"
    conditions = for_input(spec, base, namespaceObject=None)
    if match_request is not None:
        conditions["request"] = json_to_cel(match_request)
    skipped = _match_conditions(spec, conditions, fail)
    if skipped is not None:
        return Result([skipped] if skipped.deny else [])
    result = Result()
    validations = [v or {} for v in spec.get("validations") or []]
    activation = for_input(spec, base)
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
        messages = _message_values(validations, for_input(spec, base, authorizer=False),
                                   budget)
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
    activation = for_input(spec, base, authorizer=False, namespaceObject=namespace)
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

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


class _Failure(Exception):
    pass


@functools.lru_cache(maxsize=512)
def _program(expression: str) -> Any:
    return compile_with_library(expression, authzlib.FUNCTIONS)


def _evaluate(expression: str, activation: dict[str, Any]) -> Any:
    """The expression's value; _Failure worded as activation.go's Evaluate."""
    try:
        program = _program(expression)
    except Exception as exc:  # CheckError, worded as cel-go's
        raise _Failure(f"compilation error: {exc}") from None
    try:
        value = program.evaluate(activation)
        if isinstance(value, Exception):
            raise value
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
    for condition in spec.get("matchConditions") or []:
        try:
            value = _evaluate(str(condition.get("expression", "")), activation)
        except _Failure as exc:
            errors.append(str(exc))
            continue
        if value is False or (isinstance(value, celtypes.BoolType) and not value):
            return Decision(False)
    if not errors:
        return None
    if not fail:
        return Decision(False)
    unique = list(dict.fromkeys(errors))  # utilerrors.NewAggregate's Error()
    return Decision(True, unique[0] if len(unique) == 1 else f"[{', '.join(unique)}]",
                    error=True)


def _message(validation: Obj, activation: dict[str, Any]) -> str:
    """validator.go: the messageExpression's string when usable, else message, else the
    expression."""
    message = ""
    source = validation.get("messageExpression")
    if source:
        try:
            value = _evaluate(str(source), activation)
        except _Failure:
            value = None
        if isinstance(value, str):
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
    for validation in spec.get("validations") or []:
        try:
            value = _evaluate(str(validation.get("expression", "")), activation)
        except _Failure as exc:
            result.decisions.append(Decision(fail, str(exc), error=True))
            continue
        if value is True or (isinstance(value, celtypes.BoolType) and value):
            result.decisions.append(Decision(False))
            continue
        result.decisions.append(Decision(True, _message(validation, activation),
                                         str(validation.get("reason") or "Invalid")))
    for annotation in spec.get("auditAnnotations") or []:
        result.annotations.append(_audit_annotation(annotation, activation, fail))
    return result


def _audit_annotation(annotation: Obj, activation: dict[str, Any], fail: bool
                      ) -> AuditAnnotation:
    key = str(annotation.get("key", ""))
    expression = str(annotation.get("valueExpression", ""))
    try:
        value = _evaluate(expression, activation)
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

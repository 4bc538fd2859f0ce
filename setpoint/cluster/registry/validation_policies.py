"""Validation of ValidatingAdmissionPolicies and their bindings
(``pkg/apis/admissionregistration/validation/validation.go``: ``ValidateValidatingAdmissionPolicy``,
``ValidateValidatingAdmissionPolicyBinding`` and their ``...Update`` forms).

Each CEL expression is compiled in its field's environment (validateValidation,
validateMessageExpression, validateAuditAnnotation, validateVariable,
validateMatchConditionsExpression): ``params`` declared only with a paramKind,
``authorizer`` nowhere in a messageExpression, ``variables`` only when the policy has some
and never in a matchCondition. On update an expression the old policy held in the same
place (findValidatingPolicyPreexistingExpressions) is compiled in the StoredExpressions
environment, the others in NewExpressions (which lacks the 1.32 libraries); a variable counts
as stored only when a validation of the old policy has its text (Go's check). Checking against
the matched resources' schemas is the status controller's (typechecking.go: warnings, never a
refusal).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from setpoint.cluster.registry import validation_admission as admission
from setpoint.machinery import conditions, labels, names
from setpoint.machinery import fielderrors as fe
from setpoint.machinery.errors import Cause
from setpoint.machinery.objects import Obj

MAX_AUDIT_ANNOTATIONS = 20
# use a 5kb limit the CEL expression (Go's maxAuditAnnotationValueExpressionLength)
MAX_AUDIT_ANNOTATION_VALUE_EXPRESSION_LENGTH = 5 * 1024
VALIDATION_REASONS = ("Forbidden", "Invalid", "RequestEntityTooLarge")
VALIDATION_ACTIONS = ("Audit", "Deny", "Warn")
PARAMETER_NOT_FOUND_ACTIONS = ("Deny", "Allow")
_CEL_IDENT = re.compile(r"^[_a-zA-Z][_a-zA-Z0-9]*$")
_CEL_RESERVED = {"true", "false", "null", "in", "as", "break", "const", "continue", "else",
                 "for", "function", "if", "import", "let", "loop", "package", "namespace",
                 "return", "var", "void", "while"}
_NEWLINES = re.compile(r"[\n\r]+")


@dataclass(frozen=True)
class _Environment:
    """What one policy's expressions are compiled with: the optional declarations and
    the old policy's expressions by place (preexistingExpressions)."""

    params: bool = False
    variables: bool = False
    validations: frozenset[str] = field(default_factory=frozenset)
    messages: frozenset[str] = field(default_factory=frozenset)
    annotations: frozenset[str] = field(default_factory=frozenset)
    match_conditions: frozenset[str] | None = frozenset()
    # the variables whose output type cel-go makes dyn for sure (composition.go AddField:
    # ``variables.<name>`` has the variable's output type)
    dyn_variables: frozenset[str] = frozenset()

    def declared(self, *, authorizer: bool = True, variables: bool = True
                 ) -> tuple[str, ...]:
        return (*admission.BASE_VARIABLES, *(("params",) if self.params else ()),
                *(("authorizer",) if authorizer else ()),
                *(("variables",) if variables and self.variables else ()))


def _preexisting(old: Obj | None) -> dict[str, frozenset[str]]:
    """findValidatingPolicyPreexistingExpressions."""
    spec = (old or {}).get("spec") or {}
    validations = [v or {} for v in spec.get("validations") or []]
    return {
        "validations": frozenset(str(v.get("expression") or "") for v in validations),
        "messages": frozenset(str(v.get("messageExpression") or "") for v in validations
                              if v.get("messageExpression")),
        "annotations": frozenset(str((a or {}).get("valueExpression") or "")
                                 for a in spec.get("auditAnnotations") or []),
        "match_conditions": frozenset(str((c or {}).get("expression") or "")
                                      for c in spec.get("matchConditions") or []),
    }


def _named_rule(rule: Obj, path: str) -> list[Cause]:
    """validateNamedRuleWithOperations: resource names as path segments, unique; then the
    rule as a webhook's (subresources allowed)."""
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, name in enumerate(rule.get("resourceNames") or []):
        p = fe.index(f"{path}.resourceNames", i)
        causes.extend(fe.invalid(p, name, m) for m in names.validate_path_segment_name(name, False))
        if name in seen:
            causes.append(fe.duplicate(p, name))
        seen.add(name)
    return causes + admission.validate_rule_with_operations(rule, path)


def _match_resources(match: Any, path: str) -> list[Cause]:
    """validateMatchResources; selectors validated strictly (the type came after #99139)."""
    if match is None:
        return []
    causes: list[Cause] = []
    policy = match.get("matchPolicy")
    if policy is None:
        causes.append(fe.required(f"{path}.matchPolicy"))
    elif policy not in admission.MATCH_POLICIES:
        causes.append(fe.not_supported(f"{path}.matchPolicy", policy, admission.MATCH_POLICIES))
    for key in ("namespaceSelector", "objectSelector"):
        if match.get(key) is None:
            causes.append(fe.required(f"{path}.{key}"))
        else:
            causes.extend(labels.validate_label_selector(match[key], f"{path}.{key}"))
    for key in ("resourceRules", "excludeResourceRules"):
        for i, rule in enumerate(match.get(key) or []):
            causes.extend(_named_rule(rule or {}, fe.index(f"{path}.{key}", i)))
    return causes


def _param_kind(kind: Obj, path: str) -> list[Cause]:
    causes: list[Cause] = []
    api_version = str(kind.get("apiVersion") or "")
    if not api_version:
        causes.append(fe.required(f"{path}.apiVersion"))
    elif api_version.count("/") > 1:
        causes.append(fe.invalid(f"{path}.apiVersion", api_version,
                                 f"unexpected GroupVersion string: {api_version}"))
    else:
        group, _, version = api_version.rpartition("/")
        if api_version == "/":
            group = version = ""
        if group:
            errs = names.is_dns1123_subdomain(group)
            if errs:
                causes.append(fe.invalid(f"{path}.apiVersion", group, ",".join(errs)))
        if not version:
            causes.append(fe.invalid(f"{path}.apiVersion", api_version,
                                     "version must be specified"))
        else:
            errs = names.is_dns1035_label(version)
            if errs:
                causes.append(fe.invalid(f"{path}.apiVersion", version, ",".join(errs)))
    kind_name = str(kind.get("kind") or "")
    if not kind_name:
        causes.append(fe.required(f"{path}.kind"))
    else:
        errs = names.is_dns1035_label(kind_name.lower())
        if errs:
            causes.append(fe.invalid(f"{path}.kind", kind_name,
                                     "may have mixed case, but should otherwise match: "
                                     + ",".join(errs)))
    return causes


def _dyn_variables(variables: list[Obj]) -> frozenset[str]:
    """The variables typed dyn for sure, each seeing the earlier ones'."""
    from setpoint.cluster.apiextensions.schema.celprogram import CheckError

    dyn: set[str] = set()
    for variable in variables:
        expression = str((variable or {}).get("expression") or "")
        try:
            if expression.strip() and admission.certainly_dyn(expression, frozenset(dyn)):
                dyn.add(str(variable.get("name") or ""))
        except CheckError:  # a syntax error: refused at its own path
            continue
    return frozenset(dyn)


def _variable(variable: Obj, path: str, env: _Environment) -> list[Cause]:
    causes: list[Cause] = []
    name = str(variable.get("name") or "")
    if not name.strip():
        causes.append(fe.required(f"{path}.name", "name is not specified"))
    elif not _CEL_IDENT.match(name) or name in _CEL_RESERVED:
        causes.append(fe.invalid(f"{path}.name", name, "name is not a valid CEL identifier"))
    expression = str(variable.get("expression") or "")
    if not expression.strip():
        causes.append(fe.required(f"{path}.expression", "expression is not specified"))
    else:
        # (declared ``variables``: the composited compiler, the earlier ones by then stored)
        causes.extend(admission.validate_cel(f"{path}.expression", expression, (),
                                             env.declared(),
                                             new=expression not in env.validations))
    return causes


def _validation(validation: Obj, path: str, env: _Environment) -> list[Cause]:
    causes: list[Cause] = []
    expression = str(validation.get("expression") or "")
    if not expression.strip():
        causes.append(fe.required(f"{path}.expression", "expression is not specified"))
    else:
        causes.extend(admission.validate_cel(f"{path}.expression", expression, ("bool",),
                                             env.declared(),
                                             new=expression not in env.validations,
                                             dyn_variables=env.dyn_variables))
    message_expression = str(validation.get("messageExpression") or "")
    if message_expression and not message_expression.strip():
        causes.append(fe.invalid(f"{path}.messageExpression", message_expression,
                                 "must be non-empty if specified"))
    elif message_expression.strip():
        # (the untrimmed expression, so that the compiler's column is right)
        causes.extend(admission.validate_cel(
            f"{path}.messageExpression", message_expression, ("string",),
            env.declared(authorizer=False), new=message_expression not in env.messages,
            dyn_variables=env.dyn_variables))
    message = str(validation.get("message") or "")
    if message and not message.strip():
        causes.append(fe.invalid(f"{path}.message", message,
                                 "message must be non-empty if specified"))
    elif _NEWLINES.search(message.strip()):
        causes.append(fe.invalid(f"{path}.message", message,
                                 "message must not contain line breaks"))
    reason = validation.get("reason")
    if reason is not None and reason not in VALIDATION_REASONS:
        causes.append(fe.not_supported(f"{path}.reason", reason, VALIDATION_REASONS))
    return causes


def _audit_annotation(policy_name: str, annotation: Obj, path: str, env: _Environment
                      ) -> list[Cause]:
    causes: list[Cause] = []
    key = str(annotation.get("key") or "")
    if policy_name:
        qualified = f"{policy_name}/{key}"
        causes.extend(fe.invalid(f"{path}.key", qualified, m)
                      for m in names.is_qualified_name(qualified))
    else:
        causes.append(fe.invalid(f"{path}.key", key, "requires metadata.name be non-empty"))
    value_expression = str(annotation.get("valueExpression") or "")
    trimmed = value_expression.strip()
    if not trimmed:
        causes.append(fe.required(f"{path}.valueExpression", "valueExpression is not specified"))
    elif len(trimmed.encode()) > MAX_AUDIT_ANNOTATION_VALUE_EXPRESSION_LENGTH:
        causes.append(fe.required(
            f"{path}.valueExpression",
            f"must not exceed {MAX_AUDIT_ANNOTATION_VALUE_EXPRESSION_LENGTH} bytes in length"))
    else:
        error = admission.cel_compile_error(trimmed, ("string", "null_type"), env.declared(),
                                            new=value_expression not in env.annotations,
                                            dyn_variables=env.dyn_variables)
        if error is not None:
            causes.append(fe.invalid(f"{path}.valueExpression", value_expression, error))
    return causes


def _go_audit_annotations(annotations: list[Any]) -> fe.GoValue:
    """Go's %#v of the internal []admissionregistration.AuditAnnotation."""
    items = ", ".join(
        f"admissionregistration.AuditAnnotation{{Key:{fe.go_quote(str(a.get('key') or ''))}, "
        f"ValueExpression:{fe.go_quote(str(a.get('valueExpression') or ''))}}}"
        for a in (x or {} for x in annotations))
    return fe.GoValue(f"[]admissionregistration.AuditAnnotation{{{items}}}")


def _policy(obj: Obj, *, ignore_match_conditions: bool, old: Obj | None = None
            ) -> list[Cause]:
    spec = obj.get("spec") or {}
    causes: list[Cause] = []
    env = _Environment(params=spec.get("paramKind") is not None,
                       variables=bool(spec.get("variables")),
                       dyn_variables=_dyn_variables(spec.get("variables") or []),
                       **_preexisting(old))
    failure = spec.get("failurePolicy")
    if failure is None:
        causes.append(fe.required("spec.failurePolicy"))
    elif failure not in admission.FAILURE_POLICIES:
        causes.append(fe.not_supported("spec.failurePolicy", failure, admission.FAILURE_POLICIES))
    if spec.get("paramKind") is not None:
        causes.extend(_param_kind(spec["paramKind"], "spec.paramKind"))
    match = spec.get("matchConstraints")
    if match is None:
        causes.append(fe.required("spec.matchConstraints"))
    else:
        causes.extend(_match_resources(match, "spec.matchConstraints"))
        # at least one resourceRule gives the expressions their type information
        if not match.get("resourceRules"):
            causes.append(fe.required("spec.matchConstraints.resourceRules"))
    if not ignore_match_conditions:
        causes.extend(admission.validate_match_conditions(
            list(spec.get("matchConditions") or []), "spec.matchConditions",
            env.declared(variables=False), env.match_conditions))
    for i, variable in enumerate(spec.get("variables") or []):
        causes.extend(_variable(variable or {}, fe.index("spec.variables", i), env))
    validations = list(spec.get("validations") or [])
    audit_annotations = spec.get("auditAnnotations")
    if not validations and not audit_annotations:
        detail = "validations or auditAnnotations must contain at least one item"
        causes.append(fe.required("spec.validations", detail))
        causes.append(fe.required("spec.auditAnnotations", detail))
        return causes
    for i, validation in enumerate(validations):
        causes.extend(_validation(validation or {}, fe.index("spec.validations", i), env))
    if audit_annotations is not None:
        if len(audit_annotations) > MAX_AUDIT_ANNOTATIONS:
            causes.append(fe.invalid("spec.auditAnnotations", _go_audit_annotations(
                audit_annotations), f"must not have more than {MAX_AUDIT_ANNOTATIONS} "
                                    "auditAnnotations"))
        policy_name = str((obj.get("metadata") or {}).get("name") or "")
        keys: set[str] = set()
        for i, annotation in enumerate(audit_annotations):
            path = fe.index("spec.auditAnnotations", i)
            causes.extend(_audit_annotation(policy_name, annotation or {}, path, env))
            key = str((annotation or {}).get("key") or "")
            if key in keys:
                causes.append(fe.duplicate(f"{path}.key", key))
            keys.add(key)
    return causes


def validate_validating_admission_policy(obj: Obj) -> list[Cause]:
    return _policy(obj, ignore_match_conditions=False)


def validate_validating_admission_policy_update(new: Obj, old: Obj) -> list[Cause]:
    """ValidateValidatingAdmissionPolicyUpdate: the new policy whole, its match conditions
    left alone when neither they nor the paramKind changed
    (ignoreValidatingAdmissionPolicyMatchConditions)."""
    new_spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    unchanged = (new_spec.get("paramKind") == old_spec.get("paramKind")
                 and (new_spec.get("matchConditions") or None)
                 == (old_spec.get("matchConditions") or None))
    return _policy(new, ignore_match_conditions=unchanged, old=old)


def _param_ref(ref: Any, path: str) -> list[Cause]:
    if ref is None:
        return []
    causes: list[Cause] = []
    name = str(ref.get("name") or "")
    selector = ref.get("selector")
    exclusive = "name and selector are mutually exclusive"
    if name:
        causes.extend(fe.invalid(f"{path}.name", name, m)
                      for m in names.validate_path_segment_name(name, False))
        if selector is not None:
            causes.append(fe.forbidden(f"{path}.name", exclusive))
    if selector is not None:
        causes.extend(labels.validate_label_selector(selector, f"{path}.selector"))
        if name:
            causes.append(fe.forbidden(f"{path}.selector", exclusive))
    if not name and selector is None:
        causes.append(fe.required(path, "one of name or selector must be specified"))
    action = ref.get("parameterNotFoundAction")
    if not action:
        causes.append(fe.required(f"{path}.parameterNotFoundAction"))
    elif action not in PARAMETER_NOT_FOUND_ACTIONS:
        # (Go passes the pointer: NotSupported shows the value through it)
        causes.append(fe.not_supported(f"{path}.parameterNotFoundAction", action,
                                       PARAMETER_NOT_FOUND_ACTIONS))
    return causes


def _validation_actions(actions: list[Any], path: str) -> list[Cause]:
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, action in enumerate(actions):
        if action not in VALIDATION_ACTIONS:
            causes.append(fe.not_supported(fe.index(path, i), action, VALIDATION_ACTIONS))
        if action in seen:
            causes.append(fe.duplicate(fe.index(path, i), action))
        seen.add(action)
    if "Deny" in seen and "Warn" in seen:
        shown = ", ".join(fe.go_quote(str(a)) for a in actions)
        go_actions = fe.GoValue(f"[]admissionregistration.ValidationAction{{{shown}}}")
        causes.append(fe.invalid(path, go_actions,
                                 "must not contain both Deny and Warn (repeating the same "
                                 "validation failure information in the API response and "
                                 "headers serves no purpose)"))
    if not seen:
        causes.append(fe.required(path, "at least one validation action is required"))
    return causes


def validate_validating_admission_policy_binding(obj: Obj) -> list[Cause]:
    spec = obj.get("spec") or {}
    causes: list[Cause] = []
    policy_name = str(spec.get("policyName") or "")
    if not policy_name:
        causes.append(fe.required("spec.policyName"))
    else:
        causes.extend(fe.invalid("spec.policyName", policy_name, m)
                      for m in names.name_is_dns_subdomain(policy_name, False))
    causes.extend(_param_ref(spec.get("paramRef"), "spec.paramRef"))
    # (Go's path has the typo: fldPath.Child("matchResouces"))
    causes.extend(_match_resources(spec.get("matchResources"), "spec.matchResouces"))
    causes.extend(_validation_actions(list(spec.get("validationActions") or []),
                                      "spec.validationActions"))
    return causes


def validate_validating_admission_policy_status_update(new: Obj, old: Obj) -> list[Cause]:
    """ValidateValidatingAdmissionPolicyStatusUpdate: each expression warning's warning and
    field reference (whose JSONPath syntax is not checked here), then the conditions."""
    status: Obj = new["status"] if isinstance(new.get("status"), dict) else {}
    causes: list[Cause] = []
    type_checking = status.get("typeChecking")
    if isinstance(type_checking, dict):
        path = "status.typeChecking.expressionWarnings"
        for i, warning in enumerate(type_checking.get("expressionWarnings") or []):
            warning = warning if isinstance(warning, dict) else {}
            if not warning.get("warning"):
                causes.append(fe.required(f"{fe.index(path, i)}.warning"))
            if not str(warning.get("fieldRef") or "").strip():
                causes.append(fe.required(f"{fe.index(path, i)}.fieldRef"))
    return causes + conditions.validate_conditions(status.get("conditions"),
                                                   "status.conditions")

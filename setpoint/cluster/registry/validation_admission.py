"""Validation of Mutating/ValidatingWebhookConfigurations
(``pkg/apis/admissionregistration/validation``): fully qualified unique webhook names,
rules, policies, side effects, timeouts, selectors, the client config and match conditions.

Updates are held to the same rules (the apiserver relaxes a few of them for objects stored
before they applied, which this server never holds).
"""

from __future__ import annotations

import re
from typing import Any

from setpoint.cluster.apiextensions.schema.webhookconfig import (
    validate_webhook_service as _service,
)
from setpoint.cluster.apiextensions.schema.webhookconfig import validate_webhook_url as _url
from setpoint.machinery import fielderrors as fe
from setpoint.machinery import labels, names
from setpoint.machinery.errors import Cause
from setpoint.machinery.objects import Obj

REVIEW_VERSIONS = ("v1", "v1beta1")
FAILURE_POLICIES = ("Fail", "Ignore")
MATCH_POLICIES = ("Equivalent", "Exact")
NO_SIDE_EFFECTS = ("None", "NoneOnDryRun")
OPERATIONS = ("*", "CONNECT", "CREATE", "DELETE", "UPDATE")
REINVOCATION_POLICIES = ("IfNeeded", "Never")
SCOPES = ("*", "Cluster", "Namespaced")
MAX_MATCH_CONDITIONS = 64


def _fully_qualified(path: str, name: str) -> list[Cause]:
    if not name:
        return [fe.required(path)]
    errs = names.is_dns1123_subdomain(name)
    if errs:
        return [fe.invalid(path, name, ",".join(errs))]
    if len(name.split(".")) < 3:
        return [fe.invalid(path, name, "should be a domain with at least three segments "
                                       "separated by dots")]
    return []


def _wildcard_with_others(items: list[str]) -> bool:
    return len(items) > 1 and "*" in items


def _resources(resources: list[str], path: str) -> list[Cause]:
    causes: list[Cause] = []
    if not resources:
        causes.append(fe.required(path))
    wildcard_subresources: set[str] = set()  # x/*
    wildcard_resources: set[str] = set()  # */x
    double = single = plain = False
    for i, entry in enumerate(resources):
        if entry == "":
            causes.append(fe.required(fe.index(path, i)))
            continue
        double = double or entry == "*/*"
        single = single or entry == "*"
        if "/" not in entry:
            plain = entry != "*"
            continue
        res, sub = entry.split("/", 1)
        if res in wildcard_subresources:
            causes.append(fe.invalid(fe.index(path, i), entry,
                                     f"if '{res}/*' is present, must not specify {entry}"))
        if sub in wildcard_resources:
            causes.append(fe.invalid(fe.index(path, i), entry,
                                     f"if '*/{sub}' is present, must not specify {entry}"))
        if sub == "*":
            wildcard_subresources.add(res)
        if res == "*":
            wildcard_resources.add(sub)
    shown = fe.go_string_slice(resources)
    if len(resources) > 1 and double:
        causes.append(fe.invalid(path, shown, "if '*/*' is present, must not specify other "
                                              "resources"))
    if single and plain:
        causes.append(fe.invalid(path, shown, "if '*' is present, must not specify other "
                                              "resources without subresources"))
    return causes


def _listed(rule: Obj, key: str, path: str, what: str) -> tuple[list[str], list[Cause]]:
    """A rule's list field: required, and ``*`` only alone."""
    items = list(rule.get(key) or [])
    causes = [] if items else [fe.required(f"{path}.{key}")]
    if _wildcard_with_others(items):
        causes.append(fe.invalid(f"{path}.{key}", fe.go_string_slice(items),
                                 f"if '*' is present, must not specify other {what}"))
    return items, causes


def _rule(rule: Obj, path: str) -> list[Cause]:
    operations, causes = _listed(rule, "operations", path, "operations")
    for i, op in enumerate(operations):
        if op not in OPERATIONS:
            causes.append(fe.not_supported(fe.index(f"{path}.operations", i), op, OPERATIONS))
    causes += _listed(rule, "apiGroups", path, "API groups")[1]
    versions, version_causes = _listed(rule, "apiVersions", path, "API versions")
    causes += version_causes
    causes.extend(fe.required(fe.index(f"{path}.apiVersions", i))
                  for i, v in enumerate(versions) if v == "")
    causes.extend(_resources(list(rule.get("resources") or []), f"{path}.resources"))
    scope = rule.get("scope")
    if scope is not None and scope not in SCOPES:
        causes.append(fe.not_supported(f"{path}.scope", scope, SCOPES))
    return causes


def validate_rule_with_operations(rule: Obj, path: str) -> list[Cause]:
    """validateRuleWithOperations, subresources allowed."""
    return _rule(rule, path)


# cel-go's optional syntax (``a.?b``, ``[?x]``, ``{?k: v}``), on in Kubernetes' CEL
# environments, which the parser here does not read: such an expression is not judged
_OPTIONAL_SYNTAX = re.compile(r"\.\?|[\[{,]\s*\?")


# the variables of the admission CEL environments (plugin/cel/compile.go createEnvForOpts):
# these four always, ``params`` with HasParams, ``authorizer`` with HasAuthorizer and
# ``variables`` in a policy's composited compiler (composition.go NewCompositionEnv); each
# taken as dyn here: the typed ones (request, namespaceObject) only give fewer refusals
BASE_VARIABLES = ("object", "oldObject", "request", "namespaceObject")
WEBHOOK_MATCH_CONDITION_VARIABLES = (*BASE_VARIABLES, "authorizer")
# ext.TwoVarComprehensions, introduced in 1.32 (environment/base.go): kube-apiserver 1.32's
# compatibility version is 1.31, so only its StoredExpressions environment has them
_TWO_VAR_MACROS = {"existsOne", "transformList", "transformMap", "transformMapEntry"}
_UNDECLARED = re.compile(r"undeclared reference to '([A-Za-z_][A-Za-z0-9_]*)'")
_GO_TYPE_NAMES = {"null": "null_type", "duration": "google.protobuf.Duration",
                  "timestamp": "google.protobuf.Timestamp"}


def _two_var_comprehension(expression: str) -> str | None:
    """cel-go's error for the first (index, value) comprehension in ``expression``: in an
    environment without ext.TwoVarComprehensions the call is no macro but a function no
    library declares, reported at its opening parenthesis (parser.go receiverCallOrMacro)."""
    import lark

    from setpoint.cluster.apiextensions.schema.celprogram import parse
    from setpoint.cluster.apiextensions.schema.celsource import format_error, position_at

    for node in parse(expression).iter_subtrees_topdown():  # type: ignore[no-untyped-call]
        if node.data != "member_dot_arg" or len(node.children) < 2:
            continue
        name = node.children[1]
        arguments = node.children[2] if len(node.children) > 2 else None
        count = len([c for c in arguments.children if c is not None]) \
            if isinstance(arguments, lark.Tree) else 0
        if str(name) in _TWO_VAR_MACROS or (str(name) in ("all", "exists", "exists_one")
                                            and count == 3):
            at = position_at(expression, expression.find("(", getattr(name, "end_pos", 0) or 0))
            return format_error(expression, at,
                                 f"undeclared reference to '{name}' (in container '')")
    return None


def cel_compile_error(expression: str, returns: tuple[str, ...] = (),
                      declared: tuple[str, ...] = (*BASE_VARIABLES, "params", "authorizer",
                                                   "variables"),
                      new: bool = False, dyn_variables: frozenset[str] = frozenset()
                      ) -> str | None:
    """Why k8s.io/apiserver's admission CEL compiler (plugin/cel/compile.go
    CompileCELExpression) refuses ``expression`` with ``declared`` variables, or None: a
    syntax error, a reference to an undeclared variable, (when ``new``, the
    NewExpressions environment) an (index, value) comprehension, or (with ``returns``, Go's
    ReturnTypes) an output of another type, dyn included where cel-go's is dyn for sure
    (``_certainly_dyn``). Lenient where the checker here knows less than cel-go (an
    undeclared function, the authorizer library, other dyn outputs): only a definite error
    is refused."""
    from setpoint.cluster.apiextensions.schema.celcheck import expression_kind
    from setpoint.cluster.apiextensions.schema.celcost import T
    from setpoint.cluster.apiextensions.schema.celoverloads import cel_type_name
    from setpoint.cluster.apiextensions.schema.celprogram import CheckError, compile_expression

    try:
        compile_expression(expression)
    except CheckError as exc:
        if _OPTIONAL_SYNTAX.search(expression):
            return None
        return f"compilation failed: {exc.detail}"
    if new and (error := _two_var_comprehension(expression)):
        return f"compilation failed: {error}"
    try:
        kind = expression_kind(expression, {name: T("dyn") for name in declared})
    except CheckError as exc:
        undeclared = _UNDECLARED.search(exc.detail.partition("\n")[0])
        # a variable, not a function the checker here does not know (``name(``)
        if undeclared and not re.search(rf"\b{undeclared[1]}\s*\(", expression):
            return f"compilation failed: {exc.detail}"
        return None
    if kind == "dyn" and returns and certainly_dyn(expression, dyn_variables):
        kind = "dyn"  # cel-go's IsExactType: dyn is none of the return types
    elif not returns or kind == "dyn" or kind in returns or (
            kind == "null" and "null_type" in returns):
        return None
    got = _GO_TYPE_NAMES.get(kind) or cel_type_name(T(kind))
    if got is None or kind in ("list", "map"):  # element types unknown here
        return None
    if len(returns) == 1:
        return f"must evaluate to {returns[0]} but got {got}"
    return f"must evaluate to one of [{' '.join(returns)}] but got {got}"


_DYN_ROOTS = frozenset({"object", "oldObject", "params"})
_WRAPPERS = frozenset({"expr", "conditionalor", "conditionaland", "relation", "addition",
                       "multiplication", "unary", "member", "primary", "paren_expr"})


def certainly_dyn(expression: str, dyn_variables: frozenset[str] = frozenset()) -> bool:
    """Whether cel-go types ``expression`` dyn for sure: a field selection or index chain on
    a variable compile.go createEnvForOpts declares ``cel.DynType`` (object, oldObject,
    params) or on ``variables.<v>`` for a ``v`` in ``dyn_variables``, or a ``dyn(...)``
    call. (The checker here says dyn wherever it knows less than cel-go; only these are
    refused for it.)"""
    from setpoint.cluster.apiextensions.schema.celprogram import parse

    node: Any = parse(expression)
    while getattr(node, "data", None) in _WRAPPERS and len(node.children) == 1:
        node = node.children[0]
    if getattr(node, "data", None) == "ident_arg":
        return str(node.children[0]) == "dyn"
    if getattr(node, "data", None) not in ("member_dot", "member_index"):
        return False
    selected = ""
    while getattr(node, "data", None) in ("member_dot", "member_index", "member"):
        if node.data == "member_dot":
            selected = str(node.children[1])
        node = node.children[0]
    while getattr(node, "data", None) == "primary":
        node = node.children[0]
    if getattr(node, "data", None) != "ident":
        return False
    root = str(node.children[0])
    return root in _DYN_ROOTS or (root == "variables" and selected in dyn_variables)


def validate_cel(path: str, expression: str, returns: tuple[str, ...] = (),
                 declared: tuple[str, ...] = WEBHOOK_MATCH_CONDITION_VARIABLES,
                 new: bool = False, dyn_variables: frozenset[str] = frozenset()
                 ) -> list[Cause]:
    """A CEL expression the compiler refuses, as validateCELCondition reports it."""
    error = cel_compile_error(expression, returns, declared, new, dyn_variables)
    return [] if error is None else [fe.invalid(path, expression, error)]


def validate_match_conditions(conditions: list[Obj], path: str,
                              declared: tuple[str, ...] = WEBHOOK_MATCH_CONDITION_VARIABLES,
                              stored: frozenset[str] | None = None) -> list[Cause]:
    """validateMatchConditions: each condition's (trimmed) expression, then its name, then
    the duplicate name. The stateless compiler: no ``variables``; ``stored`` the old
    object's expressions (StoredExpressions environment; None: every expression, as the
    webhooks are judged here)."""
    causes: list[Cause] = []
    if len(conditions) > MAX_MATCH_CONDITIONS:
        causes.append(fe.too_many(path, len(conditions), MAX_MATCH_CONDITIONS))
    seen: set[str] = set()
    for i, condition in enumerate(conditions):
        p = fe.index(path, i)
        expression = str(condition.get("expression") or "").strip()
        if not expression:
            causes.append(fe.required(f"{p}.expression"))
        else:
            causes.extend(validate_cel(f"{p}.expression", expression, ("bool",), declared,
                                       new=stored is not None and expression not in stored))
        name = str(condition.get("name") or "")
        if not name:
            causes.append(fe.required(f"{p}.name"))
        else:
            causes.extend(fe.invalid(f"{p}.name", name, m) for m in names.is_qualified_name(name))
            if name in seen:
                causes.append(fe.duplicate(f"{p}.name", name))
            seen.add(name)
    return causes


def _review_versions(versions: list[str], path: str) -> list[Cause]:
    if not versions:
        return [fe.required(path, f"must specify one of {', '.join(REVIEW_VERSIONS)}")]
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, version in enumerate(versions):
        if version in seen:
            causes.append(fe.invalid(fe.index(path, i), version, "duplicate version"))
            continue
        seen.add(version)
        causes.extend(fe.invalid(fe.index(path, i), version, m)
                      for m in names.is_dns1035_label(version))
    if not any(v in REVIEW_VERSIONS for v in versions):
        causes.append(fe.invalid(path, fe.go_string_slice(versions),
                                 f"must include at least one of {', '.join(REVIEW_VERSIONS)}"))
    return causes


def _webhook(hook: Obj, path: str, *, mutating: bool) -> list[Cause]:
    causes = _fully_qualified(f"{path}.name", str(hook.get("name") or ""))
    for i, rule in enumerate(hook.get("rules") or []):
        causes.extend(_rule(rule, fe.index(f"{path}.rules", i)))
    policy = hook.get("failurePolicy")
    if policy is not None and policy not in FAILURE_POLICIES:
        causes.append(fe.not_supported(f"{path}.failurePolicy", policy, FAILURE_POLICIES))
    match_policy = hook.get("matchPolicy")
    if match_policy is not None and match_policy not in MATCH_POLICIES:
        causes.append(fe.not_supported(f"{path}.matchPolicy", match_policy, MATCH_POLICIES))
    effects = hook.get("sideEffects")
    if effects is None:
        causes.append(fe.required(f"{path}.sideEffects",
                                  f"must specify one of {', '.join(NO_SIDE_EFFECTS)}"))
    elif effects not in NO_SIDE_EFFECTS:
        causes.append(fe.not_supported(f"{path}.sideEffects", effects, NO_SIDE_EFFECTS))
    timeout = hook.get("timeoutSeconds")
    if timeout is not None and not 1 <= timeout <= 30:
        causes.append(fe.invalid(f"{path}.timeoutSeconds", timeout,
                                 "the timeout value must be between 1 and 30 seconds"))
    for field in ("namespaceSelector", "objectSelector"):
        causes.extend(labels.validate_label_selector(hook.get(field), f"{path}.{field}"))
    reinvocation = hook.get("reinvocationPolicy")
    if mutating and reinvocation is not None and reinvocation not in REINVOCATION_POLICIES:
        causes.append(fe.not_supported(f"{path}.reinvocationPolicy", reinvocation,
                                       REINVOCATION_POLICIES))
    client = hook.get("clientConfig") or {}
    if ("url" in client) == ("service" in client):
        causes.append(fe.required(f"{path}.clientConfig",
                                  "exactly one of url or service is required"))
    elif "url" in client:
        causes.extend(_url(f"{path}.clientConfig.url", str(client["url"])))
    else:
        causes.extend(_service(f"{path}.clientConfig.service", client["service"] or {}))
    causes.extend(validate_match_conditions(list(hook.get("matchConditions") or []),
                                    f"{path}.matchConditions"))
    return causes


def _configuration(obj: Obj, *, mutating: bool) -> list[Cause]:
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, hook in enumerate(obj.get("webhooks") or []):
        path = fe.index("webhooks", i)
        causes.extend(_webhook(hook, path, mutating=mutating))
        causes.extend(_review_versions(list(hook.get("admissionReviewVersions") or []),
                                       f"{path}.admissionReviewVersions"))
        name = hook.get("name")
        if name:
            if name in seen:
                causes.append(fe.duplicate(f"{path}.name", name))
            seen.add(name)
    return causes


def validate_mutating_configuration(obj: Obj) -> list[Cause]:
    return _configuration(obj, mutating=True)


def validate_validating_configuration(obj: Obj) -> list[Cause]:
    return _configuration(obj, mutating=False)

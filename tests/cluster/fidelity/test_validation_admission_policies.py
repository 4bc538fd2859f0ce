"""ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding validation over HTTP, with
kube-apiserver 1.32's causes.

Source: pkg/apis/admissionregistration/validation/validation.go
(ValidateValidatingAdmissionPolicy → validateValidatingAdmissionPolicySpec: failurePolicy,
validateParamKind, validateMatchResources, validateMatchConditions, validateVariable,
validateValidation, validateAuditAnnotation; ValidateValidatingAdmissionPolicyBinding →
validateParamRef, validateMatchResources, validateValidationActions), as
pkg/registry/admissionregistration/validatingadmissionpolicy{,binding}/strategy.go call them,
after pkg/apis/admissionregistration/v1/defaults.go (SetDefaults_ValidatingAdmissionPolicySpec,
SetDefaults_MatchResources, SetDefaults_Rule).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.cluster.fidelity.builtin_server import Kube
from tests.waiting import wait_for

POLICIES = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"
BINDINGS = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings"
RULE = {"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE"],
        "resources": ["deployments"]}
ONE_OF = "validations or auditAnnotations must contain at least one item"


def policy(name: str, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"matchConstraints": {"resourceRules": [dict(RULE)]},
                            "validations": [{"expression": "object.spec.replicas < 5"}]}
    body.update(spec)
    return {"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy", "metadata": {"name": name}, "spec": body}


def binding(name: str, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"policyName": "p", "validationActions": ["Deny"]}
    body.update(spec)
    return {"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": name},
            "spec": body}


def observed(kube: Kube, name: str, generation: int = 1) -> dict[str, Any]:
    """The policy once the status controller has observed ``generation``
    (validatingadmissionpolicystatus/controller.go writes the status asynchronously, so
    an update must start from the object it wrote)."""
    def current() -> dict[str, Any] | None:
        _, got = kube.call("GET", f"{POLICIES}/{name}")
        return got if (got.get("status") or {}).get("observedGeneration") == generation \
            else None
    found: dict[str, Any] = asyncio.run(wait_for(current))
    return found


def causes(kube: Kube, method: str, path: str, body: Any) -> list[tuple[str, str, str]]:
    status, answer = kube.call(method, path, body)
    assert (status, answer.get("reason")) == (422, "Invalid"), answer
    return [(c["field"], c["reason"], c["message"]) for c in answer["details"]["causes"]]


def test_policy_defaults_make_a_minimal_policy_valid(kube: Kube) -> None:
    """A policy with neither failurePolicy nor matchPolicy nor selectors is stored with
    the v1 defaults (validation requires each of them)."""
    status, body = kube.call("POST", POLICIES, policy("vap-minimal"))
    assert status == 201, body
    spec = body["spec"]
    assert spec["failurePolicy"] == "Fail"
    assert spec["matchConstraints"] == {
        "matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {},
        "resourceRules": [{**RULE, "scope": "*"}]}
    kube.call("DELETE", f"{POLICIES}/vap-minimal")


POLICY_CASES: list[tuple[str, dict[str, Any], list[tuple[str, str, str]]]] = [
    ("no-validations", {"validations": []}, [
        ("spec.validations", "FieldValueRequired", f"Required value: {ONE_OF}"),
        ("spec.auditAnnotations", "FieldValueRequired", f"Required value: {ONE_OF}")]),
    ("no-rules", {"matchConstraints": {}}, [
        ("spec.matchConstraints.resourceRules", "FieldValueRequired", "Required value")]),
    ("bad-failure-policy", {"failurePolicy": "Sometimes", "matchConstraints": {
        "matchPolicy": "Loose", "resourceRules": [dict(RULE)]}}, [
        ("spec.failurePolicy", "FieldValueNotSupported",
         'Unsupported value: "Sometimes": supported values: "Fail", "Ignore"'),
        ("spec.matchConstraints.matchPolicy", "FieldValueNotSupported",
         'Unsupported value: "Loose": supported values: "Equivalent", "Exact"')]),
    ("bad-rule", {"matchConstraints": {"resourceRules": [
        {"operations": ["PATCH"], "apiGroups": [], "apiVersions": ["v1"],
         "resources": ["pods"], "resourceNames": ["a", "a", "x/y"]}]}}, [
        ("spec.matchConstraints.resourceRules[0].resourceNames[1]", "FieldValueDuplicate",
         'Duplicate value: "a"'),
        ("spec.matchConstraints.resourceRules[0].resourceNames[2]", "FieldValueInvalid",
         "Invalid value: \"x/y\": may not contain '/'"),
        ("spec.matchConstraints.resourceRules[0].operations[0]", "FieldValueNotSupported",
         'Unsupported value: "PATCH": supported values: "*", "CONNECT", "CREATE", "DELETE", '
         '"UPDATE"'),
        ("spec.matchConstraints.resourceRules[0].apiGroups", "FieldValueRequired",
         "Required value")]),
    ("bad-param-kind", {"paramKind": {"apiVersion": "a/b/c"}}, [
        ("spec.paramKind.apiVersion", "FieldValueInvalid",
         'Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c'),
        ("spec.paramKind.kind", "FieldValueRequired", "Required value")]),
    ("param-kind-no-version", {"paramKind": {"apiVersion": "example.com/", "kind": "A_B"}}, [
        ("spec.paramKind.apiVersion", "FieldValueInvalid",
         'Invalid value: "example.com/": version must be specified'),
        ("spec.paramKind.kind", "FieldValueInvalid",
         'Invalid value: "A_B": may have mixed case, but should otherwise match: a DNS-1035 '
         "label must consist of lower case alphanumeric characters or '-', start with an "
         "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
         "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")]),
    ("bad-validation", {"validations": [
        {"expression": " ", "messageExpression": " ", "message": "two\nlines",
         "reason": "Conflict"}]}, [
        ("spec.validations[0].expression", "FieldValueRequired",
         "Required value: expression is not specified"),
        ("spec.validations[0].messageExpression", "FieldValueInvalid",
         'Invalid value: " ": must be non-empty if specified'),
        ("spec.validations[0].message", "FieldValueInvalid",
         'Invalid value: "two\\nlines": message must not contain line breaks'),
        ("spec.validations[0].reason", "FieldValueNotSupported",
         'Unsupported value: "Conflict": supported values: "Forbidden", "Invalid", '
         '"RequestEntityTooLarge"')]),
    ("bad-variables", {"variables": [{"name": "in", "expression": "1"},
                                     {"name": " ", "expression": ""}]}, [
        ("spec.variables[0].name", "FieldValueInvalid",
         'Invalid value: "in": name is not a valid CEL identifier'),
        ("spec.variables[1].name", "FieldValueRequired", "Required value: name is not specified"),
        ("spec.variables[1].expression", "FieldValueRequired",
         "Required value: expression is not specified")]),
    ("bad-match-conditions", {"matchConditions": [{"name": "a b", "expression": "true"},
                                                  {"name": "a b", "expression": ""}]}, [
        ("spec.matchConditions[0].name", "FieldValueInvalid",
         "Invalid value: \"a b\": name part must consist of alphanumeric characters, '-', '_' "
         "or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or "
         "'my.name',  or '123-abc', regex used for validation is "
         "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
        ("spec.matchConditions[1].expression", "FieldValueRequired", "Required value"),
        ("spec.matchConditions[1].name", "FieldValueInvalid",
         "Invalid value: \"a b\": name part must consist of alphanumeric characters, '-', '_' "
         "or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or "
         "'my.name',  or '123-abc', regex used for validation is "
         "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
        ("spec.matchConditions[1].name", "FieldValueDuplicate", 'Duplicate value: "a b"')]),
    ("bad-audit-annotations", {"validations": [], "auditAnnotations": [
        {"key": "k", "valueExpression": ""}, {"key": "k", "valueExpression": "'v'"},
        {"key": "x y", "valueExpression": "'v'"}]}, [
        ("spec.auditAnnotations[0].valueExpression", "FieldValueRequired",
         "Required value: valueExpression is not specified"),
        ("spec.auditAnnotations[1].key", "FieldValueDuplicate", 'Duplicate value: "k"'),
        ("spec.auditAnnotations[2].key", "FieldValueInvalid",
         "Invalid value: \"vap-bad-audit-annotations/x y\": name part must consist of "
         "alphanumeric characters, '-', '_' or '.', and must start and end with an "
         "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
         "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")]),
]


@pytest.mark.parametrize(("name", "spec", "expected"), POLICY_CASES,
                         ids=[c[0] for c in POLICY_CASES])
def test_policy_create_is_validated(kube: Kube, name: str, spec: dict[str, Any],
                                    expected: list[tuple[str, str, str]]) -> None:
    assert causes(kube, "POST", POLICIES, policy(f"vap-{name}", **spec)) == expected
    status, _ = kube.call("GET", f"{POLICIES}/vap-{name}")
    assert status == 404


def test_policy_cel_compile_errors_name_the_expression(kube: Kube) -> None:
    """validateValidationExpression / validateMessageExpression / validateAuditAnnotation
    report a CEL compile failure as Invalid with the compiler's words."""
    got = causes(kube, "POST", POLICIES, policy(
        "vap-cel", validations=[{"expression": "object.spec.replicas <",
                                 "messageExpression": "'x' +"}],
        auditAnnotations=[{"key": "k", "valueExpression": "1 +"}]))
    assert [(f, r) for f, r, _ in got] == [
        ("spec.validations[0].expression", "FieldValueInvalid"),
        ("spec.validations[0].messageExpression", "FieldValueInvalid"),
        ("spec.auditAnnotations[0].valueExpression", "FieldValueInvalid")]
    assert got[0][2].startswith('Invalid value: "object.spec.replicas <": compilation failed: '
                                "ERROR: <input>:1:")
    assert got[2][2].startswith('Invalid value: "1 +": compilation failed: ERROR: <input>:1:')


def test_policy_update_is_validated(kube: Kube) -> None:
    status, body = kube.call("POST", POLICIES, policy("vap-update"))
    assert status == 201, body
    try:
        body = observed(kube, "vap-update")
        body["spec"]["validations"] = []
        body["spec"]["failurePolicy"] = "Never"
        assert causes(kube, "PUT", f"{POLICIES}/vap-update", body) == [
            ("spec.failurePolicy", "FieldValueNotSupported",
             'Unsupported value: "Never": supported values: "Fail", "Ignore"'),
            ("spec.validations", "FieldValueRequired", f"Required value: {ONE_OF}"),
            ("spec.auditAnnotations", "FieldValueRequired", f"Required value: {ONE_OF}")]
    finally:
        kube.call("DELETE", f"{POLICIES}/vap-update")


BINDING_CASES: list[tuple[str, dict[str, Any], list[tuple[str, str, str]]]] = [
    ("empty", {"policyName": "", "validationActions": []}, [
        ("spec.policyName", "FieldValueRequired", "Required value"),
        ("spec.validationActions", "FieldValueRequired",
         "Required value: at least one validation action is required")]),
    ("actions", {"validationActions": ["Deny", "Warn", "Deny", "Block"]}, [
        ("spec.validationActions[2]", "FieldValueDuplicate", 'Duplicate value: "Deny"'),
        ("spec.validationActions[3]", "FieldValueNotSupported",
         'Unsupported value: "Block": supported values: "Audit", "Deny", "Warn"'),
        ("spec.validationActions", "FieldValueInvalid",
         'Invalid value: []admissionregistration.ValidationAction{"Deny", "Warn", "Deny", '
         '"Block"}: must not contain both Deny and Warn (repeating the same validation failure '
         "information in the API response and headers serves no purpose)")]),
    ("param-ref-empty", {"paramRef": {}}, [
        ("spec.paramRef", "FieldValueRequired",
         "Required value: one of name or selector must be specified"),
        ("spec.paramRef.parameterNotFoundAction", "FieldValueRequired", "Required value")]),
    ("param-ref-both", {"paramRef": {"name": "a/b", "selector": {},
                                     "parameterNotFoundAction": "Ignore"}}, [
        ("spec.paramRef.name", "FieldValueInvalid", "Invalid value: \"a/b\": may not contain '/'"),
        ("spec.paramRef.name", "FieldValueForbidden",
         "Forbidden: name and selector are mutually exclusive"),
        ("spec.paramRef.selector", "FieldValueForbidden",
         "Forbidden: name and selector are mutually exclusive"),
        ("spec.paramRef.parameterNotFoundAction", "FieldValueNotSupported",
         'Unsupported value: "Ignore": supported values: "Deny", "Allow"')]),
    ("match-resources", {"policyName": "Bad_Name", "matchResources": {
        "matchPolicy": "Exact", "excludeResourceRules": [
            {"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"],
             "resources": []}]}}, [
        ("spec.policyName", "FieldValueInvalid",
         "Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must consist of lower "
         "case alphanumeric characters, '-' or '.', and must start and end with an "
         "alphanumeric character (e.g. 'example.com', regex used for validation is "
         "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
        ("spec.matchResouces.excludeResourceRules[0].resources", "FieldValueRequired",
         "Required value")]),
]


@pytest.mark.parametrize(("name", "spec", "expected"), BINDING_CASES,
                         ids=[c[0] for c in BINDING_CASES])
def test_binding_create_is_validated(kube: Kube, name: str, spec: dict[str, Any],
                                     expected: list[tuple[str, str, str]]) -> None:
    assert causes(kube, "POST", BINDINGS, binding(f"vapb-{name}", **spec)) == expected


def test_binding_update_is_validated_and_defaults_apply(kube: Kube) -> None:
    status, body = kube.call("POST", BINDINGS, binding(
        "vapb-update", matchResources={},
        paramRef={"name": "p", "parameterNotFoundAction": "Allow"}))
    assert status == 201, body
    try:
        assert body["spec"]["matchResources"] == {
            "matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {}}
        body["spec"]["validationActions"] = ["Audit", "Audit"]
        assert causes(kube, "PUT", f"{BINDINGS}/vapb-update", body) == [
            ("spec.validationActions[1]", "FieldValueDuplicate", 'Duplicate value: "Audit"')]
    finally:
        kube.call("DELETE", f"{BINDINGS}/vapb-update")


def test_webhook_match_conditions_report_the_expression_before_the_name(kube: Kube) -> None:
    """validateMatchCondition (shared by webhooks and policies) checks the trimmed
    expression, then the name; validateMatchConditions then the duplicate name."""
    hook = {"name": "a.b.c", "sideEffects": "None", "admissionReviewVersions": ["v1"],
            "clientConfig": {"url": "https://127.0.0.1/x"},
            "matchConditions": [{"name": "", "expression": "  "}]}
    got = causes(kube, "POST",
                 "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
                 {"metadata": {"name": "vwc-conditions"}, "webhooks": [hook]})
    assert got == [
        ("webhooks[0].matchConditions[0].expression", "FieldValueRequired", "Required value"),
        ("webhooks[0].matchConditions[0].name", "FieldValueRequired", "Required value")]


def test_policy_status_write_is_validated_by_the_status_rules(kube: Kube) -> None:
    """The status strategy validates with ValidateValidatingAdmissionPolicyStatusUpdate
    alone: expression warnings (validateExpressionWarning) and apimachinery's
    ValidateConditions (pkg/apis/meta/v1/validation/validation.go)."""
    status, body = kube.call("POST", POLICIES, policy("vap-status"))
    assert status == 201, body
    try:
        body = observed(kube, "vap-status")
        body["status"] = {
            "typeChecking": {"expressionWarnings": [{"fieldRef": "", "warning": ""}]},
            "conditions": [
                {"type": "Ready", "status": "Maybe", "reason": "1bad",
                 "lastTransitionTime": "2024-01-01T00:00:00Z", "message": ""},
                {"type": "Ready", "status": "True", "reason": "",
                 "lastTransitionTime": "2024-01-01T00:00:00Z", "message": "",
                 "observedGeneration": -1}]}
        assert causes(kube, "PUT", f"{POLICIES}/vap-status/status", body) == [
            ("status.typeChecking.expressionWarnings[0].warning", "FieldValueRequired",
             "Required value"),
            ("status.typeChecking.expressionWarnings[0].fieldRef", "FieldValueRequired",
             "Required value"),
            ("status.conditions[0].status", "FieldValueNotSupported",
             'Unsupported value: "Maybe": supported values: "False", "True", "Unknown"'),
            ("status.conditions[0].reason", "FieldValueInvalid",
             'Invalid value: "1bad": a condition reason must start with alphabetic character, '
             "optionally followed by a string of alphanumeric characters or '_,:', and must "
             "end with an alphanumeric character or '_' (e.g. 'my_name',  or 'MY_NAME',  or "
             "'MyName',  or 'ReasonA,ReasonB',  or 'ReasonA:ReasonB', regex used for "
             "validation is '[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')"),
            ("status.conditions[1].type", "FieldValueDuplicate", 'Duplicate value: "Ready"'),
            ("status.conditions[1].observedGeneration", "FieldValueInvalid",
             "Invalid value: -1: must be greater than or equal to zero"),
            ("status.conditions[1].reason", "FieldValueRequired", "Required value: must be set")]
        body["status"] = {"conditions": [
            {"type": "Ready", "status": "True", "reason": "Checked",
             "lastTransitionTime": "2024-01-01T00:00:00Z", "message": ""}]}
        status, answer = kube.call("PUT", f"{POLICIES}/vap-status/status", body)
        assert status == 200, answer
    finally:
        kube.call("DELETE", f"{POLICIES}/vap-status")


def test_policy_expressions_must_evaluate_to_their_types(kube: Kube) -> None:
    """k8s.io/apiserver pkg/admission/plugin/cel/compile.go refuses an expression whose
    output type is not one of its ReturnTypes (a validation and a match condition: bool;
    a messageExpression: string; an audit annotation's value: string or null), reported
    Invalid without the "compilation failed" prefix. cel-go's optional syntax (``.?``) is
    part of Kubernetes' environment: such expressions are accepted."""
    got = causes(kube, "POST", POLICIES, policy(
        "vap-types", validations=[{"expression": "1", "messageExpression": "1 + 1"},
                                  {"expression": "object.?spec.?replicas.orValue(0) < 5"}],
        matchConditions=[{"name": "m", "expression": "'yes'"}],
        auditAnnotations=[{"key": "k", "valueExpression": "true"},
                          {"key": "n", "valueExpression": "null"}]))
    assert got == [
        ("spec.matchConditions[0].expression", "FieldValueInvalid",
         "Invalid value: \"'yes'\": must evaluate to bool but got string"),
        ("spec.validations[0].expression", "FieldValueInvalid",
         'Invalid value: "1": must evaluate to bool but got int'),
        ("spec.validations[0].messageExpression", "FieldValueInvalid",
         'Invalid value: "1 + 1": must evaluate to string but got int'),
        ("spec.auditAnnotations[0].valueExpression", "FieldValueInvalid",
         'Invalid value: "true": must evaluate to one of [string null_type] but got '
         'bool')]
    status, body = kube.call("POST", POLICIES, policy(
        "vap-optional", validations=[{
            "expression": "object.?spec.?replicas.orValue(0) < 5",
            "messageExpression": "'replicas: ' + string(object.spec.replicas)"}],
        matchConditions=[{"name": "m", "expression": "object.metadata.name != 'x'"}]))
    assert status == 201, body
    kube.call("DELETE", f"{POLICIES}/vap-optional")


@pytest.mark.parametrize("kind", ["policy", "binding"])
def test_generation_starts_at_one_and_moves_with_the_spec(kube: Kube, kind: str) -> None:
    """validatingadmissionpolicy{,binding}/strategy.go: PrepareForCreate sets generation 1,
    PrepareForUpdate adds one when the spec changes (and only then)."""
    path, body = ((POLICIES, policy("vap-generation")) if kind == "policy"
                  else (BINDINGS, binding("vapb-generation")))
    status, created = kube.call("POST", path, body)
    assert (status, created["metadata"].get("generation")) == (201, 1), created
    name = created["metadata"]["name"]
    try:
        merge = "application/merge-patch+json"
        status, labelled = kube.call("PATCH", f"{path}/{name}",
                                     {"metadata": {"labels": {"a": "b"}}}, merge)
        assert (status, labelled["metadata"]["generation"]) == (200, 1), labelled
        change = ({"spec": {"failurePolicy": "Ignore"}} if kind == "policy"
                  else {"spec": {"validationActions": ["Audit"]}})
        status, changed = kube.call("PATCH", f"{path}/{name}", change, merge)
        assert (status, changed["metadata"]["generation"]) == (200, 2), changed
    finally:
        kube.call("DELETE", f"{path}/{name}")

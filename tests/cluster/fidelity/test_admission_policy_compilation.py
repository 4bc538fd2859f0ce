"""A ValidatingAdmissionPolicy's CEL expressions compiled at create and update in each
field's environment, over HTTP, with kube-apiserver 1.32's causes.

Sources: pkg/apis/admissionregistration/validation/validation.go
(validateValidatingAdmissionPolicySpec → validateVariable, validateValidationExpression,
validateMessageExpression (HasAuthorizer: false), validateAuditAnnotation,
validateMatchConditionsExpression (the stateless compiler: no ``variables``),
findValidatingPolicyPreexistingExpressions for updates); k8s.io/apiserver
pkg/admission/plugin/cel/compile.go (createEnvForOpts: ``params`` only with HasParams,
``authorizer`` only with HasAuthorizer; CompileCELExpression: "compilation failed: " and
cel-go's issues), composition.go (NewCompositionEnv declares ``variables``), and
pkg/cel/environment/base.go (ext.TwoVarComprehensions introduced in 1.32, so absent from
the NewExpressions environment of a server whose compatibility version is 1.31).
"""

from __future__ import annotations

from typing import Any

from tests.cluster.fidelity.builtin_server import Kube
from tests.cluster.fidelity.test_validation_admission_policies import (
    POLICIES,
    causes,
    observed,
    policy,
)


def _quoted(expression: str) -> str:
    return '"' + expression.replace('"', '\\"') + '"'


def _message(expression: str, name: str, column: int = 1) -> str:
    return (f"Invalid value: {_quoted(expression)}: compilation failed: ERROR: "
            f"<input>:1:{column}: undeclared reference to '{name}' (in container '')\n"
            f" | {expression}\n | {'.' * (column - 1)}^")


def test_each_expression_sees_only_its_environment_s_variables(kube: Kube) -> None:
    """Without a paramKind ``params`` is undeclared everywhere; a messageExpression has no
    ``authorizer``; without spec.variables ``variables`` is undeclared; an unknown name is
    undeclared; the same expressions compile where Go declares them."""
    auth = "authorizer.path('/x').check('get').reason()"
    got = causes(kube, "POST", POLICIES, policy(
        "vap-env",
        matchConditions=[{"name": "p", "expression": "params.x == 1"}],
        validations=[{"expression": "variables.v == 1", "messageExpression": auth},
                     {"expression": "objet.spec.replicas < 5"}],
        auditAnnotations=[{"key": "k", "valueExpression": "string(params.x)"}]))
    assert got == [
        ("spec.matchConditions[0].expression", "FieldValueInvalid",
         _message("params.x == 1", "params")),
        ("spec.validations[0].expression", "FieldValueInvalid",
         _message("variables.v == 1", "variables")),
        ("spec.validations[0].messageExpression", "FieldValueInvalid",
         _message(auth, "authorizer")),
        ("spec.validations[1].expression", "FieldValueInvalid",
         _message("objet.spec.replicas < 5", "objet")),
        ("spec.auditAnnotations[0].valueExpression", "FieldValueInvalid",
         _message("string(params.x)", "params", 8))]
    accepted: dict[str, Any] = policy(
        "vap-env-ok",
        paramKind={"apiVersion": "v1", "kind": "ConfigMap"},
        variables=[{"name": "v", "expression": "params.data.size()"}],
        matchConditions=[{"name": "p", "expression": "params.data.x == '1'"}],
        validations=[{"expression": "variables.v == 1 && authorizer.path('/x').check('get')"
                                    ".allowed()",
                      "messageExpression": "string(params.data.x)"}],
        auditAnnotations=[{"key": "k", "valueExpression": "string(params.data.x)"}])
    status, body = kube.call("POST", POLICIES, accepted)
    assert status == 201, body
    kube.call("DELETE", f"{POLICIES}/vap-env-ok")


def test_a_new_two_variable_comprehension_is_refused(kube: Kube) -> None:
    """At create, and at update for an expression the old policy did not hold in the same
    place, the NewExpressions environment is used, which in 1.32 lacks
    ext.TwoVarComprehensions: the call is an undeclared function, at its parenthesis."""
    two_var = "object.spec.template.spec.containers.all(i, c, i < 10)"
    got = causes(kube, "POST", POLICIES, policy(
        "vap-two-var", validations=[{"expression": two_var}]))
    assert got == [("spec.validations[0].expression", "FieldValueInvalid",
                    _message(two_var, "all", two_var.index("(") + 1))]
    status, created = kube.call("POST", POLICIES, policy("vap-new-on-update"))
    assert status == 201, created
    try:
        changed = observed(kube, "vap-new-on-update")
        changed["spec"] = dict(changed["spec"], validations=[{"expression": two_var}])
        got = causes(kube, "PUT", f"{POLICIES}/vap-new-on-update", changed)
        assert [f for f, _, _ in got] == ["spec.validations[0].expression"]
    finally:
        kube.call("DELETE", f"{POLICIES}/vap-new-on-update")


def test_an_unchanged_stored_expression_compiles_in_the_stored_environment() -> None:
    """ValidateValidatingAdmissionPolicyUpdate: findValidatingPolicyPreexistingExpressions
    marks the old policy's expressions by place; each is compiled with
    environment.StoredExpressions (every library), so a policy stored before the
    compatibility version moved stays updatable. Through HTTP no such policy can be
    written (create compiles with NewExpressions), hence the registry's function here; the
    same text in another place (a messageExpression) is new there. A variable counts as
    stored only when an old validation has its text (validateVariable's check)."""
    from setpoint.cluster.registry.validation_policies import (
        validate_validating_admission_policy_update as update,
    )

    def cel_fields(new: Any, old: Any) -> list[str]:
        return [c.field for c in update(new, old)
                if c.field.endswith(("expression", "Expression"))]

    two_var = "object.spec.containers.all(i, c, i < 10)"
    old = policy("p", validations=[{"expression": two_var}])
    new = policy("p", validations=[{"expression": two_var}],
                 auditAnnotations=[{"key": "k", "valueExpression": "'a'"}])
    assert cel_fields(new, old) == []
    moved = policy("p", validations=[{"expression": two_var,
                                      "messageExpression": f"string({two_var})"}])
    assert cel_fields(moved, old) == ["spec.validations[0].messageExpression"]
    variable = policy("p", variables=[{"name": "v", "expression": two_var}],
                      validations=[{"expression": "variables.v"}])
    assert cel_fields(variable, variable) == ["spec.variables[0].expression"]


def test_the_status_controller_observes_each_generation(kube: Kube) -> None:
    """kubernetes pkg/controller/validatingadmissionpolicystatus/controller.go reconcile:
    a generation past status.observedGeneration gets the status applied (forced, as
    ``validatingadmissionpolicy-status``): observedGeneration and typeChecking (no warnings
    for expressions the matched kinds' schemas check), no conditions."""
    status, created = kube.call("POST", POLICIES, policy("vap-observed"))
    assert status == 201, created
    try:
        first = observed(kube, "vap-observed", 1)
        assert first["status"] == {"observedGeneration": 1, "typeChecking": {}}, first
        assert "validatingadmissionpolicy-status" in [
            m["manager"] for m in first["metadata"]["managedFields"]
            if m.get("subresource") == "status"]
        first["spec"]["validations"] = [{"expression": "object.spec.replicas < 6"}]
        status, updated = kube.call("PUT", f"{POLICIES}/vap-observed", first)
        assert (status, updated["metadata"]["generation"]) == (200, 2), updated
        second = observed(kube, "vap-observed", 2)
        assert second["status"]["typeChecking"] == {}, second
    finally:
        kube.call("DELETE", f"{POLICIES}/vap-observed")

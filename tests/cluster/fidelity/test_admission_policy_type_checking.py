"""A ValidatingAdmissionPolicy's type checking, over HTTP: the status controller's
``expressionWarnings`` and the output types compile.go refuses at create.

Sources: kubernetes pkg/controller/validatingadmissionpolicystatus/controller.go
``reconcile`` (the checker's warnings applied as status.typeChecking.expressionWarnings);
k8s.io/apiserver v0.32.0 pkg/admission/plugin/policy/validating/typechecking.go
(``Check``: each validation's expression and messageExpression, field paths
``spec.validations[i].expression``/``.messageExpression``; ``typesToCheck``: no wildcard
groups, versions or resources, no subresources, sorted by group, version, kind;
``TypeCheckingResult.String``: ``<gvk>: <issues>\\n`` per kind, joined by newlines;
``buildEnvSet``: ``params`` declared only with a resolvable paramKind, ``variables`` typed by
the composited variables), pkg/cel/common/schemas.go ``WithTypeAndObjectMeta``;
pkg/admission/plugin/cel/compile.go ``CompileCELExpression`` (an output type not exactly one
of ReturnTypes is refused: ``must evaluate to bool but got dyn``) with createEnvForOpts
(``object``, ``oldObject`` and ``params`` declared ``cel.DynType``), cel-go v0.22.0
common/types/types.go ``IsExactType``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from tests.cluster.fidelity.builtin_server import Kube
from tests.cluster.fidelity.test_validation_admission_policies import (
    POLICIES,
    causes,
    observed,
    policy,
)
from tests.waiting import wait_for

_RULE = {"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE"],
         "resources": ["replicasets", "deployments", "deployments/scale"]}


def _issue(kind: str, expression: str, column: int, message: str) -> str:
    return (f"apps/v1, Kind={kind}: ERROR: <input>:1:{column}: {message}\n"
            f" | {expression}\n | {'.' * (column - 1)}^\n")


def _both(expression: str, column: int, message: str) -> str:
    return "\n".join(_issue(kind, expression, column, message)
                     for kind in ("Deployment", "ReplicaSet"))


def test_the_status_controller_writes_the_type_checkers_warnings(kube: Kube) -> None:
    """Each matched kind's schema types ``object`` (a Deployment has a strategy, a
    ReplicaSet not), the paramKind's ``params``, the variables their own types; an
    expression that checks everywhere (the authorizer's too) gets no warning; a later
    generation's warnings replace the earlier ones."""
    spec: dict[str, Any] = {
        "matchConstraints": {"resourceRules": [_RULE]},
        "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
        "variables": [{"name": "replicas", "expression": "object.spec.replicas"}],
        "validations": [
            {"expression": "variables.replicas < 5",
             "messageExpression": "'at most ' + params.data.max"},
            {"expression": "has(object.spec.strategy) && object.spec.strategy.type == 'x'"},
            {"expression": "object.spec.replicas == 'x'", "messageExpression": "'x' + params.date"},
            {"expression": "variables.replica > 1 && authorizer.path('/x').check('get')"
                           ".allowed()"}]}
    status, created = kube.call("POST", POLICIES, policy("vap-typed", **spec))
    assert status == 201, created
    try:
        got = observed(kube, "vap-typed")["status"]["typeChecking"]
        strategy = spec["validations"][1]["expression"]
        replica = spec["validations"][3]["expression"]
        assert got == {"expressionWarnings": [
            {"fieldRef": "spec.validations[1].expression",
             # both selections of the missing field: cel-go's checker reports every error
             # (checker/checker.go, the error type assignable to anything), by position
             "warning": _issue("ReplicaSet", strategy, 4, "undefined field 'strategy'")
             + _issue("ReplicaSet", strategy, 41, "undefined field 'strategy'").partition(
                 ": ")[2]},
            {"fieldRef": "spec.validations[2].expression",
             "warning": _both("object.spec.replicas == 'x'", 22,
                              "found no matching overload for '_==_' applied to "
                              "'(int, string)'")},
            {"fieldRef": "spec.validations[2].messageExpression",
             "warning": _both("'x' + params.date", 13, "undefined field 'date'")},
            {"fieldRef": "spec.validations[3].expression",
             "warning": _both(replica, 10, "undefined field 'replica'")}]}, got
        current = observed(kube, "vap-typed")
        current["spec"]["validations"] = [{"expression": "object.spec.replicas < 5"}]
        status, updated = kube.call("PUT", f"{POLICIES}/vap-typed", current)
        assert status == 200, updated
        # the apply's ``typeChecking: {}`` merged over the old warnings, which it no longer
        # owns: structured-merge-diff typed/remove.go doMap leaves an emptied map null, so
        # the status has no typeChecking at all (a first generation's is ``{}``)
        second = observed(kube, "vap-typed", 2)["status"]
        assert second == {"observedGeneration": 2}, second
    finally:
        kube.call("DELETE", f"{POLICIES}/vap-typed")


def test_wildcard_rules_and_missing_params_are_not_typed(kube: Kube) -> None:
    """typesToCheck gives up on a wildcard group (nothing is checked: no warning for an
    undefined field); a paramKind without a schema leaves ``params`` undeclared."""
    wild = {"apiGroups": ["*"], "apiVersions": ["v1"], "operations": ["CREATE"],
            "resources": ["deployments"]}
    status, created = kube.call("POST", POLICIES, policy(
        "vap-wild", matchConstraints={"resourceRules": [wild]},
        validations=[{"expression": "object.spec.nope == 1"}]))
    assert status == 201, created
    try:
        assert observed(kube, "vap-wild")["status"]["typeChecking"] == {}
    finally:
        kube.call("DELETE", f"{POLICIES}/vap-wild")
    status, created = kube.call("POST", POLICIES, policy(
        "vap-unknown-params", matchConstraints={"resourceRules": [_RULE]},
        paramKind={"apiVersion": "example.com/v1", "kind": "Nothing"},
        validations=[{"expression": "params.x == 1"}]))
    assert status == 201, created
    try:
        warnings = observed(kube, "vap-unknown-params")["status"]["typeChecking"]
        assert warnings == {"expressionWarnings": [{
            "fieldRef": "spec.validations[0].expression",
            "warning": _both("params.x == 1", 1,
                             "undeclared reference to 'params' (in container '')")}]}
    finally:
        kube.call("DELETE", f"{POLICIES}/vap-unknown-params")


def test_a_dyn_result_is_not_a_bool_or_a_string(kube: Kube) -> None:
    """compile.go: a field of ``object`` (declared dyn) is dyn, which IsExactType holds to be
    neither bool (a validation, a matchCondition) nor string or null (an auditAnnotation):
    Invalid at create with Go's reason, as for a static int; so is a variable holding one
    (composition.go AddField gives ``variables.<v>`` the variable's type); a comparison is
    bool."""
    got = causes(kube, "POST", POLICIES, policy(
        "vap-dyn",
        matchConditions=[{"name": "m", "expression": "object.spec.paused"}],
        validations=[{"expression": "object.spec.paused"}, {"expression": "1"},
                     {"expression": "params.x == 1 || dyn(true)"},
                     {"expression": "variables.paused"}],
        variables=[{"name": "paused", "expression": "object.spec.paused"}],
        paramKind={"apiVersion": "v1", "kind": "ConfigMap"},
        auditAnnotations=[{"key": "k", "valueExpression": "object.metadata.name"}]))
    assert got == [
        ("spec.matchConditions[0].expression", "FieldValueInvalid",
         'Invalid value: "object.spec.paused": must evaluate to bool but got dyn'),
        ("spec.validations[0].expression", "FieldValueInvalid",
         'Invalid value: "object.spec.paused": must evaluate to bool but got dyn'),
        ("spec.validations[1].expression", "FieldValueInvalid",
         'Invalid value: "1": must evaluate to bool but got int'),
        ("spec.validations[3].expression", "FieldValueInvalid",
         'Invalid value: "variables.paused": must evaluate to bool but got dyn'),
        ("spec.auditAnnotations[0].valueExpression", "FieldValueInvalid",
         'Invalid value: "object.metadata.name": must evaluate to one of '
         "[string null_type] but got dyn")]
    status, body = kube.call("POST", POLICIES, policy(
        "vap-bool", validations=[{"expression": "object.spec.paused == true"}],
        auditAnnotations=[{"key": "k", "valueExpression": "'n: ' + object.metadata.name"}]))
    assert status == 201, body
    kube.call("DELETE", f"{POLICIES}/vap-bool")


def test_a_custom_kind_is_typed_by_its_crd_schema(kube: Kube) -> None:
    """A served custom kind's schema (its CRD version's openAPIV3Schema, with apiVersion,
    kind and ObjectMeta, as discovery's /openapi/v3 serves it) types ``object`` and, as the
    paramKind, ``params``."""
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    status, body = kube.call("POST", crds, {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.typed.example.com"},
        "spec": {"group": "typed.example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                     "openAPIV3Schema": {"type": "object", "properties": {"spec": {
                         "type": "object",
                         "properties": {"size": {"type": "integer"}}}}}}}]}})
    assert status == 201, body

    def served() -> dict[str, Any] | None:
        _, got = kube.call("GET", f"{crds}/widgets.typed.example.com")
        conditions = (got.get("status") or {}).get("conditions") or []
        return got if any(c["type"] == "Established" and c["status"] == "True"
                          for c in conditions) else None

    asyncio.run(wait_for(served))
    rule = {"apiGroups": ["typed.example.com"], "apiVersions": ["v1"],
            "operations": ["CREATE"], "resources": ["widgets"]}
    expression = "object.spec.size > params.spec.size && object.spec.color == 'red'"
    status, created = kube.call("POST", POLICIES, policy(
        "vap-widgets", matchConstraints={"resourceRules": [rule]},
        paramKind={"apiVersion": "typed.example.com/v1", "kind": "Widget"},
        validations=[{"expression": expression},
                     {"expression": "object.metadata.name.startsWith(params.metadata.name)"}]))
    assert status == 201, created
    try:
        got = observed(kube, "vap-widgets")["status"]["typeChecking"]
        column = expression.index(".color") + 1  # (cel-go places a selection at its dot)
        assert got == {"expressionWarnings": [{
            "fieldRef": "spec.validations[0].expression",
            "warning": (f"typed.example.com/v1, Kind=Widget: ERROR: <input>:1:{column}: "
                        f"undefined field 'color'\n | {expression}\n"
                        f" | {'.' * (column - 1)}^\n")}]}, got
    finally:
        kube.call("DELETE", f"{POLICIES}/vap-widgets")
        kube.call("DELETE", f"{crds}/widgets.typed.example.com")

"""How one ValidatingAdmissionPolicy evaluation spends its budget and handles its errors,
over real HTTP.

Sources (k8s.io/apiserver v0.32.0): pkg/admission/plugin/cel/composition.go
(``compositionContext.Variables``: a lazy map per ForInput; ``variableAccessor.Callback``
reports a variable's cost, ``composited variable %q fails to evaluate``), pkg/cel/lazy/lazy.go
(``resolveField`` keeps a value once evaluated), pkg/admission/plugin/cel/activation.go
``Evaluate`` (the composition cost charged before the expression's own; out of budget:
"validation failed due to running out of cost budget, no further validation rules will be
run") and ``newActivation`` (``authorizer.requestResource``), pkg/cel/library/authz.go
``NewResourceAuthorizerVal`` (the request's group, resource, subresource, namespace and name),
pkg/admission/plugin/policy/validating/validator.go ``Validate`` and dispatcher.go
``Dispatch`` (policyDecisionActionForError, auditAnnotationEvaluationForError,
``addConfigError``: under failurePolicy Ignore every error admits)."""

from __future__ import annotations

from typing import Any

from tests.cluster.conftest import API
from tests.cluster.test_admission_policies import BINDINGS, CMS, binding, cm, install, policy

Obj = dict[str, Any]
OUT_OF_BUDGET = ("validation failed due to running out of cost budget, no further validation "
                 "rules will be run")
# as tests/cluster/test_admission_policy_cost_budget.py: each HEAVY costs about 900,000
# over TEXT; eleven stay under the 10,000,000 budget, twelve pass it
TEXT = "a" * 900_000
HEAVY = " || ".join(f"object.data.s.contains('{c}')" for c in "bcdefghijk")
OVER_PER_CALL = " || ".join(f"object.data.s.contains('{c}')" for c in "bcdefghijklm")


async def test_a_variable_is_charged_once_to_the_expression_that_reads_it_first(api: API
                                                                              ) -> None:
    """Ten heavy validations and two reading one heavy variable: the variable is evaluated
    once (eleven heavy costs, admitted); eleven heavy validations and one read: twelve, out
    of budget. An unread variable costs nothing."""
    variables = [{"name": "heavy", "expression": HEAVY}]
    ten = [{"expression": f"!({HEAVY})"} for _ in range(10)]
    reads = [{"expression": "!variables.heavy"}, {"expression": "!variables.heavy"}]
    await install(api, policy("lazy-once", *ten, *reads, variables=variables),
                  binding("lazy-once-b", "lazy-once"))
    status, body = await api.post(CMS, cm("heavy", {"s": TEXT}))
    assert status == 201, body.get("message")
    assert (await api.delete(f"{CMS}/heavy"))[0] == 200
    assert (await api.delete(f"{BINDINGS}/lazy-once-b"))[0] == 200
    unread = [{"expression": "true || variables.heavy"}]
    await install(api, policy("lazy-unread", *ten, {"expression": f"!({HEAVY})"}, *unread,
                              variables=variables),
                  binding("lazy-unread-b", "lazy-unread"))
    status, body = await api.post(CMS, cm("heavy", {"s": TEXT}))
    assert status == 201, body.get("message")
    assert (await api.delete(f"{CMS}/heavy"))[0] == 200
    await install(api, policy("lazy-charged", *ten, {"expression": f"!({HEAVY})"}, reads[0],
                              variables=variables),
                  binding("lazy-charged-b", "lazy-charged"))
    status, body = await api.post(CMS, cm("heavy", {"s": TEXT}))
    assert (status, body.get("message")) == (422, (
        "configmaps \"heavy\" is forbidden: ValidatingAdmissionPolicy 'lazy-charged' with "
        f"binding 'lazy-charged-b' denied request: {OUT_OF_BUDGET}")), body


async def test_authorizer_request_resource_checks_the_requests_own_resource(api: API
                                                                           ) -> None:
    """``authorizer.requestResource.check(verb)`` asks about the request's group, resource,
    namespace and name (a Role naming resourceNames decides per object)."""
    await install(api, policy(
        "deletable", {"expression": "authorizer.requestResource.check('delete').allowed()",
                      "messageExpression": "'you could not delete ' + object.metadata.name"}),
        binding("deletable-b", "deletable"))
    rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces/default"
    assert (await api.post(f"{rbac}/roles", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "cm-creator"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]},
                  {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["delete"],
                   "resourceNames": ["mine"]}]}))[0] == 201
    assert (await api.post(f"{rbac}/rolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "bob-creates"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                    "name": "cm-creator"},
        "subjects": [{"kind": "User", "name": "bob",
                      "apiGroup": "rbac.authorization.k8s.io"}]}))[0] == 201
    bob = {"Impersonate-User": "bob"}
    assert (await api.post(CMS, cm("mine"), headers=bob))[0] == 201
    status, body = await api.post(CMS, cm("theirs"), headers=bob)
    assert (status, body["message"]) == (422, (
        "configmaps \"theirs\" is forbidden: ValidatingAdmissionPolicy 'deletable' with "
        "binding 'deletable-b' denied request: you could not delete theirs")), body


async def test_failure_policy_ignore_admits_every_kind_of_error(api: API) -> None:
    """Each error under Fail is a denial in Go's words; the same policy under Ignore admits:
    a validation's runtime error, a variable's (``composited variable``), a missing param
    with ``parameterNotFoundAction: Deny`` (``failed to configure binding``), an
    auditAnnotation's error, the budget running out, a variable past the per-call limit
    (pkg/apis/cel/config.go PerCallLimit, 1,000,000: cel-go's ``operation cancelled: actual
    cost limit exceeded``)."""
    cases: list[tuple[Obj, Obj, str]] = [
        ({"validations": [{"expression": "object.data.nope == 'x'"}]}, {},
         "expression 'object.data.nope == 'x'' resulted in error: no such key: nope"),
        ({"validations": [{"expression": "variables.v == 'x'"}],
          "variables": [{"name": "v", "expression": "object.data.nope"}]}, {},
         "expression 'variables.v == 'x'' resulted in error: composited variable \"v\" "
         "fails to evaluate: no such key: nope"),
        ({"validations": [{"expression": "true"}],
          "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}},
         {"paramRef": {"name": "absent", "parameterNotFoundAction": "Deny"}},
         "failed to configure binding: no params found for policy binding with `Deny` "
         "parameterNotFoundAction"),
        ({"validations": [{"expression": "true"}],
          "auditAnnotations": [{"key": "k", "valueExpression": "object.data.nope + 'x'"}]},
         {}, "expression 'object.data.nope + 'x'' resulted in error: no such key: nope"),
        ({"validations": [{"expression": f"!({HEAVY})"} for _ in range(12)]}, {},
         OUT_OF_BUDGET),
        ({"validations": [{"expression": "!variables.over"}],
          "variables": [{"name": "over", "expression": OVER_PER_CALL}]}, {},
         "expression '!variables.over' resulted in error: composited variable \"over\" "
         "fails to evaluate: operation cancelled: actual cost limit exceeded"),
    ]
    for i, (spec, binding_spec, message) in enumerate(cases):
        for failure in ("Fail", "Ignore"):
            name = f"err-{i}-{failure.lower()}"
            rest = {k: v for k, v in spec.items() if k != "validations"}
            body = policy(name, *spec["validations"], **rest, failurePolicy=failure)
            await install(api, body, binding(f"{name}-b", name, **binding_spec))
            status, answer = await api.post(CMS, cm(name, {"s": TEXT}))
            if failure == "Fail":
                assert (status, answer["message"]) == (422, (
                    f"configmaps \"{name}\" is forbidden: ValidatingAdmissionPolicy '{name}' "
                    f"with binding '{name}-b' denied request: {message}")), answer
                assert answer["reason"] == "Invalid", answer
            else:
                assert status == 201, answer
                assert (await api.delete(f"{CMS}/{name}"))[0] == 200
            assert (await api.delete(f"{BINDINGS}/{name}-b"))[0] == 200


async def test_path_and_subresource_checks_and_a_decisions_error(api: API) -> None:
    """authz.go: ``path(p).check(verb)`` is a non-resource check (``/healthz`` is every
    authenticated user's, ``/metrics`` not), ``subresource(s)`` narrows a resource check
    (a Role granting ``deployments/scale`` only), and a decision without an error answers
    ``errored()`` false and ``error()`` ''."""
    await install(api, policy(
        "checks",
        {"expression": "authorizer.path('/healthz').check('get').allowed() && "
                       "!authorizer.path('/healthz').check('get').errored() && "
                       "authorizer.path('/healthz').check('get').error() == ''",
         "message": "healthz"},
        {"expression": "!authorizer.path('/metrics').check('get').allowed()",
         "message": "metrics readers may not write configmaps"},
        {"expression": "authorizer.group('apps').resource('deployments').subresource('scale')"
                       ".namespace('default').check('update').allowed() && "
                       "!authorizer.group('apps').resource('deployments')"
                       ".namespace('default').check('update').allowed()",
         "message": "only scalers"}),
        binding("checks-b", "checks"))
    rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces/default"
    carol = {"Impersonate-User": "carol"}
    assert (await api.post(f"{rbac}/roles", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "scaler"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]},
                  {"apiGroups": ["apps"], "resources": ["deployments/scale"],
                   "verbs": ["update"]}]}))[0] == 201
    assert (await api.post(f"{rbac}/rolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "carol-scales"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "scaler"},
        "subjects": [{"kind": "User", "name": "carol",
                      "apiGroup": "rbac.authorization.k8s.io"}]}))[0] == 201
    assert (await api.post(CMS, cm("by-carol"), headers=carol))[0] == 201
    status, body = await api.post(CMS, cm("by-admin"))
    assert (status, body["message"]) == (422, (
        "configmaps \"by-admin\" is forbidden: ValidatingAdmissionPolicy 'checks' with "
        "binding 'checks-b' denied request: metrics readers may not write configmaps")), body


async def test_message_expression_fallbacks_and_reason_codes(api: API) -> None:
    """validator.go Validate: a messageExpression's string longer than
    MaxEvaluatedMessageExpressionSizeBytes (5 KiB) after trimming, one with a line break, one
    past the per-call cost limit, or an empty one falls back to ``message``, then to
    ``failed expression: <expression>``; policy_decision.go reasonToCode:
    RequestEntityTooLarge is 413 (validation.go allows no Unauthorized reason)."""
    cases: list[tuple[Obj, int, str]] = [
        ({"messageExpression": "'  ' + object.data.long + '  '", "message": "too long"},
         422, "too long"),
        ({"messageExpression": "'first\\nsecond'", "message": "two lines"}, 422,
         "two lines"),
        ({"messageExpression": f"({OVER_PER_CALL}) ? 'a' : 'b'", "message": "too costly"},
         422, "too costly"),
        ({"messageExpression": "'   '"}, 422, "failed expression: false"),
        ({"message": "too big", "reason": "RequestEntityTooLarge"}, 413, "too big"),
    ]
    for i, (validation, code, message) in enumerate(cases):
        name = f"msg-{i}"
        await install(api, policy(name, {"expression": "false", **validation}),
                      binding(f"{name}-b", name))
        status, body = await api.post(CMS, cm(name, {"long": "y" * 5121, "s": TEXT}))
        assert (status, body["code"], body["message"]) == (code, code, (
            f"configmaps \"{name}\" is forbidden: ValidatingAdmissionPolicy '{name}' with "
            f"binding '{name}-b' denied request: {message}")), body
        assert body["reason"] == validation.get("reason", "Invalid"), body
        assert (await api.delete(f"{BINDINGS}/{name}-b"))[0] == 200

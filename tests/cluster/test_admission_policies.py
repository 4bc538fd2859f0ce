"""ValidatingAdmissionPolicy enforcement as kube-apiserver 1.32 runs it, over real HTTP.

Sources (k8s.io/apiserver v0.32.0, pkg/admission/plugin/policy/): validating/dispatcher.go
``Dispatch`` (bindings' validationActions, the denial's message, reason, code and cause,
the Warn text, the ``validation_failure`` audit annotation, auditAnnotations as
``<policy>/<key>``), validating/validator.go ``Validate`` (matchConditions, messages, failure
policy), validating/policy_decision.go ``reasonToCode``, generic/policy_dispatcher.go
``CollectParams`` (params and their errors), generic/policy_source.go (bindings by
``spec.policyName``; an unknown paramKind), matching/matching.go ``Matches``;
pkg/admission/plugin/cel/activation.go and composition.go (the expressions' errors)."""

from __future__ import annotations

from typing import Any

from tests.cluster.conftest import API

Obj = dict[str, Any]
POLICIES = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"
BINDINGS = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings"
CMS = "/api/v1/namespaces/default/configmaps"


def rules(resources: list[str] | None = None, **extra: Any) -> Obj:
    return {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
            "resources": resources or ["configmaps"], **extra}


def policy(name: str, *validations: Obj, **spec: Any) -> Obj:
    body: Obj = {"matchConstraints": {"resourceRules": [rules()]},
                 "validations": list(validations), **spec}
    if not validations:
        body.pop("validations")
    return {"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy", "metadata": {"name": name}, "spec": body}


def binding(name: str, policy_name: str, actions: list[str] | None = None, **spec: Any
            ) -> Obj:
    return {"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": name},
            "spec": {"policyName": policy_name, "validationActions": actions or ["Deny"],
                     **spec}}


def cm(name: str, data: Obj | None = None, **meta: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, **meta}, "data": data or {"k": "v"}}


async def install(api: API, *objects: Obj) -> None:
    for obj in objects:
        path = POLICIES if obj["kind"] == "ValidatingAdmissionPolicy" else BINDINGS
        status, body = await api.post(path, obj)
        assert status == 201, body


async def test_a_denial_is_the_status_go_sends(api: API) -> None:
    """dispatcher.go Dispatch: admission.NewForbidden names the object, then the reason
    (Invalid when the validation gives none) and its code (policy_decision.go reasonToCode:
    422) replace Forbidden's, and the message is appended as a cause."""
    await install(api, policy("small", {"expression": "size(object.data) < 2",
                                        "message": "too much data"}),
                  binding("small-binding", "small"))
    status, body = await api.post(CMS, cm("big", {"a": "1", "b": "2"}))
    message = ("ValidatingAdmissionPolicy 'small' with binding 'small-binding' denied request: "
               "too much data")
    assert status == 422, body
    assert body == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": f'configmaps "big" is forbidden: {message}',
                    "reason": "Invalid",
                    "details": {"name": "big", "kind": "configmaps",
                                "causes": [{"message": message}]},
                    "code": 422}
    assert (await api.post(CMS, cm("fine")))[0] == 201


async def test_a_policy_without_a_binding_is_not_enforced(api: API) -> None:
    """generic/policy_source.go: hooks are the policies that bindings name by
    spec.policyName; a binding of a missing policy is skipped."""
    await install(api, policy("never", {"expression": "false"}),
                  binding("orphan", "missing-policy"))
    assert (await api.post(CMS, cm("free")))[0] == 201
    await install(api, binding("now", "never"))
    status, body = await api.post(CMS, cm("refused"))
    assert status == 422, body
    assert body["message"].endswith("denied request: failed expression: false")
    assert (await api.delete(f"{BINDINGS}/now"))[0] == 200
    assert (await api.post(CMS, cm("free-again")))[0] == 201


async def test_reason_and_message_expression(api: API) -> None:
    """validator.go: the messageExpression's string (trimmed) is the message; reason
    Forbidden is a 403 (reasonToCode); a messageExpression that is not a string falls back
    to message, then to ``failed expression: <expression>``; so does one that fails."""
    await install(api, policy(
        "named", {"expression": "object.metadata.name.startsWith('ok')",
                  "messageExpression": "' name ' + object.metadata.name + ' refused '",
                  "reason": "Forbidden"}),
                  binding("named-b", "named"))
    status, body = await api.post(CMS, cm("bad"))
    assert status == 403, body
    assert body["reason"] == "Forbidden" and body["code"] == 403
    assert body["message"] == ('configmaps "bad" is forbidden: ValidatingAdmissionPolicy '
                               "'named' with binding 'named-b' denied request: name bad refused")
    await install(api, policy("fallback", {"expression": "object.data.k == 'v'",
                                           "messageExpression": "string(object.data.nope)"}),
                  binding("fallback-b", "fallback"))
    status, body = await api.post(CMS, cm("ok-1", {"k": "x"}))
    assert status == 422, body
    assert body["message"].endswith(
        "'fallback' with binding 'fallback-b' denied request: failed expression: "
        "object.data.k == 'v'")


async def test_evaluation_errors_follow_the_failure_policy(api: API) -> None:
    """activation.go Evaluate: ``expression '<e>' resulted in error: <err>``; validator.go
    policyDecisionActionForError: Fail denies, Ignore admits."""
    await install(api, policy("strict", {"expression": "object.data.missing == 'x'"}),
                  binding("strict-b", "strict"))
    status, body = await api.post(CMS, cm("e1"))
    assert status == 422, body
    assert body["message"].endswith(
        "denied request: expression 'object.data.missing == 'x'' resulted in error: "
        "no such key: missing")
    assert (await api.delete(f"{BINDINGS}/strict-b"))[0] == 200
    await install(api, policy("lenient", {"expression": "object.data.missing == 'x'"},
                              failurePolicy="Ignore"),
                  binding("lenient-b", "lenient"))
    assert (await api.post(CMS, cm("e2")))[0] == 201


async def test_matching_rules_names_exclusions_and_selectors(api: API) -> None:
    """matching.go Matches: resourceNames name the object; excludeResourceRules win; the
    object selector matches the new or old object's labels; the binding's matchResources
    narrow the policy's too (policy_matcher.go BindingMatches)."""
    await install(
        api,
        policy("deny-all", {"expression": "false", "message": "no"}, matchConstraints={
            "resourceRules": [rules(resourceNames=["one", "two"])],
            "excludeResourceRules": [rules(resourceNames=["two"])],
            "objectSelector": {"matchLabels": {"guarded": "yes"}}}),
        binding("deny-all-b", "deny-all", matchResources={
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "default"}}}))
    assert (await api.post(CMS, cm("one")))[0] == 201  # no label
    assert (await api.post(CMS, cm("two", labels={"guarded": "yes"})))[0] == 201  # excluded
    assert (await api.post(CMS, cm("three", labels={"guarded": "yes"})))[0] == 201
    # store.go Create: the validating admission runs before the store finds the name taken
    status, body = await api.post(CMS, cm("one", labels={"guarded": "yes"}))
    assert status == 422, body
    status, body = await api.put(f"{CMS}/one", cm("one", labels={"guarded": "yes"}))
    assert status == 422, body
    assert body["message"].endswith("'deny-all' with binding 'deny-all-b' denied request: no")
    await api.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                          "metadata": {"name": "other"}})
    status, body = await api.post("/api/v1/namespaces/other/configmaps",
                                  cm("one", labels={"guarded": "yes"}))
    assert status == 201, body  # the binding's namespaceSelector leaves it out


async def test_match_conditions(api: API) -> None:
    """validator.go: a false matchCondition skips the policy; an error when none is false
    denies under failurePolicy Fail (matchconditions/matcher.go Match)."""
    await install(api, policy(
        "conditional", {"expression": "false", "message": "refused"},
        matchConditions=[{"name": "labelled",
                          "expression": "'check' in object.metadata.labels"},
                         {"name": "erring", "expression": "object.data.nope == 'x'"}]),
                  binding("conditional-b", "conditional"))
    assert (await api.post(CMS, cm("unlabelled", labels={"a": "b"})))[0] == 201
    status, body = await api.post(CMS, cm("labelled", labels={"check": "1"}))
    assert status == 422, body
    assert body["message"].endswith(
        "denied request: expression 'object.data.nope == 'x'' resulted in error: "
        "no such key: nope")


async def test_variables_request_and_namespace_object(api: API) -> None:
    """activation.go: ``variables`` (in order, each seeing the earlier ones), ``request``
    (cel/condition.go CreateAdmissionRequest) and ``namespaceObject``
    (CreateNamespaceObject); an unread variable's error is harmless and a read one's is
    ``composited variable "<name>" fails to evaluate`` (composition.go)."""
    await install(api, policy(
        "vars",
        {"expression": "variables.prefixed",
         "messageExpression": "'op=' + request.operation + ' ns=' + namespaceObject.metadata.name"
                              " + ' kind=' + request.kind.kind + ' user=' + "
                              "request.userInfo.username + ' opts=' + request.options.kind"},
        {"expression": "object.metadata.name != 'v-broken' || variables.broken"},
        variables=[{"name": "name", "expression": "object.metadata.name"},
                   {"name": "prefixed", "expression": "variables.name.startsWith('v-')"},
                   {"name": "broken", "expression": "object.data.nope == 'x'"}]),
                  binding("vars-b", "vars"))
    assert (await api.post(CMS, cm("v-1")))[0] == 201
    status, body = await api.post(CMS, cm("x-1"))
    assert status == 422, body
    assert body["message"].endswith("denied request: op=CREATE ns=default kind=ConfigMap "
                                    "user=setpoint-admin opts=CreateOptions"), body
    status, body = await api.post(CMS, cm("v-broken"))
    assert status == 422, body
    assert body["message"].endswith(
        "denied request: expression 'object.metadata.name != 'v-broken' || variables.broken' "
        'resulted in error: composited variable "broken" fails to evaluate: no such key: nope')


async def test_params_by_name_selector_and_not_found(api: API) -> None:
    """generic/policy_dispatcher.go CollectParams: the param named in the request's
    namespace (or paramRef.namespace); by selector every match is validated; none found
    admits under parameterNotFoundAction Allow and is ``failed to configure binding: no
    params found for policy binding with `Deny` parameterNotFoundAction`` under Deny;
    generic/policy_source.go: an unknown paramKind is ``failed to configure policy: failed
    to find resource referenced by paramKind``."""
    limit = policy("limited", {"expression": "size(object.data) <= int(params.data.max)",
                               "messageExpression": "'at most ' + params.data.max"},
                   paramKind={"apiVersion": "v1", "kind": "ConfigMap"},
                   matchConstraints={"resourceRules": [rules(["secrets"])]})
    await install(api, limit, binding("limited-b", "limited", paramRef={
        "name": "limits", "parameterNotFoundAction": "Deny"}))
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
              "stringData": {"a": "1", "b": "2"}}
    secrets = "/api/v1/namespaces/default/secrets"
    status, body = await api.post(secrets, secret)
    assert status == 422, body
    assert body["message"] == (
        'secrets "s" is forbidden: ValidatingAdmissionPolicy \'limited\' with binding '
        "'limited-b' denied request: failed to configure binding: no params found for policy "
        "binding with `Deny` parameterNotFoundAction")
    assert (await api.post(CMS, cm("limits", {"max": "1"})))[0] == 201
    status, body = await api.post(secrets, secret)
    assert status == 422, body
    assert body["message"].endswith("'limited-b' denied request: at most 1")
    assert (await api.put(f"{CMS}/limits", cm("limits", {"max": "2"})))[0] == 200
    assert (await api.post(secrets, secret))[0] == 201
    # by selector, each param found validates; none found with Allow admits
    await install(api, binding("selected-b", "limited", paramRef={
        "selector": {"matchLabels": {"tier": "strict"}}, "parameterNotFoundAction": "Allow"}))
    second = secret | {"metadata": {"name": "s2"}}
    assert (await api.post(secrets, second))[0] == 201
    assert (await api.post(CMS, cm("strict", {"max": "0"}, labels={"tier": "strict"})))[0] \
        == 201
    status, body = await api.post(secrets, secret | {"metadata": {"name": "s3"}})
    assert status == 422, body
    assert body["message"].endswith("'selected-b' denied request: at most 0")
    await install(api, policy("unknown-kind", {"expression": "true"},
                              paramKind={"apiVersion": "example.com/v1", "kind": "Nothing"},
                              matchConstraints={"resourceRules": [rules(["secrets"])]}),
                  binding("unknown-b", "unknown-kind"))
    for name in ("limited-b", "selected-b"):
        assert (await api.delete(f"{BINDINGS}/{name}"))[0] == 200
    status, body = await api.post(secrets, secret | {"metadata": {"name": "s4"}})
    assert status == 422, body
    assert body["message"] == (
        'secrets "s4" is forbidden: ValidatingAdmissionPolicy \'unknown-kind\' denied request: '
        "failed to configure policy: failed to find resource referenced by paramKind: "
        "'example.com/v1, Kind=Nothing'")


async def test_a_delete_sees_the_old_object_and_no_object(api: API) -> None:
    """A DELETE is admitted with ``object`` null and ``oldObject`` the stored object
    (cel/activation.go; admission attributes of a deletion), the request's ``options`` its
    DeleteOptions; the denial names the object from the request (errors.go
    extractResourceName)."""
    await install(api, policy(
        "protect", {"expression": "object == null && !has(oldObject.metadata.labels) || "
                                  "oldObject.metadata.labels['protected'] != 'yes'",
                    "messageExpression": "'protected; options ' + request.options.kind",
                    "reason": "Forbidden"},
        matchConstraints={"resourceRules": [rules(operations=["DELETE"])]}),
                  binding("protect-b", "protect"))
    assert (await api.post(CMS, cm("kept", labels={"protected": "yes"})))[0] == 201
    assert (await api.post(CMS, cm("gone", labels={"protected": "no"})))[0] == 201
    assert (await api.post(CMS, cm("plain")))[0] == 201
    status, body = await api.delete(f"{CMS}/kept")
    assert status == 403, body
    assert body["message"] == (
        'configmaps "kept" is forbidden: ValidatingAdmissionPolicy \'protect\' with binding '
        "'protect-b' denied request: protected; options DeleteOptions")
    assert body["details"] == {"name": "kept", "kind": "configmaps",
                               "causes": [{"message": body["message"].partition(
                                   "is forbidden: ")[2]}]}
    assert (await api.delete(f"{CMS}/gone"))[0] == 200
    assert (await api.delete(f"{CMS}/plain"))[0] == 200
    assert (await api.get(f"{CMS}/kept"))[0] == 200


async def test_match_policy_equivalent_sees_the_matched_resource(api: API) -> None:
    """matching.go matchesResourceRules: with matchPolicy Equivalent a rule naming another
    group of the same storage (events.k8s.io Events are core Events) matches, and the policy
    sees the object and ``request.resource`` as that resource (dispatcher.go converts the
    versioned attributes to the matched kind); Exact does not match. Its matchConditions see
    the request's own resource beside the matched kind, and no namespaceObject
    (matchconditions/matcher.go Match: CreateAdmissionRequest with
    ``versionedAttr.GetResource()``, namespace nil)."""
    events_rule = {"apiGroups": ["events.k8s.io"], "apiVersions": ["v1"],
                   "operations": ["CREATE"], "resources": ["events"]}
    await install(
        api,
        policy("equivalent", {"expression": "false",
                              "messageExpression": "request.resource.group + ' note=' + "
                                                   "object.note"},
               matchConstraints={"resourceRules": [events_rule], "matchPolicy": "Equivalent"},
               matchConditions=[{"name": "as-requested", "expression":
                                 "request.resource.group == '' && request.kind.group == "
                                 "'events.k8s.io' && namespaceObject == null"}]),
        binding("equivalent-b", "equivalent"),
        policy("exact", {"expression": "false", "message": "exact"},
               matchConstraints={"resourceRules": [events_rule], "matchPolicy": "Exact"}),
        binding("exact-b", "exact"))
    event = {"apiVersion": "v1", "kind": "Event",
             "metadata": {"name": "e1", "namespace": "default"},
             "involvedObject": {"kind": "ConfigMap", "name": "x", "namespace": "default"},
             "reason": "Seen", "message": "hello", "type": "Normal"}
    status, body = await api.post("/api/v1/namespaces/default/events", event)
    assert status == 422, body
    assert body["message"] == (
        'events "e1" is forbidden: ValidatingAdmissionPolicy \'equivalent\' with binding '
        "'equivalent-b' denied request: events.k8s.io note=hello")
    assert (await api.delete(f"{BINDINGS}/equivalent-b"))[0] == 200
    status, body = await api.post("/api/v1/namespaces/default/events", event)
    assert status == 201, body  # the Exact policy's rule names the other group only


async def test_the_plugin_is_in_the_chain_only_while_a_binding_exists(api: API) -> None:
    """generic/policy_source.go keeps the hooks from its informers; with no binding there
    is nothing to dispatch, so here writes do not call the plugin at all, and a DELETE
    stays on the synchronous path (no webhook, no binding)."""
    server = api.cluster.api
    chain = server.rest.validating_admission
    assert not any(type(p).__name__ == "ValidatingAdmissionPolicy" for p in chain)
    assert not server.webhooks.configured()
    await install(api, policy("p", {"expression": "true"}), binding("b", "p"))
    assert type(chain[-1]).__name__ == "ValidatingAdmissionPolicy"
    assert server.webhooks.configured()
    assert (await api.delete(f"{BINDINGS}/b"))[0] == 200
    assert not any(type(p).__name__ == "ValidatingAdmissionPolicy" for p in chain)
    assert not server.webhooks.configured()


async def test_a_scale_update_is_admitted_as_the_scale(api: API) -> None:
    """A ``/scale`` write is admitted as the autoscaling/v1 Scale it is (subresource
    ``scale``, ``request.kind`` Scale), and a rule naming ``deployments/scale`` matches it
    while ``deployments`` does not (rules.Matcher, matching.go)."""
    await install(api, policy(
        "scale-cap", {"expression": "object.spec.replicas <= 3",
                      "messageExpression": "request.kind.kind + '/' + request.subResource + "
                                           "' over 3'"},
        matchConstraints={"resourceRules": [{
            "apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["UPDATE"],
            "resources": ["deployments/scale"]}]}),
                  binding("scale-cap-b", "scale-cap"))
    deployments = "/apis/apps/v1/namespaces/default/deployments"
    labels = {"app": "web"}
    status, body = await api.post(deployments, {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 5, "selector": {"matchLabels": labels}, "template": {
            "metadata": {"labels": labels},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
    assert status == 201, body  # the deployment itself is no Scale
    status, body = await api.patch(f"{deployments}/web/scale", {"spec": {"replicas": 4}},
                                   "application/merge-patch+json")
    assert status == 422, body
    assert body["message"] == (
        'deployments.apps "web" is forbidden: ValidatingAdmissionPolicy \'scale-cap\' with '
        "binding 'scale-cap-b' denied request: Scale/scale over 3")
    status, body = await api.patch(f"{deployments}/web/scale", {"spec": {"replicas": 2}},
                                   "application/merge-patch+json")
    assert status == 200, body


async def test_an_undeclared_reference_is_refused_at_create(api: API) -> None:
    """An expression naming a variable the environment lacks (a misspelt ``object``) does
    not compile: the policy is refused at create (validation.go validateValidation →
    plugin/cel/compile.go CompileCELExpression), so no request ever meets it and nothing
    of a request is echoed."""
    status, body = await api.post(POLICIES, policy(
        "typo", {"expression": "objet.metadata.name == 'x'"}))
    assert (status, body.get("reason")) == (422, "Invalid"), body
    [cause] = body["details"]["causes"]
    assert cause["field"] == "spec.validations[0].expression"
    assert "undeclared reference to 'objet'" in cause["message"]
    assert (await api.post(CMS, cm("secretive", {"password": "hunter2"})))[0] == 201


async def test_a_generated_name_is_not_the_requests_name(api: API) -> None:
    """A create by generateName is admitted with the name the request gave (none:
    ``request.name`` absent, as cel/condition.go's ``omitempty`` Name leaves it), while the
    object already has its generated name; the refusal names the object by it (errors.go
    extractResourceName: the request's name, else the object's)."""
    await install(api, policy("named-requests", {
        "expression": "has(request.name)",
        "messageExpression": "'object ' + object.metadata.name.substring(0, 4)"}),
                  binding("named-requests-b", "named-requests"))
    assert (await api.post(CMS, cm("given")))[0] == 201
    status, body = await api.post(CMS, {"apiVersion": "v1", "kind": "ConfigMap",
                                        "metadata": {"generateName": "gen-"}})
    assert status == 422, body
    name = body["details"]["name"]
    assert name.startswith("gen-") and len(name) == len("gen-") + 5
    assert body["message"] == (
        f'configmaps "{name}" is forbidden: ValidatingAdmissionPolicy \'named-requests\' with '
        "binding 'named-requests-b' denied request: object gen-")


async def test_the_authorizer_asks_about_the_requesting_user(api: API) -> None:
    """pkg/cel/library/authz.go: ``authorizer.group(g).resource(r).namespace(n).check(verb)``
    asks the cluster's authorizer whether the requesting user may (RBAC's decision), and
    ``allowed()`` reads it; ``authorizer.serviceAccount(ns, name)`` asks about that service
    account instead."""
    await install(api, policy(
        "readers-only",
        {"expression": "authorizer.group('').resource('secrets').namespace('default')"
                       ".check('list').allowed()",
         "message": "writers of configmaps must be able to list secrets"},
        {"expression": "!authorizer.serviceAccount('default', 'builder').group('')"
                       ".resource('configmaps').namespace('default').check('create')"
                       ".allowed()",
         "message": "the builder may not create configmaps"}),
                  binding("readers-only-b", "readers-only"))
    role: Obj = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "cm-writer"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]}]}
    rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces/default"
    assert (await api.post(f"{rbac}/roles", role))[0] == 201
    assert (await api.post(f"{rbac}/rolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "alice-writes"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                    "name": "cm-writer"},
        "subjects": [{"kind": "User", "name": "alice",
                      "apiGroup": "rbac.authorization.k8s.io"}]}))[0] == 201
    alice = {"Impersonate-User": "alice"}
    status, body = await api.post(CMS, cm("by-alice"), headers=alice)
    assert status == 422, body
    assert body["message"].endswith(
        "denied request: writers of configmaps must be able to list secrets")
    assert (await api.post(CMS, cm("by-admin")))[0] == 201
    role["rules"].append({"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]})
    assert (await api.put(f"{rbac}/roles/cm-writer", role))[0] == 200
    assert (await api.post(CMS, cm("by-alice"), headers=alice))[0] == 201
    assert (await api.post(f"{rbac}/rolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "builder-writes"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                    "name": "cm-writer"},
        "subjects": [{"kind": "ServiceAccount", "name": "builder",
                      "namespace": "default"}]}))[0] == 201
    status, body = await api.post(CMS, cm("after-builder"))
    assert status == 422, body
    assert body["message"].endswith("denied request: the builder may not create configmaps")


async def test_policies_and_bindings_are_exempt(api: API) -> None:
    """generic/plugin.go Dispatch ignores kube-apiserver's excluded resources, among them
    the policies and bindings themselves (upstream's Test_PolicyExemption), so that no policy
    can lock its own configuration: a policy matching bindings, or every resource, never
    refuses a binding or a policy."""
    await install(api, policy(
        "deny-everything", {"expression": "false", "message": "nothing passes"},
        matchConstraints={"resourceRules": [{
            "apiGroups": ["*"], "apiVersions": ["*"], "operations": ["*"],
            "resources": ["*"]}]}),
                  binding("everything", "deny-everything"))
    status, body = await api.post(CMS, cm("refused"))
    assert status == 422, body
    assert body["message"].endswith("denied request: nothing passes")
    await install(api, binding("second", "deny-everything", ["Warn"]),
                  policy("another", {"expression": "true"}))
    assert (await api.delete(f"{BINDINGS}/everything"))[0] == 200
    assert (await api.delete(f"{BINDINGS}/second"))[0] == 200
    assert (await api.post(CMS, cm("accepted")))[0] == 201

"""Who may point a ValidatingAdmissionPolicy at its parameters, over HTTP with impersonated
users (pkg/registry/admissionregistration/validatingadmissionpolicy/authz.go and
validatingadmissionpolicybinding/authz.go, called from each strategy's Validate and
ValidateUpdate once the object is otherwise valid, the refusal a ``field.Forbidden`` on
``spec.paramKind`` / ``spec.paramRef``; the user printed by ``%v`` of a ``*user.DefaultInfo``).
"""

from __future__ import annotations

from typing import Any

import pytest
import pytest_asyncio

from tests.cluster.conftest import API
from tests.waiting import wait_for

pytestmark = pytest.mark.asyncio(loop_scope="module")

ADMISSION = "/apis/admissionregistration.k8s.io/v1"
POLICIES = f"{ADMISSION}/validatingadmissionpolicies"
BINDINGS = f"{ADMISSION}/validatingadmissionpolicybindings"
RBAC = "/apis/rbac.authorization.k8s.io/v1"
CONFIG_MAPS = {"apiVersion": "v1", "kind": "ConfigMap"}
ALICE = {"Impersonate-User": "alice", "Impersonate-Uid": "u-1",
         "Impersonate-Group": "authors", "Impersonate-Extra-scopes": "openid"}
BOB = {"Impersonate-User": "bob"}
ALICE_V = "&{alice u-1 [authors system:authenticated] map[scopes:[openid]]}"
BOB_V = "&{bob  [system:authenticated] map[]}"


def policy(name: str, param_kind: dict[str, str] | None = None,
           **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "matchConstraints": {"resourceRules": [{
            "apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE"],
            "resources": ["deployments"]}]},
        "validations": [{"expression": "object.spec.replicas < 5"}], **spec}
    if param_kind is not None:
        body["paramKind"] = param_kind
    return {"metadata": {"name": name}, "spec": body}


def binding(name: str, policy_name: str, param_ref: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {
        "policyName": policy_name, "validationActions": ["Deny"],
        "paramRef": {"parameterNotFoundAction": "Deny", **param_ref}}}


async def cluster_grant(api: API, name: str, user: str, rules: list[dict[str, Any]]) -> None:
    status, body = await api.post(f"{RBAC}/clusterroles", {
        "metadata": {"name": name}, "rules": rules})
    assert status == 201, body
    status, body = await api.post(f"{RBAC}/clusterrolebindings", {
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": name},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                      "name": user}]})
    assert status == 201, body


async def namespace_grant(api: API, namespace: str, user: str,
                          rules: list[dict[str, Any]]) -> str:
    status, body = await api.post(f"{RBAC}/namespaces/{namespace}/roles", {
        "metadata": {"name": user}, "rules": rules})
    assert status == 201, body
    status, body = await api.post(f"{RBAC}/namespaces/{namespace}/rolebindings", {
        "metadata": {"name": user},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": user},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                      "name": user}]})
    assert status == 201, body
    return f"{RBAC}/namespaces/{namespace}/rolebindings/{user}"


def forbidden_cause(answer: Any) -> tuple[Any, ...]:
    return (answer.get("code"), answer.get("reason"), answer.get("message"),
            [(c["reason"], c["field"], c["message"]) for c in answer["details"]["causes"]])


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def authors(module_api: API) -> None:
    """alice and bob may write policies and bindings, nothing else."""
    for user in ("alice", "bob"):
        await cluster_grant(module_api, f"policy-author-{user}", user, [{
            "apiGroups": ["admissionregistration.k8s.io"],
            "resources": ["validatingadmissionpolicies", "validatingadmissionpolicybindings"],
            "verbs": ["create", "update", "get", "patch"]}])
    status, body = await module_api.post("/api/v1/namespaces", {"metadata": {"name": "team"}})
    assert status == 201, body


async def test_a_policy_paramkind_needs_get_on_every_object_of_the_kind(
        module_api: API, authors: None) -> None:
    """authz.go ``authorize``: ``get`` on the resolved resource, name and namespace ``*`` (a
    namespaced grant does not do); ``authorizeUpdate``: an unchanged paramKind is not
    checked again, a changed one is; validation's own causes come first and alone."""
    message = (f'user {ALICE_V} must have "get" permission on all objects of the referenced '
               "paramKind (kind=ConfigMap, apiVersion=v1)")
    status, answer = await module_api.post(POLICIES, policy("params", CONFIG_MAPS),
                                           headers=ALICE)
    assert status == 422, answer
    assert forbidden_cause(answer) == (
        422, "Invalid", 'ValidatingAdmissionPolicy.admissionregistration.k8s.io "params" is '
        f"invalid: spec.paramKind: Forbidden: {message}",
        [("FieldValueForbidden", "spec.paramKind", f"Forbidden: {message}")])
    # an invalid policy is refused for what is invalid, the paramKind not judged
    status, answer = await module_api.post(POLICIES, policy("params", CONFIG_MAPS,
                                                            validations=[]), headers=ALICE)
    assert [c["field"] for c in answer["details"]["causes"]] == [
        "spec.validations", "spec.auditAnnotations"], answer
    # reading config maps in one namespace is not reading all of them
    await namespace_grant(module_api, "team", "alice", [{
        "apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}])
    status, answer = await module_api.post(POLICIES, policy("params", CONFIG_MAPS),
                                           headers=ALICE)
    assert status == 422, answer
    await cluster_grant(module_api, "alice-reads-config-maps", "alice", [{
        "apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}])
    status, created = await module_api.post(POLICIES, policy("params", CONFIG_MAPS),
                                            headers=ALICE)
    assert status == 201, created

    # (from the object the status controller wrote, whose write moves resourceVersion)
    async def observed() -> Any:
        _, got = await module_api.get(f"{POLICIES}/params")
        return got if (got.get("status") or {}).get("observedGeneration") == 1 else None
    created = await wait_for(observed)
    # bob, who reads no config maps, may change the policy but not its paramKind
    changed = {**created, "metadata": {**created["metadata"], "labels": {"team": "a"}}}
    status, updated = await module_api.put(f"{POLICIES}/params", changed, headers=BOB)
    assert status == 200, updated
    secrets = {"apiVersion": "v1", "kind": "Secret"}
    status, answer = await module_api.put(f"{POLICIES}/params", {
        **updated, "spec": {**updated["spec"], "paramKind": secrets}}, headers=BOB)
    assert forbidden_cause(answer)[3] == [(
        "FieldValueForbidden", "spec.paramKind",
        f'Forbidden: user {BOB_V} must have "get" permission on all objects of the '
        "referenced paramKind (kind=Secret, apiVersion=v1)")], answer
    # the administrator (system:masters) is not checked
    status, answer = await module_api.post(POLICIES, policy("admin-params", secrets))
    assert status == 201, answer


async def test_a_binding_paramref_needs_get_on_the_object_it_names(
        module_api: API, authors: None) -> None:
    """validatingadmissionpolicybinding/authz.go ``authorize``: ``get`` on the paramRef's
    name and namespace, of the resource the policy's paramKind resolves to (every group,
    version and resource when the policy is not found); an update checks again even with
    the same paramRef (Go compares the structs, whose parameterNotFoundAction pointers
    differ)."""
    status, answer = await module_api.post(POLICIES, policy("bound", CONFIG_MAPS))
    assert status == 201, answer
    message = (f'Forbidden: user {BOB_V} does not have "get" permission on the object '
               "referenced by paramRef")
    ref = {"name": "limits", "namespace": "team"}
    status, answer = await module_api.post(BINDINGS, binding("bound", "bound", ref),
                                           headers=BOB)
    assert forbidden_cause(answer) == (
        422, "Invalid", 'ValidatingAdmissionPolicyBinding.admissionregistration.k8s.io '
        f'"bound" is invalid: spec.paramRef: {message}',
        [("FieldValueForbidden", "spec.paramRef", message)]), answer
    # get on that one config map of that namespace is enough
    role_binding = await namespace_grant(module_api, "team", "bob", [{
        "apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"],
        "resourceNames": ["limits"]}])
    status, created = await module_api.post(BINDINGS, binding("bound", "bound", ref),
                                            headers=BOB)
    assert status == 201, created
    # another name, or a policy not found (any resource of any group), is not covered
    for name, policy_name, param_ref in (
            ("other-name", "bound", {"name": "other", "namespace": "team"}),
            ("no-policy", "missing", ref)):
        status, answer = await module_api.post(
            BINDINGS, binding(name, policy_name, param_ref), headers=BOB)
        assert (status, answer["details"]["causes"][0]["field"]) == (
            422, "spec.paramRef"), answer
    # without the grant, even an update that keeps the paramRef is refused
    status, answer = await module_api.delete(role_binding)
    assert status == 200, answer
    relabeled = {**created, "metadata": {**created["metadata"], "labels": {"team": "a"}}}
    status, answer = await module_api.put(f"{BINDINGS}/bound", relabeled, headers=BOB)
    assert forbidden_cause(answer)[3] == [("FieldValueForbidden", "spec.paramRef", message)]

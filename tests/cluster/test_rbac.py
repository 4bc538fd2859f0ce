"""RBAC: service account tokens and impersonated users get exactly what bindings grant."""

from __future__ import annotations

from typing import Any

import aiohttp
import orjson

from setpoint.cluster import RunningCluster
from tests.cluster.conftest import API
from tests.waiting import wait_for

Obj = dict[str, Any]
ROBOT = "system:serviceaccount:default:robot"
RBAC = "/apis/rbac.authorization.k8s.io/v1"


class As:
    """Requests sent with another identity: a token, or the admin impersonating."""

    def __init__(self, api: API, headers: dict[str, str]) -> None:
        self.api, self.headers = api, headers

    async def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        async with aiohttp.ClientSession() as session, session.request(
                method, self.api.cluster.url + path, headers={
                    **self.headers, "Content-Type": "application/json"},
                data=orjson.dumps(body) if body is not None else None,
                ssl=self.api.ssl) as resp:
            text = await resp.read()
            try:
                return resp.status, orjson.loads(text)
            except orjson.JSONDecodeError:
                return resp.status, text.decode()


async def robot(api: API) -> As:
    assert (await api.post("/api/v1/namespaces/default/serviceaccounts",
                           {"metadata": {"name": "robot"}}))[0] == 201
    status, body = await api.post(
        "/api/v1/namespaces/default/serviceaccounts/robot/token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}})
    assert status == 201, body
    return As(api, {"Authorization": f"Bearer {body['status']['token']}"})


async def grant(api: API, namespace: str, rules: list[Obj], name: str = "reader") -> None:
    status, body = await api.post(f"{RBAC}/namespaces/{namespace}/roles", {
        "metadata": {"name": name}, "rules": rules})
    assert status == 201, body
    status, body = await api.post(f"{RBAC}/namespaces/{namespace}/rolebindings", {
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": "robot", "namespace": "default"}]})
    assert status == 201, body


async def test_a_service_account_without_bindings_may_only_discover(api: API) -> None:
    me = await robot(api)
    status, body = await me.request("GET", "/api/v1/namespaces/default/configmaps")
    assert status == 403
    assert body["reason"] == "Forbidden"
    assert body["message"] == (f'configmaps is forbidden: User "{ROBOT}" cannot list resource '
                               '"configmaps" in API group "" in the namespace "default"')
    assert body["details"] == {"kind": "configmaps"}
    status, body = await me.request("GET", "/api/v1/namespaces/default/configmaps/x")
    assert body["message"] == (f'configmaps "x" is forbidden: User "{ROBOT}" cannot get '
                               'resource "configmaps" in API group "" in the namespace '
                               '"default"')
    status, body = await me.request("GET", "/apis/apps/v1/deployments?watch=true")
    assert body["message"] == (f'deployments.apps is forbidden: User "{ROBOT}" cannot watch '
                               'resource "deployments" in API group "apps" at the cluster '
                               "scope")
    status, body = await me.request("GET", "/metrics")
    assert (status, body["message"]) == (
        403, f'forbidden: User "{ROBOT}" cannot get path "/metrics"')
    assert (await me.request("GET", "/api"))[0] == 200
    assert (await me.request("GET", "/apis/apps/v1"))[0] == 200
    assert (await me.request("GET", "/version"))[0] == 200


async def test_a_role_binding_grants_its_rules_in_its_namespace_only(api: API) -> None:
    me = await robot(api)
    await grant(api, "default", [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]},
        {"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["mine"],
         "verbs": ["get"]},
        {"apiGroups": ["apps"], "resources": ["*/scale"], "verbs": ["get"]}])
    assert (await me.request("GET", "/api/v1/namespaces/default/configmaps"))[0] == 200
    assert (await me.request("GET", "/api/v1/namespaces/kube-system/configmaps"))[0] == 403
    assert (await me.request("POST", "/api/v1/namespaces/default/configmaps",
                             {"metadata": {"name": "x"}}))[0] == 403
    assert (await me.request("GET", "/api/v1/namespaces/default/secrets/mine"))[0] == 404
    assert (await me.request("GET", "/api/v1/namespaces/default/secrets/other"))[0] == 403
    assert (await me.request("GET", "/api/v1/namespaces/default/secrets"))[0] == 403
    assert (await me.request("GET",
                             "/apis/apps/v1/namespaces/default/deployments/d/scale"))[0] == 404
    assert (await me.request("GET", "/apis/apps/v1/namespaces/default/deployments/d"))[0] \
        == 403

    # a binding removed takes effect at once
    assert (await api.delete(f"{RBAC}/namespaces/default/rolebindings/reader"))[0] == 200
    assert (await me.request("GET", "/api/v1/namespaces/default/configmaps"))[0] == 403


async def test_access_reviews_answer_with_the_authorizer(api: API) -> None:
    me = await robot(api)
    await grant(api, "default", [{"apiGroups": [""], "resources": ["pods"],
                                  "verbs": ["list"]}])

    async def can(resource: str, verb: str, namespace: str = "default") -> Obj:
        status, body = await me.request(
            "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
             "spec": {"resourceAttributes": {"namespace": namespace, "verb": verb,
                                             "resource": resource}}})
        assert status == 201, body
        return dict(body["status"])

    # pkg/registry/rbac/validation/rule.go (roleBindingDescriber, describeSubject): the
    # binding and the service account are each written "name/namespace"
    assert await can("pods", "list") == {
        "allowed": True, "reason": 'RBAC: allowed by RoleBinding "reader/default" of Role '
                                   '"reader" to ServiceAccount "robot/default"'}
    assert await can("pods", "delete") == {"allowed": False}
    assert await can("pods", "list", "kube-system") == {"allowed": False}

    status, body = await api.post("/apis/authorization.k8s.io/v1/subjectaccessreviews", {
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": ROBOT, "groups": ["system:authenticated"],
                 "nonResourceAttributes": {"path": "/apis/apps", "verb": "get"}}})
    assert status == 201 and body["status"]["allowed"] is True

    status, body = await me.request(
        "POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
        {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
         "spec": {"namespace": "default"}})
    assert status == 201
    assert {"verbs": ["list"], "apiGroups": [""], "resources": ["pods"]} in \
        body["status"]["resourceRules"]
    status, body = await me.request(
        "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    assert body["status"]["userInfo"]["username"] == ROBOT


async def test_the_administrator_impersonates_and_a_service_account_may_not(
        api: API, cluster: RunningCluster) -> None:
    me = await robot(api)
    impersonating = As(api, {"Authorization": f"Bearer {cluster.token}",
                             "Impersonate-User": ROBOT})
    status, body = await impersonating.request("GET", "/api/v1/namespaces/default/pods")
    assert status == 403 and f'User "{ROBOT}" cannot list' in body["message"]
    status, body = await impersonating.request(
        "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    assert body["status"]["userInfo"] == {
        "username": ROBOT, "groups": ["system:serviceaccounts",
                                      "system:serviceaccounts:default",
                                      "system:authenticated"]}

    status, body = await As(api, {**me.headers, "Impersonate-User": "alice"}).request(
        "GET", "/api")
    assert status == 403
    assert body["message"] == (f'users "alice" is forbidden: User "{ROBOT}" cannot '
                               'impersonate resource "users" in API group "" at the cluster '
                               "scope")


async def test_an_aggregated_cluster_role_gathers_the_rules_it_selects(api: API) -> None:
    roles = f"{RBAC}/clusterroles"
    status, body = await api.post(roles, {
        "metadata": {"name": "widget-viewer"},
        "aggregationRule": {"clusterRoleSelectors": [
            {"matchLabels": {"example.com/aggregate-to-viewer": "true"}}]},
        "rules": []})
    assert status == 201, body
    me = await robot(api)
    assert (await api.post(f"{RBAC}/clusterrolebindings", {
        "metadata": {"name": "robot-views"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "widget-viewer"},
        "subjects": [{"kind": "ServiceAccount", "name": "robot",
                      "namespace": "default"}]}))[0] == 201
    assert (await me.request("GET", "/api/v1/namespaces/default/configmaps"))[0] == 403

    status, body = await api.post(roles, {
        "metadata": {"name": "configmap-reader",
                     "labels": {"example.com/aggregate-to-viewer": "true"}},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]})
    assert status == 201, body

    async def aggregated() -> Any:
        return (await api.get(f"{roles}/widget-viewer"))[1].get("rules")

    assert await wait_for(aggregated) == [{"apiGroups": [""], "resources": ["configmaps"],
                                   "verbs": ["list"]}]
    assert (await me.request("GET", "/api/v1/namespaces/default/configmaps"))[0] == 200
    assert (await api.delete(f"{roles}/configmap-reader"))[0] == 200
    async def no_longer_aggregated() -> bool:
        return not await aggregated()

    await wait_for(no_longer_aggregated)
    assert (await me.request("GET", "/api/v1/namespaces/default/configmaps"))[0] == 403


async def test_nobody_grants_what_they_do_not_hold(api: API) -> None:
    me = await robot(api)
    await grant(api, "default", [
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles", "rolebindings"],
         "verbs": ["create"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}], name="admin")
    roles = f"{RBAC}/namespaces/default/roles"
    status, body = await me.request("POST", roles, {
        "metadata": {"name": "lesser"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]})
    assert status == 201, body
    status, body = await me.request("POST", roles, {
        "metadata": {"name": "greater"},
        "rules": [{"apiGroups": [""], "resources": ["pods", "secrets"],
                   "verbs": ["list", "delete"]}]})
    assert status == 403
    groups = '"system:serviceaccounts" "system:serviceaccounts:default" "system:authenticated"'
    assert body["message"] == (
        f'roles.rbac.authorization.k8s.io "greater" is forbidden: user "{ROBOT}" '
        f"(groups=[{groups}]) is attempting to grant RBAC permissions not currently held:\n"
        '{APIGroups:[""], Resources:["pods"], Verbs:["delete"]}\n'
        '{APIGroups:[""], Resources:["secrets"], Verbs:["list" "delete"]}')

    bind = {"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": "cluster-admin"},
            "subjects": [{"kind": "ServiceAccount", "name": "robot", "namespace": "default"}]}
    status, body = await me.request("POST", f"{RBAC}/namespaces/default/rolebindings",
                                    {"metadata": {"name": "up"}, **bind})
    assert status == 403 and "is attempting to grant RBAC permissions" in body["message"]
    status, body = await me.request("POST", f"{RBAC}/namespaces/default/rolebindings", {
        "metadata": {"name": "fine"}, **bind,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                    "name": "lesser"}})
    assert status == 201, body
    # the administrator (system:masters) may grant anything
    assert (await api.post(f"{RBAC}/namespaces/default/rolebindings",
                           {"metadata": {"name": "up"}, **bind}))[0] == 201


async def test_a_binding_of_a_missing_role_is_forbidden(api: API) -> None:
    """pkg/registry/rbac/rolebinding/policybased/storage.go: unless the user may ``bind``
    the role, its rules are looked up (rule.go GetRoleReferenceRules) and a lookup that
    fails refuses the binding as Forbidden, before the binding is validated."""
    me = await robot(api)
    await grant(api, "default", [{"apiGroups": ["rbac.authorization.k8s.io"],
                                  "resources": ["rolebindings"], "verbs": ["create"]}],
                name="binder")
    subjects = [{"kind": "ServiceAccount", "name": "robot", "namespace": "default"}]
    path = f"{RBAC}/namespaces/default/rolebindings"
    status, body = await me.request("POST", path, {
        "metadata": {"name": "ghost"}, "subjects": subjects,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "no-such-role"}})
    assert (status, body["message"]) == (403, (
        'rolebindings.rbac.authorization.k8s.io "ghost" is forbidden: '
        'clusterroles.rbac.authorization.k8s.io "no-such-role" not found'))
    status, body = await me.request("POST", path, {
        "metadata": {"name": "odd"}, "subjects": subjects,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Pod", "name": "p"}})
    assert (status, body["message"]) == (403, (
        'rolebindings.rbac.authorization.k8s.io "odd" is forbidden: unsupported role '
        'reference kind: "Pod"'))


async def test_the_view_and_edit_roles_are_there_to_bind(api: API) -> None:
    me = await robot(api)

    async def aggregated(name: str) -> list[Any]:
        async def rules() -> list[Any]:
            return list((await api.get(f"{RBAC}/clusterroles/{name}"))[1].get("rules") or [])

        return list(await wait_for(rules))

    view = await aggregated("view")
    assert {"apiGroups": [""], "resources": ["namespaces"],
            "verbs": ["get", "list", "watch"]} in view
    assert len(await aggregated("edit")) > len(view)
    assert len(await aggregated("admin")) > len(await aggregated("edit"))

    status, body = await api.post(f"{RBAC}/namespaces/default/rolebindings", {
        "metadata": {"name": "robot-views"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "view"},
        "subjects": [{"kind": "ServiceAccount", "name": "robot", "namespace": "default"}]})
    assert status == 201, body
    assert (await me.request("GET", "/apis/apps/v1/namespaces/default/deployments"))[0] == 200
    assert (await me.request("GET", "/api/v1/namespaces/default/secrets"))[0] == 403
    assert (await me.request("POST", "/api/v1/namespaces/default/configmaps",
                             {"metadata": {"name": "x"}}))[0] == 403


async def test_impersonated_extras_and_uid_are_authorized_and_carried(
        api: API, cluster: RunningCluster) -> None:
    """k8s.io/apiserver pkg/endpoints/filters/impersonation.go: each ``Impersonate-Extra-<key>``
    value needs ``impersonate`` on ``userextras/<key>`` and ``Impersonate-Uid`` on ``uids``
    (group authentication.k8s.io); the user then carries them. Without ``Impersonate-User``
    they are the filter's InternalError (they were ignored, the request run as the caller)."""
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    admin = {"Authorization": f"Bearer {cluster.token}"}
    status, body = await As(api, {**admin, "Impersonate-User": "alice",
                                  "Impersonate-Uid": "u-1",
                                  "Impersonate-Extra-Acme.com%2Fproject": "p1",
                                  "Impersonate-Extra-scopes": "openid"}).request(
        "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", review)
    assert status == 201, body
    assert body["status"]["userInfo"] == {
        "username": "alice", "uid": "u-1", "groups": ["system:authenticated"],
        "extra": {"acme.com/project": ["p1"], "scopes": ["openid"]}}

    status, body = await As(api, {**admin, "Impersonate-Uid": "u-1"}).request("GET", "/api")
    assert (status, body["reason"], body["message"]) == (
        500, "InternalError", "Internal error occurred: requested "
        "[{UID  u-1  authentication.k8s.io/v1  }] without impersonating a user")
    status, body = await As(api, {**admin, "Impersonate-Group": "g"}).request("GET", "/api")
    assert (status, body["message"]) == (
        500, "Internal error occurred: requested [{Group  g    }] without impersonating a user")

    # a service account allowed to impersonate alice, but no extras
    me = await robot(api)
    status, body = await api.post(f"{RBAC}/clusterroles", {
        "metadata": {"name": "as-alice"},
        "rules": [{"apiGroups": [""], "resources": ["users"], "verbs": ["impersonate"],
                   "resourceNames": ["alice"]}]})
    assert status == 201, body
    status, body = await api.post(f"{RBAC}/clusterrolebindings", {
        "metadata": {"name": "as-alice"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "as-alice"},
        "subjects": [{"kind": "ServiceAccount", "name": "robot", "namespace": "default"}]})
    assert status == 201, body
    status, body = await As(api, {**me.headers, "Impersonate-User": "alice",
                                  "Impersonate-Extra-scopes": "admin"}).request("GET", "/api")
    assert status == 403
    assert body["message"] == (
        f'userextras.authentication.k8s.io "admin" is forbidden: User "{ROBOT}" cannot '
        'impersonate resource "userextras/scopes" in API group "authentication.k8s.io" at '
        "the cluster scope")
    status, body = await As(api, {**me.headers, "Impersonate-User": "alice",
                                  "Impersonate-Uid": "u-2"}).request("GET", "/api")
    assert status == 403
    assert body["message"] == (
        f'uids.authentication.k8s.io "u-2" is forbidden: User "{ROBOT}" cannot impersonate '
        'resource "uids" in API group "authentication.k8s.io" at the cluster scope')

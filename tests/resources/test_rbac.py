"""RBAC generation grants exactly what the declarations need, and nothing more."""

from __future__ import annotations

from typing import Any

from setpoint.resources import CustomResource, Permissions, generate_manifests, generate_rbac
from setpoint.resources.models import ConfigMap, Namespace, Pod

from .conftest import API


class Widget(CustomResource, group="bench.setpoint.dev", version="v1"):
    pass


WIDGET_OPERATOR = Permissions(
    watches=[Widget, Pod], owns=[ConfigMap], writes_status=[Widget], owners=[Widget],
    events=True, leader_election=True,
)


def _by_kind(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind]


def test_cluster_wide_operator_gets_one_cluster_role_with_minimal_rules() -> None:
    docs = generate_rbac(WIDGET_OPERATOR, name="widget-operator", namespace="ops")
    [role] = _by_kind(docs, "ClusterRole")
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["configmaps"],
         "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
        # the recorder writes core/v1 Events (kubebuilder: groups=core,resources=events)
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["bench.setpoint.dev"], "resources": ["widgets"],
         "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["bench.setpoint.dev"], "resources": ["widgets/finalizers"],
         "verbs": ["update"]},
        {"apiGroups": ["bench.setpoint.dev"], "resources": ["widgets/status"],
         "verbs": ["get", "update", "patch"]},
    ]
    [binding] = _by_kind(docs, "ClusterRoleBinding")
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io",
                                  "kind": "ClusterRole", "name": "widget-operator"}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "widget-operator",
                                    "namespace": "ops"}]


def test_leader_election_is_a_role_on_leases_in_the_operator_namespace() -> None:
    """The Lease lock's verbs and its LeaderElection events (kubebuilder's
    leader_election_role.yaml), in the Lease's namespace."""
    docs = generate_rbac(WIDGET_OPERATOR, name="w", namespace="ops")
    [role] = _by_kind(docs, "Role")
    assert role["metadata"]["namespace"] == "ops"
    assert role["rules"] == [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                              "verbs": ["get", "create", "update"]},
                             {"apiGroups": [""], "resources": ["events"],
                              "verbs": ["create", "patch"]}]
    [binding] = _by_kind(docs, "RoleBinding")
    assert binding["roleRef"]["name"] == role["metadata"]["name"]


def test_the_leader_election_role_goes_where_the_lease_is() -> None:
    docs = generate_rbac(WIDGET_OPERATOR, name="w", namespace="ops",
                         leader_election_namespace="leases")
    [role] = _by_kind(docs, "Role")
    [binding] = _by_kind(docs, "RoleBinding")
    assert role["metadata"]["namespace"] == binding["metadata"]["namespace"] == "leases"
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "w",
                                    "namespace": "ops"}]


def test_nothing_is_granted_that_was_not_declared() -> None:
    docs = generate_rbac(Permissions(watches=[Pod]), name="ro")
    assert [d["kind"] for d in docs] == ["ClusterRole", "ClusterRoleBinding"]
    assert docs[0]["rules"] == [{"apiGroups": [""], "resources": ["pods"],
                                 "verbs": ["get", "list", "watch"]}]


def test_declarations_of_several_controllers_merge_verbs_per_resource() -> None:
    class Controller:
        permissions = Permissions(owns=["deployments.apps"])

    docs = generate_rbac([Permissions(watches=[("apps", "deployments")]), Controller()])
    assert docs[0]["rules"] == [{"apiGroups": ["apps"], "resources": ["deployments"],
                                 "verbs": ["get", "list", "watch", "create", "update",
                                           "patch", "delete"]}]


def test_namespaced_operator_gets_roles_per_namespace_and_cluster_role_for_cluster_kinds() -> None:
    perms = Permissions(watches=[Pod, Namespace], namespaces=["a", "b"])
    docs = generate_rbac(perms, name="ns-op", namespace="a")
    roles = _by_kind(docs, "Role")
    assert [r["metadata"]["namespace"] for r in roles] == ["a", "b"]
    assert roles[0]["rules"] == [{"apiGroups": [""], "resources": ["pods"],
                                  "verbs": ["get", "list", "watch"]}]
    [cluster_role] = _by_kind(docs, "ClusterRole")
    assert cluster_role["rules"][0]["resources"] == ["namespaces"]


def test_manifests_run_the_operator_with_probes_and_its_service_account() -> None:
    docs = generate_manifests("widget-operator", "example/widget:1", "ops", WIDGET_OPERATOR,
                              run="widget.operator:manager")
    kinds = [d["kind"] for d in docs]
    assert kinds[:2] == ["Namespace", "ServiceAccount"]
    assert kinds[-1] == "Deployment"
    deploy = docs[-1]
    assert deploy["spec"]["replicas"] == 1
    pod = deploy["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "widget-operator"
    [container] = pod["containers"]
    assert container["command"] == ["setpoint", "run", "widget.operator:manager",
                                    "--http-address", "0.0.0.0:8081"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    # the manager serves probes and metrics on one port, and the probes point at it
    assert [p["name"] for p in container["ports"]] == ["metrics"]
    assert container["livenessProbe"]["httpGet"]["port"] == "metrics"
    assert deploy["spec"]["selector"]["matchLabels"].items() <= (
        deploy["spec"]["template"]["metadata"]["labels"].items())


async def test_the_server_accepts_the_generated_manifests(api: API) -> None:
    docs = generate_manifests("widget-operator", "example/widget:1", "ops", WIDGET_OPERATOR)
    for doc in docs:
        group_version = doc["apiVersion"]
        base = "/api/v1" if group_version == "v1" else f"/apis/{group_version}"
        ns = doc["metadata"].get("namespace")
        plural = {"Namespace": "namespaces", "ServiceAccount": "serviceaccounts",
                  "ClusterRole": "clusterroles", "ClusterRoleBinding": "clusterrolebindings",
                  "Role": "roles", "RoleBinding": "rolebindings",
                  "Deployment": "deployments"}[doc["kind"]]
        path = f"{base}/namespaces/{ns}/{plural}" if ns else f"{base}/{plural}"
        await api.create(path, doc)

"""The maturity checks' rules on small manifests: whose RBAC counts, what a shared
ServiceAccount or a dangerous verb is, and CRD versions.

RBAC subjects and role references are read as rbac/v1 defines them
(kubernetes/pkg/apis/rbac/v1/helpers.go, plugin/pkg/auth/authorizer/rbac/rbac.go
``appliesToUser``): a RoleBinding's ServiceAccount subject without a namespace is in the
binding's namespace; a RoleBinding may grant a ClusterRole's rules within its namespace;
the groups ``system:serviceaccounts`` and ``system:serviceaccounts:NS`` hold every account.
"""

from __future__ import annotations

from typing import Any

from setpoint.platform.maturitychecks import static_verdicts
from setpoint.platform.operatorfacts import facts_from_manifests

RBAC = "rbac.authorization.k8s.io/v1"


def deployment(name: str, account: str | None, namespace: str = "ops") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "op", "image": "op:1"}]}
    if account:
        spec["serviceAccountName"] = account
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"template": {"spec": spec}}}


def crd(versions: list[dict[str, Any]], strategy: str = "None") -> dict[str, Any]:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "things.example.com"},
            "spec": {"group": "example.com", "names": {"kind": "Thing", "plural": "things"},
                     "scope": "Namespaced", "conversion": {"strategy": strategy},
                     "versions": versions}}


def version(name: str, storage: bool, fields: list[str]) -> dict[str, Any]:
    spec = {"type": "object", "properties": {f: {"type": "string"} for f in fields}}
    return {"name": name, "served": True, "storage": storage,
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}}}


def statuses(objects: list[dict[str, Any]]) -> dict[str, tuple[str, list[str]]]:
    facts = facts_from_manifests(objects, "test")
    return {v.check.id: (v.status, v.evidence) for v in static_verdicts(facts)}


def test_a_role_binding_grants_a_cluster_role_in_its_namespace_to_an_unqualified_subject(
) -> None:
    objects = [
        deployment("op", "op"),
        {"apiVersion": "v1", "kind": "ServiceAccount",
         "metadata": {"name": "op", "namespace": "ops"}},
        {"apiVersion": RBAC, "kind": "ClusterRole", "metadata": {"name": "op-reader"},
         "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "watch"]}]},
        {"apiVersion": RBAC, "kind": "RoleBinding",
         "metadata": {"name": "op", "namespace": "ops"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                     "name": "op-reader"},
         "subjects": [{"kind": "ServiceAccount", "name": "op"}]},
        # another namespace's account of the same name gets nothing from this
        {"apiVersion": RBAC, "kind": "ClusterRole", "metadata": {"name": "other"},
         "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]},
        {"apiVersion": RBAC, "kind": "ClusterRoleBinding", "metadata": {"name": "other"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                     "name": "other"},
         "subjects": [{"kind": "ServiceAccount", "name": "op", "namespace": "elsewhere"}]},
    ]
    found = statuses(objects)
    assert found["rbac-least-privilege"] == ("pass", [
        "ClusterRole/op-reader via RoleBinding/ops/op: 1 rules on pods"])
    assert found["service-account"][0] == "pass"
    assert found["pod-restarts"][1][0] == "may watch pods (ClusterRole/op-reader)"


def test_the_service_account_group_and_dangerous_verbs() -> None:
    objects = [
        deployment("op", "op"),
        {"apiVersion": "v1", "kind": "ServiceAccount",
         "metadata": {"name": "op", "namespace": "ops"}},
        {"apiVersion": RBAC, "kind": "ClusterRole", "metadata": {"name": "binder"},
         "rules": [{"apiGroups": [RBAC.partition("/")[0]], "resources": ["clusterroles"],
                    "verbs": ["bind", "escalate"]}]},
        {"apiVersion": RBAC, "kind": "ClusterRoleBinding", "metadata": {"name": "all-sa"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                     "name": "binder"},
         "subjects": [{"kind": "Group", "name": "system:serviceaccounts:ops"}]},
    ]
    status, evidence = statuses(objects)["rbac-least-privilege"]
    assert status == "fail"
    assert "ClusterRole/binder: escalate, bind in apiGroups rbac.authorization.k8s.io; " \
           "resources clusterroles; verbs bind,escalate" in evidence


def test_the_default_or_a_shared_service_account_is_not_dedicated() -> None:
    found = statuses([deployment("op", None)])
    assert found["service-account"][0] == "fail"
    assert "the namespace's default ServiceAccount" in found["service-account"][1][-1]
    assert found["rbac-least-privilege"][0] == "fail"

    shared = statuses([deployment("op", "op"), deployment("web", "op"),
                       {"apiVersion": "v1", "kind": "ServiceAccount",
                        "metadata": {"name": "op", "namespace": "ops"}}])
    assert shared["service-account"] == ("fail", [
        "Deployment op runs as ServiceAccount ops/op", "shared with Deployment web"])


def test_crd_versions() -> None:
    # apiextensions validation allows only one storage version; differing schemas served
    # with the None strategy lose the fields one version lacks
    differing = crd([version("v1alpha1", False, ["a"]), version("v1", True, ["a", "b"])])
    status, evidence = statuses([differing])["crd-versioning"]
    assert status == "fail"
    assert evidence[-1] == ("Thing: served versions differ in schema but conversion is None "
                            "(fields are lost between versions)")

    webhook = crd([version("v1alpha1", False, ["a"]), version("v1", True, ["a", "b"])],
                  strategy="Webhook")
    assert statuses([webhook])["crd-versioning"] == ("pass", [
        "Thing: v1alpha1 (served), v1 (served, storage); conversion Webhook"])

    badly_named = crd([version("version1", True, ["a"])])
    assert statuses([badly_named])["crd-versioning"][0] == "fail"

"""The bootstrap RBAC objects of a fresh kube-apiserver 1.32, through real kubectl.

kube-apiserver's ``rbac/bootstrap-roles`` post-start hook creates what kubernetes/kubernetes
plugin/pkg/auth/authorizer/rbac/bootstrappolicy/{policy.go, controller_policy.go,
namespace_policy.go} define; the expected names and rules below are those of that package's
golden ``testdata/*.yaml`` (default feature gates) as of 1.32 (see
setpoint/cluster/authorization/bootstrappolicy.py for which versions and why).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.cluster.conftest import API
from tests.cluster.fidelity.conftest import Kubectl
from tests.waiting import wait_for

pytestmark = pytest.mark.asyncio(loop_scope="module")

RBAC = "rbac.authorization.k8s.io"
CONTROLLERS = [
    "attachdetach-controller", "certificate-controller", "clusterrole-aggregation-controller",
    "cronjob-controller", "daemon-set-controller", "deployment-controller",
    "disruption-controller", "endpoint-controller", "endpointslice-controller",
    "endpointslicemirroring-controller", "ephemeral-volume-controller", "expand-controller",
    "generic-garbage-collector", "horizontal-pod-autoscaler", "job-controller",
    "legacy-service-account-token-cleaner", "namespace-controller", "node-controller",
    "persistent-volume-binder", "pod-garbage-collector", "pv-protection-controller",
    "pvc-protection-controller", "replicaset-controller", "replication-controller",
    "resourcequota-controller", "root-ca-cert-publisher", "route-controller",
    "service-account-controller", "service-controller", "statefulset-controller",
    "ttl-after-finished-controller", "ttl-controller",
    "validatingadmissionpolicy-status-controller"]
"""controller-roles.yaml / controller-role-bindings.yaml: one role and binding each."""
CLUSTER_ROLES = sorted([
    "admin", "cluster-admin", "edit", "view", "system:aggregate-to-admin",
    "system:aggregate-to-edit", "system:aggregate-to-view", "system:auth-delegator",
    "system:basic-user", "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
    "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
    "system:certificates.k8s.io:kube-apiserver-client-approver",
    "system:certificates.k8s.io:kube-apiserver-client-kubelet-approver",
    "system:certificates.k8s.io:kubelet-serving-approver",
    "system:certificates.k8s.io:legacy-unknown-approver", "system:discovery",
    "system:heapster", "system:kube-aggregator", "system:kube-controller-manager",
    "system:kube-dns", "system:kube-scheduler", "system:kubelet-api-admin",
    "system:monitoring", "system:node", "system:node-bootstrapper",
    "system:node-problem-detector", "system:node-proxier",
    "system:persistent-volume-provisioner", "system:public-info-viewer",
    "system:service-account-issuer-discovery", "system:volume-scheduler",
    *(f"system:controller:{c}" for c in CONTROLLERS)])
CLUSTER_ROLE_BINDINGS = sorted([
    "cluster-admin", "system:basic-user", "system:discovery",
    "system:kube-controller-manager", "system:kube-dns", "system:kube-scheduler",
    "system:monitoring", "system:node", "system:node-proxier", "system:public-info-viewer",
    "system:service-account-issuer-discovery", "system:volume-scheduler",
    *(f"system:controller:{c}" for c in CONTROLLERS)])
KUBE_SYSTEM_ROLES = ["extension-apiserver-authentication-reader",
                     "system::leader-locking-kube-controller-manager",
                     "system::leader-locking-kube-scheduler",
                     "system:controller:bootstrap-signer", "system:controller:cloud-provider",
                     "system:controller:token-cleaner"]
KUBE_SYSTEM_ROLE_BINDINGS = ["system::extension-apiserver-authentication-reader",
                             *KUBE_SYSTEM_ROLES[1:]]
EVENTS = {"apiGroups": ["", "events.k8s.io"], "resources": ["events"],
          "verbs": ["create", "patch", "update"]}


async def _names(kubectl: Kubectl, *args: str) -> list[str]:
    code, out, err = await kubectl("get", *args, "-o", "name")
    assert code == 0, err
    return sorted(line.split("/", 1)[1] for line in out.splitlines())


async def _object(kubectl: Kubectl, *args: str) -> dict[str, Any]:
    code, out, err = await kubectl("get", *args, "-o", "json")
    assert code == 0, err
    obj: dict[str, Any] = json.loads(out)
    return obj


async def test_kubectl_lists_the_bootstrap_names(module_kubectl: Kubectl) -> None:
    """cluster-roles.yaml + controller-roles.yaml, their bindings, and namespace-roles.yaml /
    namespace-role-bindings.yaml (kube-system and kube-public)."""
    assert await _names(module_kubectl, "clusterroles") == CLUSTER_ROLES
    assert await _names(module_kubectl, "clusterrolebindings") == CLUSTER_ROLE_BINDINGS
    assert await _names(module_kubectl, "roles", "-n", "kube-system") == KUBE_SYSTEM_ROLES
    assert (await _names(module_kubectl, "rolebindings", "-n", "kube-system")
            == sorted(KUBE_SYSTEM_ROLE_BINDINGS))
    assert await _names(module_kubectl, "roles", "-n", "kube-public") == [
        "system:controller:bootstrap-signer"]
    assert await _names(module_kubectl, "rolebindings", "-n", "kube-public") == [
        "system:controller:bootstrap-signer"]


async def test_bootstrap_objects_carry_rules_labels_and_subjects(
        module_kubectl: Kubectl) -> None:
    """Rules as in the testdata, in its order; every object labelled
    ``kubernetes.io/bootstrapping: rbac-defaults`` and annotated ``autoupdate: "true"``;
    a controller's role bound to its kube-system ServiceAccount (addControllerRole)."""
    role = await _object(module_kubectl, "clusterrole", "system:controller:replicaset-controller")
    assert role["metadata"]["labels"] == {"kubernetes.io/bootstrapping": "rbac-defaults"}
    assert role["metadata"]["annotations"] == {
        "rbac.authorization.kubernetes.io/autoupdate": "true"}
    assert role["rules"] == [
        {"apiGroups": ["apps", "extensions"], "resources": ["replicasets"],
         "verbs": ["get", "list", "update", "watch"]},
        {"apiGroups": ["apps", "extensions"], "resources": ["replicasets/status"],
         "verbs": ["update"]},
        {"apiGroups": ["apps", "extensions"], "resources": ["replicasets/finalizers"],
         "verbs": ["update"]},
        {"apiGroups": [""], "resources": ["pods"],
         "verbs": ["create", "delete", "list", "patch", "watch"]},
        EVENTS]
    binding = await _object(module_kubectl, "clusterrolebinding",
                            "system:controller:replicaset-controller")
    assert binding["roleRef"] == {"apiGroup": RBAC, "kind": "ClusterRole",
                                  "name": "system:controller:replicaset-controller"}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "replicaset-controller",
                                    "namespace": "kube-system"}]
    proxier = await _object(module_kubectl, "clusterrole", "system:node-proxier")
    assert proxier["rules"] == [
        {"apiGroups": [""], "resources": ["endpoints", "services"], "verbs": ["list", "watch"]},
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]},
        EVENTS,
        {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"],
         "verbs": ["list", "watch"]}]
    binding = await _object(module_kubectl, "clusterrolebinding", "system:node-proxier")
    assert binding["subjects"] == [{"apiGroup": RBAC, "kind": "User",
                                    "name": "system:kube-proxy"}]
    node = await _object(module_kubectl, "clusterrolebinding", "system:node")
    assert "subjects" not in node  # bound to no one: the Node authorizer admits kubelets
    reader = await _object(module_kubectl, "role", "-n", "kube-system",
                           "extension-apiserver-authentication-reader")
    assert reader["metadata"]["labels"] == {"kubernetes.io/bootstrapping": "rbac-defaults"}
    assert reader["rules"] == [{"apiGroups": [""],
                                "resourceNames": ["extension-apiserver-authentication"],
                                "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}]
    locking = await _object(module_kubectl, "rolebinding", "-n", "kube-system",
                            "system::leader-locking-kube-scheduler")
    assert locking["subjects"] == [
        {"apiGroup": RBAC, "kind": "User", "name": "system:kube-scheduler"},
        {"kind": "ServiceAccount", "name": "kube-scheduler", "namespace": "kube-system"}]


async def test_controller_service_accounts_hold_their_roles(module_kubectl: Kubectl) -> None:
    """``kubectl auth can-i --as`` (a SubjectAccessReview through impersonation) answers from
    the controller role bindings, and only what they grant."""
    sa = "--as=system:serviceaccount:kube-system:"
    for args, answer in [
            ((f"{sa}replicaset-controller", "create", "pods"), "yes"),
            ((f"{sa}replicaset-controller", "update", "replicasets.apps",
              "--subresource=status"), "yes"),
            ((f"{sa}replicaset-controller", "delete", "nodes"), "no"),
            ((f"{sa}namespace-controller", "deletecollection", "configmaps", "-A"), "yes"),
            (("--as=system:kube-scheduler", "create", "pods", "--subresource=binding"), "yes"),
            (("--as=system:kube-scheduler", "-n", "kube-system", "get", "leases"), "yes")]:
        code, out, err = await module_kubectl("auth", "can-i", *args)
        assert (out.strip(), code) == (answer, 0 if answer == "yes" else 1), (args, err)


async def test_admin_edit_view_aggregate_the_bootstrap_rules(module_api: API) -> None:
    """The aggregates start empty (only an aggregationRule) and are filled by the
    clusterrole-aggregation controller from the ``system:aggregate-to-*`` roles."""
    async def rules(name: str) -> list[Any]:
        status, out = await module_api.get(f"/apis/{RBAC}/v1/clusterroles/{name}")
        assert status == 200, out
        return list(out.get("rules") or [])

    status, view_source = await module_api.get(
        f"/apis/{RBAC}/v1/clusterroles/system:aggregate-to-view")
    assert status == 200
    await wait_for(lambda: _has(rules, "view", view_source["rules"]))
    await wait_for(lambda: _has(rules, "admin", view_source["rules"]))


async def _has(rules: Any, name: str, expected: list[Any]) -> bool:
    got = await rules(name)
    return all(rule in got for rule in expected)

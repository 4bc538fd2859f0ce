"""RBAC as kubectl users meet it: can-i, --as, and the Forbidden errors."""

from __future__ import annotations

from tests.e2e.conftest import Kubectl

# RBAC answers only: no nodes, kubelets or workload controllers needed
WORKLOADS = False


def test_kubectl_impersonates_a_service_account_and_sees_its_bindings(
        any_kubectl: Kubectl, namespace: str) -> None:
    kubectl = any_kubectl
    who = f"system:serviceaccount:{namespace}:robot"
    kubectl.run("create", "serviceaccount", "robot", "-n", namespace)
    can = kubectl.run("auth", "can-i", "list", "pods", "-n", namespace, "--as", who, ok=None)
    assert (can.returncode, can.stdout.strip()) == (1, "no")
    denied = kubectl.run("get", "pods", "-n", namespace, "--as", who, ok=False)
    assert (f'Error from server (Forbidden): pods is forbidden: User "{who}" cannot list '
            f'resource "pods" in API group "" in the namespace "{namespace}"') in denied.stderr

    kubectl.run("create", "role", "pod-reader", "-n", namespace, "--verb=get,list,watch",
                "--resource=pods")
    kubectl.run("create", "rolebinding", "robot-reads-pods", "-n", namespace,
                "--role=pod-reader", f"--serviceaccount={namespace}:robot")
    assert kubectl.run("auth", "can-i", "list", "pods", "-n", namespace, "--as",
                       who).stdout.strip() == "yes"
    assert kubectl.run("auth", "can-i", "delete", "pods", "-n", namespace, "--as", who,
                       ok=None).stdout.strip() == "no"
    assert kubectl.run("auth", "can-i", "list", "pods", "-n", "default", "--as", who,
                       ok=None).stdout.strip() == "no"
    kubectl.run("get", "pods", "-n", namespace, "--as", who)
    rules = kubectl.run("auth", "can-i", "--list", "-n", namespace, "--as", who).stdout
    assert "pods" in rules and "[get list watch]" in rules

"""``setpoint generate rbac`` applied with real kubectl: what the operator's ServiceAccount
may then do, as ``kubectl auth can-i`` asks the server (SelfSubjectAccessReview under
impersonation, answered by the RBAC authorizer)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from setpoint.cli.main import cli
from tests.e2e.conftest import Kubectl

# RBAC answers only: no nodes, kubelets or workload controllers needed
WORKLOADS = False

VERBS = ("get", "list", "watch", "create", "update", "patch", "delete")


def generate(tmp_path: Path, namespace: str, *flags: str) -> Path:
    out = tmp_path / "rbac.yaml"
    result = CliRunner().invoke(cli, ["generate", "rbac", "tests.cli.rbac_target", "--name",
                                      "rbac-target", "-n", namespace, *flags, "-o", str(out)])
    assert result.exit_code == 0, result.output
    return out


def allowed(kubectl: Kubectl, who: str, resource: str, namespace: str) -> set[str]:
    """The verbs ``kubectl auth can-i`` says yes to (exit 0 "yes", exit 1 "no")."""
    found = set()
    for verb in VERBS:
        answer = kubectl.run("auth", "can-i", verb, resource, "-n", namespace, "--as", who,
                             ok=None)
        assert (answer.returncode, answer.stdout.strip()) in ((0, "yes"), (1, "no")), answer
        if answer.returncode == 0:
            found.add(verb)
    return found


def test_leader_elect_grants_exactly_the_lease_locks_verbs_in_its_namespace(
        kubectl: Kubectl, namespace: str, tmp_path: Path) -> None:
    """client-go's LeaseLock (tools/leaderelection/resourcelock/leaselock.go) gets, creates
    and updates its Lease and records its LeaderElection events in the Lease's namespace
    (``RecordEvent``); kubebuilder's leader_election_role.yaml grants these there."""
    who = f"system:serviceaccount:{namespace}:rbac-target"
    kubectl.run("apply", "-f", str(generate(tmp_path, namespace, "--leader-elect")))

    assert allowed(kubectl, who, "leases.coordination.k8s.io", namespace) == {
        "get", "create", "update"}
    assert allowed(kubectl, who, "events", namespace) == {"create", "patch"}
    # a Role, not a ClusterRole: nothing of it in another namespace
    assert allowed(kubectl, who, "leases.coordination.k8s.io", "default") == set()
    assert allowed(kubectl, who, "events", "default") == set()
    # what the operator declared still holds, cluster-wide
    assert allowed(kubectl, who, "configmaps", "default") == {"get", "list", "watch"}


def test_without_leader_election_no_lease_is_granted(
        kubectl: Kubectl, namespace: str, tmp_path: Path) -> None:
    who = f"system:serviceaccount:{namespace}:rbac-target"
    kubectl.run("apply", "-f", str(generate(tmp_path, namespace)))
    assert allowed(kubectl, who, "configmaps", namespace) == {"get", "list", "watch"}
    assert allowed(kubectl, who, "leases.coordination.k8s.io", namespace) == set()
    assert allowed(kubectl, who, "events", namespace) == set()

"""kubectl 1.32's day-to-day workload workflows (rollout, scale, events, ...) against the
server as users run it, with its simulated nodes, kubelets and kube-controller-manager's
controllers: each step's output and exit status as on a kube-apiserver 1.32 cluster.

One server for the module, one namespace per test; kubectl gets a kubeconfig the test wrote
and a cache of its own.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import kubectl_path
from tests.e2e.conftest import Kubectl, unique
from tests.support import ServerProcess


@pytest.fixture
def kubectl(server_process: ServerProcess, tmp_path: Path) -> Kubectl:
    """kubectl 1.32 with a copy of the server's kubeconfig (0600) written by the test."""
    kubeconfig = tmp_path / "kubeconfig"
    shutil.copyfile(server_process.kubeconfig, kubeconfig)
    kubeconfig.chmod(0o600)
    return Kubectl(kubectl_path(), kubeconfig, tmp_path)


def _daemonset(name: str, image: str) -> str:
    return (f"apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {{name: {name}}}\nspec:\n"
            f"  selector: {{matchLabels: {{app: {name}}}}}\n  template:\n"
            f"    metadata: {{labels: {{app: {name}}}}}\n"
            f"    spec: {{containers: [{{name: c, image: '{image}'}}]}}\n")


def _statefulset(name: str, image: str) -> str:
    return (f"apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {{name: {name}}}\nspec:\n"
            f"  serviceName: {name}\n  replicas: 1\n"
            f"  selector: {{matchLabels: {{app: {name}}}}}\n  template:\n"
            f"    metadata: {{labels: {{app: {name}}}}}\n"
            f"    spec: {{containers: [{{name: c, image: '{image}'}}]}}\n")


def test_rollout_undo_to_the_current_revision_is_skipped(kubectl: Kubectl,
                                                         namespace: str) -> None:
    """A ControllerRevision's ``data`` is what Go's ``json.Marshal`` of a
    ``map[string]interface{}`` writes, every object's keys sorted
    (pkg/controller/daemon/update.go and pkg/controller/statefulset/stateful_set_utils.go
    ``getPatch``), and the server serves a RawExtension's bytes as written. ``kubectl rollout
    undo`` compares those bytes with its own marshalling of the owner
    (staging/src/k8s.io/kubectl/pkg/polymorphichelpers/rollback.go ``daemonSetMatch``,
    ``statefulsetMatch``), so an undo to the revision already running is skipped, not
    patched; an undo to an older one rolls back and renumbers it."""
    ns = namespace
    ds, sts = unique("ds"), unique("sts")
    kubectl.run("-n", ns, "apply", "-f", "-",
                stdin=_daemonset(ds, "busybox:1") + "---\n" + _statefulset(sts, "redis:7"))
    for kind, name in (("daemonset", ds), ("statefulset", sts)):
        kubectl.run("-n", ns, "rollout", "status", f"{kind}/{name}", "--timeout=60s")
        done = kubectl.run("-n", ns, "rollout", "undo", f"{kind}/{name}", "--to-revision=1")
        assert (done.stdout, done.stderr) == (
            f"{kind}.apps/{name} skipped rollback (current template already matches "
            "revision 1)\n", "")
    revisions = kubectl.json("-n", ns, "get", "controllerrevisions")["items"]
    assert sorted(r["revision"] for r in revisions) == [1, 1]
    # a second template, then back to the first: revision 1 becomes revision 3
    kubectl.run("-n", ns, "set", "image", f"daemonset/{ds}", "c=busybox:2")
    kubectl.run("-n", ns, "rollout", "status", f"daemonset/{ds}", "--timeout=60s")
    done = kubectl.run("-n", ns, "rollout", "undo", f"daemonset/{ds}")
    assert done.stdout == f"daemonset.apps/{ds} rolled back\n"
    kubectl.run("-n", ns, "rollout", "status", f"daemonset/{ds}", "--timeout=60s")
    history = kubectl.run("-n", ns, "rollout", "history", f"daemonset/{ds}").stdout
    assert history == (f"daemonset.apps/{ds} \nREVISION  CHANGE-CAUSE\n2         <none>\n"
                       "3         <none>\n\n")
    done = kubectl.run("-n", ns, "rollout", "undo", f"daemonset/{ds}", "--to-revision=3")
    assert done.stdout == (f"daemonset.apps/{ds} skipped rollback (current template already "
                           "matches revision 3)\n")

"""kubectl 1.32's workflows of a day at the cluster that no other module covers: ApplySet
pruning, ``--prune-allowlist``, ``replace --force``, ``drain`` with a PodDisruptionBudget
and DaemonSet pods, ``taint``, ``auth reconcile``, ``set subject|selector|env`` and
``certificate deny``; each step's output and exit status as on a kube-apiserver 1.32
cluster (kubectl prints what the server answers).

One server for the module (``setpoint cluster up`` with its simulated nodes and
controllers), one namespace per test; kubectl gets a kubeconfig the test wrote and a cache
of its own.
"""

from __future__ import annotations

import base64
import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import kubectl_path
from tests.e2e.conftest import Kubectl, unique, wait_until
from tests.support import ServerProcess


class ApplySetKubectl(Kubectl):
    """kubectl with ApplySets turned on (``KUBECTL_APPLYSET=true``, alpha in 1.32)."""

    def env(self) -> dict[str, str]:
        return {**super().env(), "KUBECTL_APPLYSET": "true"}


@pytest.fixture
def kubectl(server_process: ServerProcess, tmp_path: Path) -> Kubectl:
    """kubectl 1.32 with a copy of the server's kubeconfig (0600) written by the test."""
    kubeconfig = tmp_path / "kubeconfig"
    shutil.copyfile(server_process.kubeconfig, kubeconfig)
    kubeconfig.chmod(0o600)
    return ApplySetKubectl(kubectl_path(), kubeconfig, tmp_path)


def _configmaps(ns: str, *names: str) -> str:
    return "---\n".join(f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {n}, "
                        f"namespace: {ns}}}\ndata: {{k: {n}}}\n" for n in names)


def test_apply_prune_with_an_applyset_labels_its_members_and_prunes_the_dropped(
        kubectl: Kubectl, namespace: str) -> None:
    """kubectl keeps an ApplySet on its parent Secret: the id label is
    ``applyset-<base64url(sha256(name.namespace.Secret.))>-v1`` and the contains-group-kinds
    annotation lists the kinds it applied (staging/src/k8s.io/kubectl/pkg/cmd/apply/
    applyset.go ``ID``, ``updateParentLabelsAndAnnotations``); members carry the
    ``part-of`` label, and the next apply prunes the member it no longer lists."""
    ns = namespace
    out = kubectl.run("apply", "-n", ns, "--prune", "--applyset=set1", "-f", "-",
                      stdin=_configmaps(ns, "one", "two"))
    assert out.stdout == "configmap/one created\nconfigmap/two created\n"
    parent = kubectl.json("-n", ns, "get", "secret", "set1")
    labels, annotations = parent["metadata"]["labels"], parent["metadata"]["annotations"]
    digest = hashlib.sha256(f"set1.{ns}.Secret.".encode()).digest()
    set_id = f"applyset-{base64.urlsafe_b64encode(digest).decode().rstrip('=')}-v1"
    assert labels == {"applyset.kubernetes.io/id": set_id}
    assert annotations["applyset.kubernetes.io/contains-group-kinds"] == "ConfigMap"
    members = kubectl.json("-n", ns, "get", "configmaps", "-l",
                           f"applyset.kubernetes.io/part-of={set_id}")["items"]
    assert sorted(m["metadata"]["name"] for m in members) == ["one", "two"]
    out = kubectl.run("apply", "-n", ns, "--prune", "--applyset=set1", "-f", "-",
                      stdin=_configmaps(ns, "one"))
    assert out.stdout == "configmap/one unchanged\nconfigmap/two pruned\n"
    kubectl.run("-n", ns, "get", "configmap", "two", ok=False)


def test_apply_prune_allowlist_prunes_only_the_listed_kinds(kubectl: Kubectl,
                                                           namespace: str) -> None:
    """``--prune --all --prune-allowlist`` lists the allowlisted kinds and deletes those
    with a last-applied annotation that the input no longer has (kubectl apply/prune.go);
    an object created without ``apply`` (the namespace's ``kube-root-ca.crt``) stays."""
    ns = namespace
    kubectl.run("apply", "-f", "-", stdin=_configmaps(ns, "keep", "drop"))
    out = kubectl.run("apply", "-n", ns, "--prune", "--all",
                      "--prune-allowlist=core/v1/ConfigMap", "-f", "-",
                      stdin=_configmaps(ns, "keep"))
    assert out.stdout == "configmap/keep unchanged\nconfigmap/drop pruned\n"
    left = kubectl.json("-n", ns, "get", "configmaps")["items"]
    assert sorted(m["metadata"]["name"] for m in left) == ["keep", "kube-root-ca.crt"]


def test_replace_force_deletes_and_recreates_with_a_new_uid(kubectl: Kubectl,
                                                           namespace: str) -> None:
    """``replace --force`` deletes the object, waits until it is gone and creates it again
    (kubectl replace.go ``forceReplace``): a new uid, the same name."""
    ns = namespace
    kubectl.run("-n", ns, "create", "configmap", "cfg", "--from-literal=a=1")
    before = kubectl.json("-n", ns, "get", "configmap", "cfg")
    body = _configmaps(ns, "cfg").replace("k: cfg", "a: '2'")
    out = kubectl.run("replace", "--force", "-f", "-", stdin=body)
    assert out.stdout == 'configmap "cfg" deleted\nconfigmap/cfg replaced\n'
    after = kubectl.json("-n", ns, "get", "configmap", "cfg")
    assert after["data"] == {"a": "2"}
    assert after["metadata"]["uid"] != before["metadata"]["uid"]


def test_drain_refuses_daemonset_pods_and_waits_on_a_disruption_budget(
        kubectl: Kubectl, namespace: str) -> None:
    """``drain`` cordons, refuses DaemonSet pods without ``--ignore-daemonsets``, and evicts
    through ``pods/eviction``: a PodDisruptionBudget with no disruption allowed answers 429
    "Cannot evict pod as it would violate the pod's disruption budget." (pkg/registry/core/
    pod/storage/eviction.go), which kubectl retries until its timeout; without the budget
    the pod is evicted and its ReplicaSet replaces it on another node."""
    ns = namespace
    kubectl.run("-n", ns, "create", "deployment", "web", "--image=nginx:1", "--replicas=3")
    kubectl.run("-n", ns, "apply", "-f", "-", stdin=(
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: agent}\nspec:\n"
        "  selector: {matchLabels: {app: agent}}\n  template:\n"
        "    metadata: {labels: {app: agent}}\n"
        "    spec: {containers: [{name: c, image: 'busybox:1'}]}\n"))
    kubectl.run("-n", ns, "rollout", "status", "deployment/web", "--timeout=30s")
    kubectl.run("-n", ns, "rollout", "status", "daemonset/agent", "--timeout=30s")
    kubectl.run("-n", ns, "create", "pdb", "web", "--selector=app=web", "--min-available=3")
    wait_until(lambda: kubectl.json("-n", ns, "get", "pdb", "web").get("status", {}).get(
        "currentHealthy") == 3)
    pods = kubectl.json("-n", ns, "get", "pods", "-l", "app=web")["items"]
    node = pods[0]["spec"]["nodeName"]
    web_pods = sorted(p["metadata"]["name"] for p in pods if p["spec"]["nodeName"] == node)
    agent = next(p["metadata"]["name"] for p in kubectl.json(
        "-n", ns, "get", "pods", "-l", "app=agent")["items"] if p["spec"]["nodeName"] == node)
    try:
        refused = kubectl.run("drain", node, ok=False)
        assert refused.stdout == f"node/{node} cordoned\n"
        assert ("cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore): "
                f"{ns}/{agent}") in refused.stderr
        blocked = kubectl.run("drain", node, "--ignore-daemonsets", "--pod-selector=app=web",
                              "--timeout=2s", ok=False)
        assert "Cannot evict pod as it would violate the pod's disruption budget." \
            in blocked.stderr
        kubectl.run("-n", ns, "delete", "pdb", "web")
        done = kubectl.run("drain", node, "--ignore-daemonsets", "--pod-selector=app=web",
                           "--timeout=30s")
        assert done.stdout.endswith(f"node/{node} drained\n")
        for name in web_pods:
            assert f"pod/{name} evicted\n" in done.stdout
        assert kubectl.json("get", "node", node)["spec"]["unschedulable"] is True
        kubectl.run("-n", ns, "rollout", "status", "deployment/web", "--timeout=30s")
        placed = kubectl.json("-n", ns, "get", "pods", "-l", "app=web")["items"]
        assert node not in {p["spec"].get("nodeName") for p in placed}
    finally:
        kubectl.run("uncordon", node, ok=None)
    assert "unschedulable" not in kubectl.json("get", "node", node)["spec"]


def test_taint_adds_refuses_a_duplicate_overwrites_and_removes(kubectl: Kubectl) -> None:
    """``taint`` patches ``spec.taints`` (kubectl taint.go): a second taint of the same key
    and effect needs ``--overwrite``; ``key-`` removes it."""
    node = kubectl.json("get", "nodes")["items"][-1]["metadata"]["name"]
    key = unique("dedicated")
    try:
        assert kubectl.run("taint", "node", node, f"{key}=a:NoSchedule").stdout == \
            f"node/{node} tainted\n"
        again = kubectl.run("taint", "node", node, f"{key}=a:NoSchedule", ok=False)
        assert again.stderr == (f"error: node {node} already has {key} taint(s) with same "
                                "effect(s) and --overwrite is false\n")
        assert kubectl.run("taint", "node", node, f"{key}=b:NoSchedule",
                           "--overwrite").stdout == f"node/{node} modified\n"
        taints = kubectl.json("get", "node", node)["spec"]["taints"]
        assert {"key": key, "value": "b", "effect": "NoSchedule"} in taints
    finally:
        removed = kubectl.run("taint", "node", node, f"{key}-", ok=None)
    assert removed.stdout == f"node/{node} untainted\n"
    assert key not in {t["key"] for t in kubectl.json("get", "node", node)["spec"].get(
        "taints") or []}


def test_auth_reconcile_adds_and_removes_rules_and_subjects(kubectl: Kubectl,
                                                           namespace: str) -> None:
    """``auth reconcile`` creates, then adds the missing rules and subjects and, with
    ``--remove-extra-*``, removes the others (pkg/registry/rbac/reconciliation, run by
    kubectl auth/reconcile.go against the server's objects)."""
    ns, role = namespace, unique("reconciled")

    def manifest(verb: str, user: str) -> str:
        return (f"apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\n"
                f"metadata: {{name: {role}}}\nrules:\n- apiGroups: ['']\n"
                f"  resources: [pods]\n  verbs: [{verb}]\n---\n"
                f"apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\n"
                f"metadata: {{name: {role}, namespace: {ns}}}\n"
                f"roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, "
                f"name: {role}}}\nsubjects:\n- {{kind: User, name: {user}, "
                f"apiGroup: rbac.authorization.k8s.io}}\n")
    try:
        out = kubectl.run("auth", "reconcile", "-f", "-", stdin=manifest("get", "carol"))
        assert out.stdout == (
            f"clusterrole.rbac.authorization.k8s.io/{role} reconciled\n"
            f"rolebinding.rbac.authorization.k8s.io/{role} reconciled\n")
        assert "reconciliation required create" in out.stderr
        kubectl.run("auth", "reconcile", "-f", "-", stdin=manifest("list", "dave"))
        rules = kubectl.json("get", "clusterrole", role)["rules"]
        assert [r["verbs"] for r in rules] == [["get"], ["list"]]
        subjects = kubectl.json("-n", ns, "get", "rolebinding", role)["subjects"]
        assert [s["name"] for s in subjects] == ["carol", "dave"]
        out = kubectl.run("auth", "reconcile", "-f", "-", "--remove-extra-permissions",
                          "--remove-extra-subjects", stdin=manifest("list", "dave"))
        assert "extra rules removed" in out.stderr and "extra subjects removed" in out.stderr
        assert [r["verbs"] for r in kubectl.json("get", "clusterrole", role)["rules"]] == \
            [["list"]]
        assert [s["name"] for s in kubectl.json("-n", ns, "get", "rolebinding",
                                                role)["subjects"]] == ["dave"]
    finally:
        kubectl.run("delete", "clusterrole", role, ok=None)


def test_set_subject_selector_and_env(kubectl: Kubectl, namespace: str) -> None:
    """``set subject``, ``set selector`` and ``set env`` patch the objects they name
    (kubectl cmd/set); ``set env --list`` reads the template back."""
    ns = namespace
    kubectl.run("-n", ns, "create", "rolebinding", "rb", "--clusterrole=view", "--user=bob")
    out = kubectl.run("-n", ns, "set", "subject", "rolebinding/rb", "--user=alice",
                      f"--serviceaccount={ns}:robot", "--group=devs")
    assert out.stdout == "rolebinding.rbac.authorization.k8s.io/rb subjects updated\n"
    subjects = kubectl.json("-n", ns, "get", "rolebinding", "rb")["subjects"]
    assert subjects == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "bob"},
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"},
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "devs"},
        {"kind": "ServiceAccount", "name": "robot", "namespace": ns}]
    kubectl.run("-n", ns, "create", "service", "clusterip", "front", "--tcp=80:8080")
    assert kubectl.run("-n", ns, "set", "selector", "service/front", "app=web").stdout == \
        "service/front selector updated\n"
    assert kubectl.json("-n", ns, "get", "service", "front")["spec"]["selector"] == \
        {"app": "web"}
    kubectl.run("-n", ns, "create", "deployment", "web", "--image=nginx:1")
    kubectl.run("-n", ns, "set", "env", "deployment/web", "A=1", "B=2")
    assert kubectl.run("-n", ns, "set", "env", "deployment/web", "--list").stdout == \
        "# Deployment web, container nginx\nA=1\nB=2\n"
    kubectl.run("-n", ns, "set", "env", "deployment/web", "A-")
    env = kubectl.json("-n", ns, "get", "deployment", "web")["spec"]["template"]["spec"][
        "containers"][0]["env"]
    assert env == [{"name": "B", "value": "2"}]


def test_certificate_deny_then_approve_is_refused(kubectl: Kubectl, tmp_path: Path) -> None:
    """``certificate deny`` adds the Denied condition through ``/approval``; approving a
    denied request (or denying an approved one) is refused by kubectl, which reads the
    conditions the server kept (kubectl certificates.go ``modifyCertificateCondition``)."""
    key, csr = tmp_path / "u.key", tmp_path / "u.csr"
    subprocess.run(["openssl", "req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout",
                    str(key), "-subj", "/CN=eve", "-out", str(csr)], check=True,
                   capture_output=True)
    request = base64.b64encode(csr.read_bytes()).decode()
    names = [unique("csr-deny"), unique("csr-approve")]
    try:
        for name in names:
            kubectl.run("apply", "-f", "-", stdin=(
                "apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\n"
                f"metadata: {{name: {name}}}\nspec:\n  request: {request}\n"
                "  signerName: kubernetes.io/kube-apiserver-client\n"
                "  usages: [client auth]\n"))
        denied, approved = names
        out = kubectl.run("certificate", "deny", denied)
        assert out.stdout == f"certificatesigningrequest.certificates.k8s.io/{denied} denied\n"
        again = kubectl.run("certificate", "approve", denied, ok=False)
        assert again.stderr == \
            f'error: certificate signing request "{denied}" is already Denied\n'
        kubectl.run("certificate", "approve", approved)
        again = kubectl.run("certificate", "deny", approved, ok=False)
        assert again.stderr == \
            f'error: certificate signing request "{approved}" is already Approved\n'
        conditions = kubectl.json("get", "csr", denied)["status"]["conditions"]
        assert [(c["type"], c["status"]) for c in conditions] == [("Denied", "True")]
    finally:
        kubectl.run("delete", "csr", *names, ok=None)

"""kubectl 1.32's workflows over built-in kinds, against a bare server (no workload
controllers, as the shared conformance corpus was recorded): what the server answers shows
in kubectl's output exactly as kube-apiserver 1.32's answer would.

One server for the module (``--no-workloads``: statuses stay as written), one namespace per
test, many commands per test.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest

from tests.e2e.conftest import Kubectl
from tests.support import ServerProcess


@pytest.fixture(scope="module")
def server_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with ServerProcess(tmp_path_factory.mktemp("server"), "--no-workloads") as proc:
        yield proc


def test_create_job_takes_its_template_labels(kubectl: Kubectl, namespace: str) -> None:
    """``kubectl create job`` sends a Job without labels; the Job strategy's generateSelector
    (pkg/registry/batch/job/strategy.go) gives its template the controller-uid and job-name
    labels, and SetDefaults_Job (pkg/apis/batch/v1/defaults.go: a Job without labels takes
    its template's) runs again whenever the stored Job is decoded, the create's answer and a
    dry run's copy (registry/generic/registry/dryrun.go copyInto) included. Labels of the
    Job's own are kept."""
    ns = namespace
    created = kubectl.json("-n", ns, "create", "job", "j1", "--image=busybox")
    uid = created["metadata"]["uid"]
    expected = {"batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": "j1",
                "controller-uid": uid, "job-name": "j1"}
    assert created["metadata"]["labels"] == expected
    assert kubectl.json("-n", ns, "get", "job", "j1")["metadata"]["labels"] == expected
    shown = kubectl.run("-n", ns, "get", "job", "j1", "--show-labels").stdout
    assert f"batch.kubernetes.io/controller-uid={uid},batch.kubernetes.io/job-name=j1," \
           f"controller-uid={uid},job-name=j1\n" in shown
    described = kubectl.run("-n", ns, "describe", "job", "j1").stdout
    assert f"Labels:           batch.kubernetes.io/controller-uid={uid}\n" in described

    dry = kubectl.json("-n", ns, "create", "job", "j2", "--image=busybox",
                       "--dry-run=server")
    assert dry["metadata"]["labels"]["job-name"] == "j2"
    assert dry["metadata"]["labels"]["controller-uid"] == dry["metadata"]["uid"]

    own = kubectl.run("-n", ns, "create", "-f", "-", "-o", "json", stdin=(
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j3, labels: {team: a}}\n"
        "spec:\n  template:\n    spec:\n      restartPolicy: Never\n"
        "      containers: [{name: c, image: busybox}]\n")).stdout
    assert json.loads(own)["metadata"]["labels"] == {"team": "a"}


def test_priority_classes_system_ones_and_generation(kubectl: Kubectl) -> None:
    """kube-apiserver's ``scheduling/bootstrap-system-priority-classes`` post-start hook
    (pkg/registry/scheduling/rest/storage_scheduling.go) creates
    pkg/apis/scheduling/v1/helpers.go's system classes, so every cluster lists them; the
    PriorityClass strategy's PrepareForCreate (pkg/registry/scheduling/priorityclass/
    strategy.go) sets generation 1, which no update moves (rest.BeforeUpdate keeps it)."""
    listed = kubectl.run("get", "priorityclasses").stdout.splitlines()
    rows = [line.split()[:3] for line in listed]
    assert ["system-cluster-critical", "2000000000", "false"] in rows
    assert ["system-node-critical", "2000001000", "false"] in rows
    node_critical = kubectl.json("get", "priorityclass", "system-node-critical")
    assert node_critical["description"] == (
        "Used for system critical pods that must not be moved from their current node.")
    assert node_critical["preemptionPolicy"] == "PreemptLowerPriority"
    assert node_critical["metadata"]["generation"] == 1

    name = f"pc-{uuid.uuid4().hex[:6]}"
    dry = kubectl.yaml("create", "priorityclass", name, "--value=1000", "--dry-run=server")
    assert dry["metadata"]["generation"] == 1
    assert dry["value"] == 1000 and dry["preemptionPolicy"] == "PreemptLowerPriority"
    kubectl.run("create", "priorityclass", name, "--value=1000", "--description=first")
    kubectl.run("annotate", "priorityclass", name, "note=x")
    kubectl.run("label", "priorityclass", name, "tier=a")
    assert kubectl.json("get", "priorityclass", name)["metadata"]["generation"] == 1
    kubectl.run("delete", "priorityclass", name)


def test_only_one_global_default_priority_class(kubectl: Kubectl) -> None:
    """The Priority admission plugin's ``validatePriorityClass``
    (plugin/pkg/admission/priority/admission.go): while a global default exists, creating
    another, or marking another one default, is forbidden; the default itself may be
    updated. (One test: the cluster-wide default would disturb others.)"""
    first, second = f"pc-{uuid.uuid4().hex[:6]}", f"pc-{uuid.uuid4().hex[:6]}"
    kubectl.run("create", "priorityclass", first, "--value=10", "--global-default")
    try:
        refused = kubectl.run("create", "priorityclass", second, "--value=20",
                              "--global-default", ok=False)
        assert refused.stderr == (
            f"error: failed to create priorityclass: priorityclasses.scheduling.k8s.io "
            f'"{second}" is forbidden: PriorityClass {first} is already marked as default. '
            "Only one default can exist\n")
        dry = kubectl.run("create", "priorityclass", second, "--value=20", "--global-default",
                          "--dry-run=server", ok=False)
        assert "is already marked as default" in dry.stderr
        kubectl.run("create", "priorityclass", second, "--value=20")
        patched = kubectl.run("patch", "priorityclass", second, "--type=merge",
                              "-p", '{"globalDefault":true}', ok=False)
        assert patched.stderr == (
            f'Error from server (Forbidden): priorityclasses.scheduling.k8s.io "{second}" is '
            f"forbidden: PriorityClass {first} is already marked as default. "
            "Only one default can exist\n")
        kubectl.run("annotate", "priorityclass", first, "note=still-default")
    finally:
        kubectl.run("delete", "priorityclass", first, second, "--ignore-not-found")


GENERATED_DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  creationTimestamp: null
  labels:
    app: gen
  name: gen
spec:
  replicas: {replicas}
  selector:
    matchLabels:
      app: gen
  strategy: {{}}
  template:
    metadata:
      creationTimestamp: null
      labels:
        app: gen
    spec:
      containers:
      - image: nginx
        name: nginx
        resources: {{}}
        env: [{{name: X, value: "a<b&c"}}]
status: {{}}
"""


def test_server_side_apply_keeps_the_last_applied_annotation_as_sent(
        kubectl: Kubectl, namespace: str) -> None:
    """``kubectl create --dry-run=client -o yaml`` output (nulls, ``status: {}``) applied
    client-side, then server-side by the ``kubectl`` manager with a changed field: the
    lastAppliedManager lets the conflicts with what the annotation records through, and the
    lastAppliedUpdater (k8s.io/apimachinery/pkg/util/managedfields/internal/
    lastappliedupdater.go ``buildLastApplied``) rewrites the annotation from the applied
    configuration as sent (sigs.k8s.io/yaml's map in patch.go's applyPatcher: nulls kept),
    encoded by Go's JSON encoder (sorted keys, HTML escaped, a trailing newline)."""
    ns = namespace
    kubectl.run("-n", ns, "apply", "-f", "-", stdin=GENERATED_DEPLOYMENT.format(replicas=1))
    out = kubectl.run("-n", ns, "apply", "--server-side", "-f", "-",
                      stdin=GENERATED_DEPLOYMENT.format(replicas=4))
    assert out.stdout == "deployment.apps/gen serverside-applied\n"
    live = kubectl.json("-n", ns, "get", "deployment", "gen")
    assert live["spec"]["replicas"] == 4
    assert live["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] \
        == ('{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"creationTimestamp":null,'
            f'"labels":{{"app":"gen"}},"name":"gen","namespace":"{ns}"}},"spec":{{"replicas":4,'
            '"selector":{"matchLabels":{"app":"gen"}},"strategy":{},"template":{"metadata":'
            '{"creationTimestamp":null,"labels":{"app":"gen"}},"spec":{"containers":[{"env":'
            '[{"name":"X","value":"a\\u003cb\\u0026c"}],"image":"nginx","name":"nginx",'
            '"resources":{}}]}}},"status":{}}\n')

"""A day of kubectl, oldest (1.27), current (1.32) and newest (1.33), against
``setpoint cluster up``: what a kube-apiserver 1.32 cluster with its controllers answers.

One server for the module (fresh, so its nodes' first events are still there); each test
writes its own kubeconfig, and each kubectl gets a cache of its own.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import kubectl_path
from tests.e2e.conftest import Kubectl, unique, wait_until
from tests.support import ServerProcess
from tests.waiting import quiet_period_blocking

VERSIONS = ["1.27", "1.32", "1.33"]

_WORKLOADS = """\
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 1
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: c, image: 'redis:7'}]}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: c, image: busybox}]}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly}
spec:
  schedule: "0 0 1 1 *"
  jobTemplate:
    spec:
      template:
        spec: {restartPolicy: Never, containers: [{name: c, image: busybox}]}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: front}
spec:
  rules:
  - host: a.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: db}
spec: {minAvailable: 1, selector: {matchLabels: {app: db}}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: db}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: StatefulSet, name: db}
  minReplicas: 1
  maxReplicas: 3
  metrics:
  - {type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}}
---
apiVersion: v1
kind: Service
metadata: {name: db}
spec: {selector: {app: db}, ports: [{port: 6379}]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: readers}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects: [{kind: User, name: bob}]
---
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: leader}
spec: {holderIdentity: me, leaseDurationSeconds: 15}
"""


def _kubectl(server: ServerProcess, workdir: Path, version: str = "1.32") -> Kubectl:
    """kubectl ``version`` (beside the one on the PATH) with a kubeconfig the test wrote."""
    workdir.mkdir(parents=True, exist_ok=True)
    kubeconfig = workdir / "kubeconfig"
    shutil.copyfile(server.kubeconfig, kubeconfig)
    kubeconfig.chmod(0o600)
    binary = kubectl_path() if version == "1.32" else kubectl_path(version)
    return Kubectl(binary, kubeconfig, workdir)


@pytest.fixture(scope="module")
def day(server_process: ServerProcess,
        tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A namespace with a StatefulSet, DaemonSet, CronJob and its Job, Ingress, PVC, PDB,
    HPA, Service (so an EndpointSlice), RoleBinding and Lease."""
    k = _kubectl(server_process, tmp_path_factory.mktemp("setup"))
    ns = unique("day")
    k.run("create", "namespace", ns)
    k.run("-n", ns, "apply", "-f", "-", stdin=_WORKLOADS)
    k.run("-n", ns, "create", "job", "manual", "--from=cronjob/nightly")
    k.run("-n", ns, "rollout", "status", "statefulset/db", "--timeout=30s")
    wait_until(lambda: k.json("-n", ns, "get", "endpointslices")["items"])
    yield ns
    k.run("delete", "namespace", ns, "--wait=false", ok=None)


# The server-side Table columns, -o wide (priority 1 too), of
# k8s.io/kubernetes pkg/printers/internalversion/printers.go AddHandlers: the
# jobColumnDefinitions, cronJobColumnDefinitions, statefulSetColumnDefinitions,
# daemonSetColumnDefinitions, ingressColumnDefinitions, persistentVolumeClaimColumnDefinitions
# (VolumeAttributesClass since 1.29), horizontalPodAutoscalerColumnDefinitions,
# podDisruptionBudgetColumnDefinitions, endpointSliceColumnDefinitions,
# leaseColumnDefinitions and roleBindingsColumnDefinitions; kubectl upper-cases them
# (k8s.io/cli-runtime pkg/printers/tablegenerator / kubectl's table printer).
WIDE_HEADERS = {
    "job": "NAME STATUS COMPLETIONS DURATION AGE CONTAINERS IMAGES SELECTOR",
    "cronjob": "NAME SCHEDULE TIMEZONE SUSPEND ACTIVE LAST SCHEDULE AGE CONTAINERS IMAGES "
               "SELECTOR",
    "statefulset": "NAME READY AGE CONTAINERS IMAGES",
    "daemonset": "NAME DESIRED CURRENT READY UP-TO-DATE AVAILABLE NODE SELECTOR AGE "
                 "CONTAINERS IMAGES SELECTOR",
    "ingress": "NAME CLASS HOSTS ADDRESS PORTS AGE",
    "persistentvolumeclaim": "NAME STATUS VOLUME CAPACITY ACCESS MODES STORAGECLASS "
                             "VOLUMEATTRIBUTESCLASS AGE VOLUMEMODE",
    "horizontalpodautoscaler": "NAME REFERENCE TARGETS MINPODS MAXPODS REPLICAS AGE",
    "poddisruptionbudget": "NAME MIN AVAILABLE MAX UNAVAILABLE ALLOWED DISRUPTIONS AGE",
    "endpointslice": "NAME ADDRESSTYPE PORTS ENDPOINTS AGE",
    "lease": "NAME HOLDER AGE",
    "rolebinding": "NAME ROLE AGE USERS GROUPS SERVICEACCOUNTS",
}


@pytest.mark.parametrize("version", VERSIONS)
def test_get_wide_prints_the_server_side_columns_of_many_kinds(
        server_process: ServerProcess, day: str, tmp_path: Path, version: str) -> None:
    """Every kubectl asks for ``as=Table;v=v1;g=meta.k8s.io`` (1.27 too: pkg/cmd/get/get.go
    transformRequests) and prints the columns the server's TableConvertor defines, so
    the headers of ``get KIND -o wide`` are the apiserver's, whatever the client."""
    k = _kubectl(server_process, tmp_path, version)
    for kind, header in WIDE_HEADERS.items():
        lines = k.run("-n", day, "get", kind, "-o", "wide").stdout.splitlines()
        assert " ".join(lines[0].split()) == header, kind
        assert len(lines) >= 2, kind  # a row under it, not "No resources found"


@pytest.mark.parametrize("version", VERSIONS)
def test_get_wide_rows_carry_the_printers_cells(
        server_process: ServerProcess, day: str, tmp_path: Path, version: str) -> None:
    """The cells as printers.go's print functions fill them: printRoleBinding's
    ``ClusterRole/view`` and users; printLease's holder; printHorizontalPodAutoscaler's
    ``StatefulSet/db`` reference and ``cpu: <unknown>/50%`` target before any metric
    (formatHPAMetrics); printPodDisruptionBudget's ``N/A`` for an unset maxUnavailable."""
    k = _kubectl(server_process, tmp_path, version)

    def row(kind: str, name: str) -> list[str]:
        return k.run("-n", day, "get", kind, name, "-o", "wide",
                     "--no-headers").stdout.split()

    assert row("rolebinding", "readers")[1] == "ClusterRole/view"
    assert row("rolebinding", "readers")[3] == "bob"
    assert row("lease", "leader")[1] == "me"
    hpa = row("hpa", "db")
    assert hpa[1] == "StatefulSet/db"
    assert hpa[2:4] == ["cpu:", "<unknown>/50%"]
    assert row("pdb", "db")[1:3] == ["1", "N/A"]


@pytest.mark.parametrize("version", VERSIONS)
def test_auth_whoami_is_served_by_authentication_v1_only(
        server_process: ServerProcess, tmp_path: Path, version: str) -> None:
    """A 1.32 apiserver serves SelfSubjectReview in authentication.k8s.io/v1 alone: v1beta1
    is in betaAPIGroupVersionsDisabledByDefault (pkg/controlplane/instance.go) and v1alpha1
    is alpha. kubectl 1.28+ posts to v1 (pkg/cmd/auth/whoami.go Run); kubectl 1.27 posts
    to v1beta1, then v1alpha1, and on two 404s says notEnabledErr and exits 1."""
    k = _kubectl(server_process, tmp_path, version)
    if version == "1.27":
        proc = k.run("auth", "whoami", ok=False)
        assert (proc.returncode, proc.stdout) == (1, "")
        assert proc.stderr == (
            "error: the selfsubjectreviews API is not enabled in the cluster\n"
            "enable APISelfSubjectReview feature gate and authentication.k8s.io/v1alpha1 or "
            "authentication.k8s.io/v1beta1 API\n")
    else:
        lines = k.run("auth", "whoami").stdout.splitlines()
        assert lines[0].split() == ["ATTRIBUTE", "VALUE"]
        assert lines[1].split()[0] == "Username"
    versions = json.loads(k.run("get", "--raw", "/apis/authentication.k8s.io").stdout)["versions"]
    assert [v["version"] for v in versions] == ["v1"]


def test_describe_a_fresh_node_shows_no_node_not_ready_from_the_node_controller(
        server_process: ServerProcess, tmp_path: Path) -> None:
    """A node registers NotReady and its first heartbeat makes it Ready; node-controller
    records ``RegisteredNode`` for it (monitorNodeHealth) but ``NodeNotReady`` only when its
    own update turns an observed Ready=True into Unknown (node_lifecycle_controller.go
    monitorNodeHealth: ``currentReadyCondition.Status != True &&
    observedReadyCondition.Status == True`` before RecordNodeStatusChange), so a fresh,
    healthy node's ``describe`` lists no NodeNotReady event. Its kubelet reports the
    NotReady→Ready change it posted itself: ``NodeReady`` from ``kubelet`` (nodestatus/
    setters.go ReadyCondition's recordEventFunc, kubelet_node_status.go
    recordNodeStatusEvent: ``Node %s status is now: %s``)."""
    k = _kubectl(server_process, tmp_path)

    def registered() -> str:
        out = k.run("describe", "node", "node-1").stdout
        return out if "RegisteredNode" in out and "NodeReady" in out else ""

    out: str = wait_until(registered, timeout=30)
    assert " True " in out.split("\n  Ready ", 1)[1].splitlines()[0]
    quiet_period_blocking()  # a wrong NodeNotReady would be recorded beside RegisteredNode
    events = k.run("describe", "node", "node-1").stdout.split("\nEvents:\n", 1)[1]
    reasons = [line.split()[1] for line in events.splitlines()[2:] if line.strip()]
    assert "RegisteredNode" in reasons
    assert "NodeNotReady" not in reasons
    ready = [" ".join(line.split()[3:]) for line in events.splitlines()[2:]
             if line.split()[1:2] == ["NodeReady"]]
    assert ready == ["kubelet Node node-1 status is now: NodeReady"]

"""``kubectl get --subresource=scale`` across kubectl versions, against the server as users
run it: the Table and the JSON a kube-apiserver 1.32 answers for a Scale.

One server for the module; each test writes its own kubeconfig and namespace, and each
kubectl gets a cache of its own.
"""

from __future__ import annotations

import base64
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import kubectl_path
from tests.e2e.conftest import Kubectl, unique, wait_until
from tests.support import ServerProcess

_WIDGETS = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.subtables.example.com}
spec:
  group: subtables.example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    additionalPrinterColumns:
    - {name: Wanted, type: integer, jsonPath: .spec.replicas}
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {replicas: {type: integer}}}
          status: {type: object, properties: {replicas: {type: integer}}}
"""


def _kubectl(server: ServerProcess, workdir: Path, version: str | None = None) -> Kubectl:
    """kubectl (1.32, or ``kubectl.<version>`` beside it) with a kubeconfig the test wrote."""
    workdir.mkdir(parents=True, exist_ok=True)
    kubeconfig = workdir / "kubeconfig"
    shutil.copyfile(server.kubeconfig, kubeconfig)
    kubeconfig.chmod(0o600)
    return Kubectl(kubectl_path(version) if version else kubectl_path(), kubeconfig, workdir)


@pytest.fixture(scope="module")
def scaled(server_process: ServerProcess,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A namespace with a Deployment of 2, a StatefulSet of 0 and a custom resource of 3."""
    k = _kubectl(server_process, tmp_path_factory.mktemp("setup"))
    ns = unique("subtables")
    k.run("create", "namespace", ns)
    k.run("apply", "-f", "-", stdin=_WIDGETS)
    k.run("wait", "--for=condition=Established", "crd/gadgets.subtables.example.com",
          "--timeout=30s")
    k.run("-n", ns, "create", "deployment", "web", "--image=nginx:1", "--replicas=2")
    k.run("-n", ns, "apply", "-f", "-", stdin=(
        "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db}\nspec:\n"
        "  replicas: 0\n  serviceName: db\n  selector: {matchLabels: {app: db}}\n"
        "  template:\n    metadata: {labels: {app: db}}\n"
        "    spec: {containers: [{name: c, image: 'redis:7'}]}\n"
        "---\napiVersion: subtables.example.com/v1\nkind: Gadget\nmetadata: {name: g}\n"
        "spec: {replicas: 3}\n"))
    k.run("-n", ns, "rollout", "status", "deployment/web", "--timeout=30s")
    wait_until(lambda: k.json("-n", ns, "get", "statefulset", "db").get(
        "status", {}).get("observedGeneration"))
    yield ns
    k.run("delete", "namespace", ns, "--wait=false", ok=None)
    k.run("delete", "crd", "gadgets.subtables.example.com", "--wait=false", ok=None)


def _rows(stdout: str) -> list[list[str]]:
    return [line.split() for line in stdout.splitlines()]


@pytest.mark.parametrize("version", ["1.32", "1.27", "1.33"])
def test_get_scale_subresource_prints_desired_and_available(
        server_process: ServerProcess, scaled: str, tmp_path: Path, version: str) -> None:
    """A built-in ScaleREST converts with its store's TableGenerator
    (pkg/registry/apps/deployment/storage/storage.go ``ScaleREST.ConvertToTable``), whose
    ``printScale`` (pkg/printers/internalversion/printers.go) prints Name, Desired,
    Available and Age; a custom resource's scale scope has the columns of apiextensions-
    apiserver's helpers.go ``getScaleColumnsForVersion`` (not the CRD's printer columns),
    ``.status.replicas`` of the Scale read as 0 when the resource has none."""
    k = _kubectl(server_process, tmp_path, None if version == "1.32" else version)
    ns = scaled
    expected = {"deployment/web": ["web", "2", "2"], "statefulset/db": ["db", "0", "0"],
                "gadget/g": ["g", "3", "0"]}
    for target, cells in expected.items():
        out = k.run("-n", ns, "get", target, "--subresource=scale")
        assert out.stderr == ""
        header, *rows = _rows(out.stdout)
        assert header == ["NAME", "DESIRED", "AVAILABLE", "AGE"], out.stdout
        assert len(rows) == 1 and rows[0][:3] == cells, out.stdout
        assert re.fullmatch(r"\d+(s|m\d*s?)", rows[0][3]), out.stdout
    # the status subresource keeps the kind's own columns
    status = _rows(k.run("-n", ns, "get", "deployment/web", "--subresource=status").stdout)
    assert status[0] == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert status[1][:4] == ["web", "2/2", "2", "2"]
    gadget = _rows(k.run("-n", ns, "get", "gadget/g", "--subresource=status").stdout)
    assert gadget[0] == ["NAME", "WANTED"] and gadget[1] == ["g", "3"]


def test_a_scale_of_zero_replicas_has_an_empty_spec(server_process: ServerProcess,
                                                    scaled: str, tmp_path: Path) -> None:
    """autoscaling/v1 ``ScaleSpec.Replicas`` is ``omitempty`` (k8s.io/api autoscaling/v1
    types.go), so the Scale of a StatefulSet of 0 is served with ``spec: {}``; its
    ``status.replicas`` is not omitempty and stays."""
    k = _kubectl(server_process, tmp_path)
    scale = k.json("-n", scaled, "get", "statefulset/db", "--subresource=scale")
    assert scale["spec"] == {}
    assert scale["status"]["replicas"] == 0
    assert k.json("-n", scaled, "get", "deployment/web",
                  "--subresource=scale")["spec"] == {"replicas": 2}


_TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


@pytest.mark.parametrize("version", ["1.32", "1.33"])
def test_subresources_without_a_table_convertor_answer_json(
        server_process: ServerProcess, scaled: str, tmp_path: Path, version: str) -> None:
    """``pods/ephemeralcontainers`` and ``certificatesigningrequests/approval`` are served by
    storages that are no TableConvertor (pkg/registry/core/pod/storage/storage.go
    ``EphemeralContainersREST``, pkg/registry/certificates/certificates/storage/storage.go
    ``ApprovalREST``): RequestScope.AllowsMediaTypeTransform (apiserver handlers/rest.go)
    passes kubectl's Table clauses over and the object comes back as JSON, which kubectl
    prints with its own Name and Age. ``status`` converts with the parent's columns. A
    request accepting only a Table is a 406."""
    k = _kubectl(server_process, tmp_path, None if version == "1.32" else version)
    ns, pod = scaled, unique("debugged")
    k.run("-n", ns, "run", pod, "--image=nginx:1")
    out = k.run("-n", ns, "get", "pod", pod, "--subresource=ephemeralcontainers")
    header, *rows = _rows(out.stdout)
    assert (header, [r[0] for r in rows]) == (["NAME", "AGE"], [pod]), out.stdout
    status = _rows(k.run("-n", ns, "get", "pod", pod, "--subresource=status").stdout)
    assert status[0] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    csr = unique("approval")
    key, request = tmp_path / "k.key", tmp_path / "k.csr"
    subprocess.run(["openssl", "req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout",
                    str(key), "-subj", "/CN=table", "-out", str(request)], check=True,
                   capture_output=True)
    k.run("apply", "-f", "-", stdin=(
        "apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\n"
        f"metadata: {{name: {csr}}}\nspec:\n"
        f"  request: {base64.b64encode(request.read_bytes()).decode()}\n"
        "  signerName: kubernetes.io/kube-apiserver-client\n  usages: [client auth]\n"))
    try:
        approval = _rows(k.run("get", "csr", csr, "--subresource=approval").stdout)
        assert approval == [["NAME", "AGE"], [csr, approval[1][1]]]
        assert _rows(k.run("get", "csr", csr, "--subresource=status").stdout)[0] == [
            "NAME", "AGE", "SIGNERNAME", "REQUESTOR", "REQUESTEDDURATION", "CONDITION"]
        headers = {"Authorization": f"Bearer {server_process.token}"}
        with httpx.Client(base_url=server_process.url, headers=headers,
                          verify=server_process.ssl_context()) as http:
            path = f"/api/v1/namespaces/{ns}/pods/{pod}/ephemeralcontainers"
            only_table = http.get(path, headers={"Accept": _TABLE})
            assert only_table.status_code == 406, only_table.text
            assert only_table.json()["reason"] == "NotAcceptable"
            fallback = http.get(path, headers={"Accept": f"{_TABLE},application/json"})
            assert fallback.headers["content-type"] == "application/json"
            assert fallback.json()["kind"] == "Pod"
            scale = http.get(f"/apis/apps/v1/namespaces/{ns}/deployments/web/scale",
                             headers={"Accept": _TABLE})
            assert scale.json()["kind"] == "Table"
            # a write's answer is converted by the same storage (handlers/patch.go
            # transformResponseObject)
            patched = http.patch(f"/apis/apps/v1/namespaces/{ns}/deployments/web/scale",
                                 content="{}", headers={
                                     "Accept": _TABLE,
                                     "Content-Type": "application/merge-patch+json"})
            table = patched.json()
            assert [c["name"] for c in table["columnDefinitions"]] == [
                "Name", "Desired", "Available", "Age"], table
            assert table["rows"][0]["cells"][:3] == ["web", 2, 2]
    finally:
        k.run("delete", "csr", csr, ok=None)

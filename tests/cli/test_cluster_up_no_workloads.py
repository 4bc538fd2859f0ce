"""``setpoint cluster up --no-workloads``: the server and its in-process controllers alone.

A kube-apiserver signs no CertificateSigningRequest: kube-controller-manager's ``csrsigning``
controller does (pkg/controller/certificates/signer/signer.go ``handle``: an approved request
of a built-in signer gets ``status.certificate``), beside its core controllers
(``serviceaccount``: pkg/controller/serviceaccount/serviceaccounts_controller.go, the
``default`` ServiceAccount of every namespace). The flag leaves out the workloads (nodes,
scheduler, kubelets, workload controllers), not that core: the CLI's help says so, and the
server does it.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.support import ServerProcess
from tests.waiting import wait_for

CSRS = "/apis/certificates.k8s.io/v1/certificatesigningrequests"


def _call(server: ServerProcess, method: str, path: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(server.url + path, data=data, method=method, headers={
        "Authorization": f"Bearer {server.token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, context=server.ssl_context(), timeout=30) as resp:
        return json.loads(resp.read())


def _request_pem() -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    csr = x509.CertificateSigningRequestBuilder().subject_name(x509.Name(
        [x509.NameAttribute(NameOID.COMMON_NAME, "bare-client")])).sign(key, hashes.SHA256())
    return base64.b64encode(csr.public_bytes(serialization.Encoding.PEM)).decode()


def test_the_help_says_what_no_workloads_leaves_out() -> None:
    out = subprocess.run([sys.executable, "-m", "setpoint.cli.main", "cluster", "up", "--help"],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    flat = " ".join(out.split())
    assert "--no-workloads Serve the API server and its in-process controllers alone" in flat
    assert "CSR signing" in flat and "no nodes, scheduler, kubelets or workload controllers" \
        in flat


async def test_a_bare_server_signs_approved_requests_and_runs_no_nodes(tmp_path: Path) -> None:
    with ServerProcess(tmp_path, "--no-workloads") as server:
        assert _call(server, "GET", "/api/v1/nodes")["items"] == []
        await wait_for(lambda: _serviceaccount(server, "default", "default"))
        _call(server, "POST", CSRS, {
            "metadata": {"name": "bare"},
            "spec": {"request": _request_pem(),
                     "signerName": "kubernetes.io/kube-apiserver-client",
                     "usages": ["digital signature", "client auth"]}})
        csr = _call(server, "GET", f"{CSRS}/bare")
        csr["status"]["conditions"] = [{"type": "Approved", "status": "True",
                                        "reason": "TestApproval", "message": "approved"}]
        _call(server, "PUT", f"{CSRS}/bare/approval", csr)
        pem = await wait_for(lambda: (_call(server, "GET", f"{CSRS}/bare").get("status")
                                     or {}).get("certificate"))
        certificate = x509.load_pem_x509_certificate(base64.b64decode(pem))
        assert certificate.subject.rfc4514_string() == "CN=bare-client"


def _serviceaccount(server: ServerProcess, namespace: str, name: str) -> Any:
    try:
        return _call(server, "GET", f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}")
    except urllib.error.HTTPError:
        return None

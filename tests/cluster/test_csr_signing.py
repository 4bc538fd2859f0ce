"""CertificateSigningRequests end to end, as on a kube-apiserver 1.32 cluster with
kube-controller-manager's CSR signer (one server for the module; each test uses its own
names).

Sources: plugin/pkg/admission/certificates/approval/admission.go, signing/admission.go,
subjectrestriction/admission.go and certificates/util.go ``IsAuthorizedForSignerName``;
pkg/controller/certificates/signer/signer.go (``handle``, ``sign``, ``duration``,
``isKubeAPIServerClient``); k8s.io/apiserver pkg/authentication/request/x509/x509.go (the
``--client-ca-file`` authenticator: CN the user, O the groups).
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import json
import os
import ssl
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from setpoint.cluster import serve
from tests.cluster.conftest import API
from tests.conftest import kubectl_path
from tests.waiting import quiet_period, wait_for

pytestmark = pytest.mark.asyncio(loop_scope="module")

CSRS = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def api() -> AsyncIterator[API]:
    async with serve() as running:
        headers = {"Authorization": f"Bearer {running.token}"}
        async with aiohttp.ClientSession(headers=headers) as session:
            yield API(running, session)


def _request(common_name: str, organizations: list[str]) -> tuple[str, bytes]:
    """(spec.request, the PEM private key) for a fresh P-256 key."""
    key = ec.generate_private_key(ec.SECP256R1())
    names = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    names += [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
    csr = x509.CertificateSigningRequestBuilder().subject_name(x509.Name(names)).sign(
        key, hashes.SHA256())
    return (base64.b64encode(csr.public_bytes(serialization.Encoding.PEM)).decode(),
            key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()))


def _csr(name: str, request: str, signer: str = CLIENT_SIGNER, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
            "metadata": {"name": name},
            "spec": {"request": request, "signerName": signer,
                     "usages": ["digital signature", "client auth"], **spec}}


async def _approve(api: API, name: str, headers: dict[str, str] | None = None,
                   ) -> tuple[int, Any]:
    status, csr = await api.get(f"{CSRS}/{name}")
    assert status == 200, csr
    csr["status"]["conditions"] = [{"type": "Approved", "status": "True",
                                    "reason": "TestApproval", "message": "approved"}]
    return await api.put(f"{CSRS}/{name}/approval", csr, headers=headers)


async def _issued(api: API, name: str) -> x509.Certificate:
    async def certificate() -> str | None:
        _, csr = await api.get(f"{CSRS}/{name}")
        return (csr.get("status") or {}).get("certificate")
    pem = base64.b64decode(await wait_for(certificate))
    return x509.load_pem_x509_certificate(pem)


async def test_approval_needs_approve_on_the_signer(api: API) -> None:
    """CertificateApproval: a user who may update ``certificatesigningrequests/approval``
    but holds no ``approve`` on ``signers`` is refused with the plugin's text; granting it
    for ``kubernetes.io/*`` (the domain wildcard) lets the same request through."""
    request, _ = _request("approval-subject", [])
    assert (await api.post(CSRS, _csr("sig-approval", request)))[0] == 201
    rules: list[dict[str, list[str]]] = [
        {"apiGroups": ["certificates.k8s.io"], "verbs": ["get", "update"],
         "resources": ["certificatesigningrequests", "certificatesigningrequests/approval"]}]
    role = {"metadata": {"name": "sig-csr-approver"}, "rules": rules}
    binding = {"metadata": {"name": "sig-csr-approver"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                           "name": "sig-csr-approver"},
               "subjects": [{"kind": "User", "name": "sig-approver",
                             "apiGroup": "rbac.authorization.k8s.io"}]}
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    assert (await api.post(f"{rbac}/clusterroles", role))[0] == 201
    assert (await api.post(f"{rbac}/clusterrolebindings", binding))[0] == 201
    as_approver = {"Impersonate-User": "sig-approver"}
    status, answer = await _approve(api, "sig-approval", as_approver)
    assert (status, answer["reason"], answer["message"]) == (
        403, "Forbidden", 'certificatesigningrequests.certificates.k8s.io "sig-approval" is '
        'forbidden: user not permitted to approve requests with signerName '
        '"kubernetes.io/kube-apiserver-client"'), answer
    rules.append({"apiGroups": ["certificates.k8s.io"], "verbs": ["approve"],
                          "resources": ["signers"], "resourceNames": ["kubernetes.io/*"]})
    assert (await api.put(f"{rbac}/clusterroles/sig-csr-approver", role))[0] == 200
    status, answer = await _approve(api, "sig-approval", as_approver)
    assert status == 200, answer


async def test_status_writes_need_sign_on_the_signer(api: API) -> None:
    """CertificateSigning: changing ``status.certificate`` or the conditions through
    ``/status`` takes ``sign`` on the signer (held by ``system:masters``)."""
    request, _ = _request("signing-subject", [])
    assert (await api.post(CSRS, _csr("sig-signing", request, "example.com/own")))[0] == 201
    role = {"metadata": {"name": "sig-csr-status"}, "rules": [
        {"apiGroups": ["certificates.k8s.io"], "verbs": ["get", "update"],
         "resources": ["certificatesigningrequests/status"]}]}
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    assert (await api.post(f"{rbac}/clusterroles", role))[0] == 201
    assert (await api.post(f"{rbac}/clusterrolebindings", {
        "metadata": {"name": "sig-csr-status"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "sig-csr-status"},
        "subjects": [{"kind": "User", "name": "sig-signer",
                      "apiGroup": "rbac.authorization.k8s.io"}]}))[0] == 201
    _, csr = await api.get(f"{CSRS}/sig-signing")
    csr["status"]["conditions"] = [{"type": "Failed", "status": "True",
                                    "reason": "SignerFailure", "message": "cannot sign"}]
    status, answer = await api.put(f"{CSRS}/sig-signing/status", csr,
                                   headers={"Impersonate-User": "sig-signer"})
    assert (status, answer["message"]) == (
        403, 'certificatesigningrequests.certificates.k8s.io "sig-signing" is forbidden: '
        'user not permitted to sign requests with signerName "example.com/own"'), answer
    status, answer = await api.put(f"{CSRS}/sig-signing/status", csr, headers={
        "Impersonate-User": "sig-signer", "Impersonate-Group": "system:masters"})
    assert status == 200, answer


async def test_approved_client_csr_is_signed_and_its_certificate_authenticates(
        api: API, tmp_path: Path) -> None:
    """The client signer signs an approved request: the request's subject, the requested
    usages, ``expirationSeconds`` honoured (backdated 5 minutes, not past the request's
    end: ``PermissiveSigningPolicy``), the cluster's CA as issuer; the certificate then
    authenticates as CN ``sig-alice`` in O ``sig-team`` (a SelfSubjectReview)."""
    request, key_pem = _request("sig-alice", ["sig-team"])
    assert (await api.post(CSRS, _csr("sig-alice", request, expirationSeconds=3600)))[0] == 201
    assert (await _approve(api, "sig-alice"))[0] == 200
    cert = await _issued(api, "sig-alice")
    assert cert.subject == x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "sig-alice"),
                                      x509.NameAttribute(NameOID.ORGANIZATION_NAME,
                                                         "sig-team")])
    ca = x509.load_pem_x509_certificate(api.cluster.ca_file.read_bytes())
    assert cert.issuer == ca.subject
    cert.verify_directly_issued_by(ca)
    assert list(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value) == [
        ExtendedKeyUsageOID.CLIENT_AUTH]
    key_usage = cert.extensions.get_extension_for_class(x509.KeyUsage).value
    assert key_usage.digital_signature and not key_usage.key_encipherment
    lifetime = cert.not_valid_after_utc - cert.not_valid_before_utc
    assert lifetime == datetime.timedelta(minutes=65)  # short-lived: the start backdated only
    cert_file, key_file = tmp_path / "client.crt", tmp_path / "client.key"
    for path, data in ((cert_file, cert.public_bytes(serialization.Encoding.PEM)),
                       (key_file, key_pem)):
        path.write_bytes(data)
        path.chmod(0o600)
    context = ssl.create_default_context(cafile=str(api.cluster.ca_file))
    context.load_cert_chain(cert_file, key_file)
    async with aiohttp.ClientSession() as session, session.post(
            api.cluster.url + "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            json={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
            ssl=context) as resp:
        review = await resp.json()
    assert resp.status == 201, review
    assert review["status"]["userInfo"] == {
        "username": "sig-alice", "groups": ["sig-team", "system:authenticated"]}


async def test_kubectl_certificate_approve_leads_to_an_issued_certificate(
        api: API, tmp_path: Path) -> None:
    """``kubectl certificate approve`` (the approval subresource), then the signer's
    certificate; ``kubectl auth whoami`` with it names the request's subject."""
    request, key_pem = _request("sig-bob", ["sig-ops"])
    assert (await api.post(CSRS, _csr("sig-bob", request)))[0] == 201
    home = tmp_path / "home"
    home.mkdir(mode=0o700)

    async def kubectl(kubeconfig: Path, *args: str) -> tuple[int | None, str, str]:
        proc = await asyncio.create_subprocess_exec(
            kubectl_path(), "--kubeconfig", str(kubeconfig), "--cache-dir",
            str(tmp_path / f"cache-{uuid.uuid4().hex[:8]}"), *args,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home)})
        out, err = await asyncio.wait_for(proc.communicate(), 60)
        return proc.returncode, out.decode(), err.decode()

    admin = tmp_path / "admin.kubeconfig"
    admin.write_bytes(api.cluster.kubeconfig.read_bytes())
    admin.chmod(0o600)
    code, out, err = await kubectl(admin, "certificate", "approve", "sig-bob")
    assert (code, out) == (0, "certificatesigningrequest.certificates.k8s.io/sig-bob approved\n"
                           ), err
    cert = await _issued(api, "sig-bob")
    ca_data = base64.b64encode(api.cluster.ca_file.read_bytes()).decode()
    user_config = tmp_path / "bob.kubeconfig"
    user_config.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "bob",
        "clusters": [{"name": "c", "cluster": {"server": api.cluster.url,
                                               "certificate-authority-data": ca_data}}],
        "users": [{"name": "bob", "user": {
            "client-certificate-data": base64.b64encode(
                cert.public_bytes(serialization.Encoding.PEM)).decode(),
            "client-key-data": base64.b64encode(key_pem).decode()}}],
        "contexts": [{"name": "bob", "context": {"cluster": "c", "user": "bob"}}]}))
    user_config.chmod(0o600)
    code, out, err = await kubectl(user_config, "auth", "whoami", "-o", "json")
    assert code == 0, err
    assert json.loads(out)["status"]["userInfo"] == {
        "username": "sig-bob", "groups": ["sig-ops", "system:authenticated"]}


async def test_system_masters_request_to_the_client_signer_is_refused(api: API) -> None:
    """CertificateSubjectRestriction: no ``system:masters`` from the client signer (another
    signer may carry the group)."""
    request, _ = _request("sig-root", ["system:masters"])
    status, answer = await api.post(CSRS, _csr("sig-root", request))
    assert (status, answer["reason"], answer["message"]) == (
        403, "Forbidden", 'certificatesigningrequests.certificates.k8s.io "sig-root" is '
        "forbidden: use of kubernetes.io/kube-apiserver-client signer with system:masters "
        "group is not allowed"), answer
    status, answer = await api.post(CSRS, _csr("sig-root-own", request, "example.com/own"))
    assert status == 201, answer


async def test_unknown_signer_and_bad_usages_stay_unsigned(api: API) -> None:
    """Only the built-in signers sign: an approved request for another signer keeps an
    empty certificate; a client-signer request with a server usage gets the signer's
    ``Failed`` condition (signer.go ``validAPIServerClientUsages``) and no certificate."""
    request, _ = _request("sig-unknown", [])
    assert (await api.post(CSRS, _csr("sig-unknown", request, "example.com/own")))[0] == 201
    assert (await _approve(api, "sig-unknown"))[0] == 200
    assert (await api.post(CSRS, _csr("sig-usage", request,
                                      usages=["client auth", "server auth"])))[0] == 201
    assert (await _approve(api, "sig-usage"))[0] == 200

    async def failed() -> dict[str, Any] | None:
        _, csr = await api.get(f"{CSRS}/sig-usage")
        return next((c for c in csr["status"]["conditions"] if c["type"] == "Failed"), None)
    condition = await wait_for(failed)
    assert (condition["status"], condition["reason"], condition["message"]) == (
        "True", "SignerValidationFailure", "invalid usage for client certificate: server auth")
    await quiet_period()
    _, csr = await api.get(f"{CSRS}/sig-unknown")
    assert "certificate" not in csr["status"]
    _, csr = await api.get(f"{CSRS}/sig-usage")
    assert "certificate" not in csr["status"]


async def test_kubelet_serving_requests_follow_the_signers_rules(api: API) -> None:
    """``kubernetes.io/kubelet-serving`` (pkg/apis/certificates/helpers.go
    ``ValidateKubeletServingCSR``): O ``system:nodes``, CN ``system:node:<name>``, a DNS or
    IP name, ``digital signature`` and ``server auth``: signed with the request's names
    (one year at most: no expirationSeconds); another organization fails."""
    key = ec.generate_private_key(ec.SECP256R1())
    names = x509.SubjectAlternativeName([x509.DNSName("node-a.example")])

    def request(organization: str) -> str:
        csr = (x509.CertificateSigningRequestBuilder()
               .subject_name(x509.Name([
                   x509.NameAttribute(NameOID.COMMON_NAME, "system:node:node-a"),
                   x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization)]))
               .add_extension(names, critical=False).sign(key, hashes.SHA256()))
        return base64.b64encode(csr.public_bytes(serialization.Encoding.PEM)).decode()

    usages = ["digital signature", "server auth"]
    signer = "kubernetes.io/kubelet-serving"
    assert (await api.post(CSRS, _csr("sig-serving", request("system:nodes"), signer,
                                      usages=usages)))[0] == 201
    assert (await api.post(CSRS, _csr("sig-serving-org", request("other"), signer,
                                      usages=usages)))[0] == 201
    assert (await _approve(api, "sig-serving"))[0] == 200
    assert (await _approve(api, "sig-serving-org"))[0] == 200
    cert = await _issued(api, "sig-serving")
    assert cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value == names
    assert list(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value) == [
        ExtendedKeyUsageOID.SERVER_AUTH]
    assert cert.not_valid_after_utc - cert.not_valid_before_utc == datetime.timedelta(days=365)

    async def failed() -> str | None:
        _, csr = await api.get(f"{CSRS}/sig-serving-org")
        return next((c["message"] for c in csr["status"]["conditions"]
                     if c["type"] == "Failed"), None)
    assert await wait_for(failed) == "subject organization is not system:nodes"

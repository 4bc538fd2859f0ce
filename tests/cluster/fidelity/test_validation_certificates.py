"""CertificateSigningRequest validation and strategy over HTTP, with kube-apiserver 1.32's
causes.

Sources: pkg/apis/certificates/validation/validation.go (validateCertificateSigningRequest,
validateConditions, getValidationOptions), pkg/apis/core/validation ValidateSignerName, and
pkg/registry/certificates/certificates/strategy.go (PrepareForCreate: the requester's
identity, an empty status; PrepareForUpdate: spec and status are the stored ones).
"""

from __future__ import annotations

import base64
from collections import Counter
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.cluster.fidelity.builtin_server import Kube

CSRS = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
INV, REQ, UNSUP, DUP = ("FieldValueInvalid", "FieldValueRequired", "FieldValueNotSupported",
                        "FieldValueDuplicate")


def _request() -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    csr = (x509.CertificateSigningRequestBuilder()
           .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "tester")]))
           .sign(key, hashes.SHA256()))
    return base64.b64encode(csr.public_bytes(serialization.Encoding.PEM)).decode()


def _csr(name: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": spec}


def test_csr_spec_is_validated(kube: Kube) -> None:
    assert kube.reject("POST", CSRS, _csr(
        "csr-bad", request=base64.b64encode(b"foo").decode(), signerName="example",
        usages=["client auth", "flying", "client auth"], expirationSeconds=60)) == Counter({
            ("spec.request", INV): 1, ("spec.usages[1]", UNSUP): 1, ("spec.usages[2]", DUP): 1,
            ("spec.signerName", INV): 1, ("spec.expirationSeconds", INV): 1})
    assert kube.messages("POST", CSRS, _csr(
        "csr-words", request=base64.b64encode(b"foo").decode(),
        signerName="kubernetes.io/legacy-unknown")) == {
        "spec.request": ["Invalid value: []byte{0x66, 0x6f, 0x6f}: "
                         "PEM block type must be CERTIFICATE REQUEST"],
        "spec.usages": ["Required value"],
        "spec.signerName": ['Invalid value: "kubernetes.io/legacy-unknown": '
                            "the legacy signerName is not allowed via this API version"]}
    assert kube.messages("POST", CSRS, _csr("csr-signer", request=_request(),
                                            signerName="a/b/c", usages=["any"])) == {
        "spec.signerName": ["Invalid value: \"a/b/c\": must be a fully qualified domain and "
                            "path of the form 'example.com/signer-name'"]}
    assert kube.messages("POST", CSRS, _csr("csr-domain", request=_request(),
                                            signerName="example/x", usages=["any"])) == {
        "spec.signerName": ['Invalid value: "example": should be a domain with at least two '
                            "segments separated by dots"]}


def test_csr_create_takes_the_requester_and_an_empty_status(kube: Kube) -> None:
    body = _csr("csr-identity", request=_request(), signerName="example.com/signer",
                usages=["client auth"], username="someone-else", groups=["forged"])
    body["status"] = {"conditions": [{"type": "Approved", "status": "True"}]}
    status, created = kube.call("POST", CSRS, body)
    assert status == 201, created
    try:
        assert created["status"] == {}
        spec = created["spec"]
        assert spec["username"] != "someone-else" and "forged" not in spec.get("groups", [])
        assert "system:authenticated" in spec["groups"]
        # an update through the main resource changes neither spec nor status
        created["spec"]["usages"] = ["server auth"]
        created["status"] = {"conditions": [{"type": "Approved", "status": "True"}]}
        created["metadata"]["labels"] = {"a": "b"}
        status, updated = kube.call("PUT", f"{CSRS}/csr-identity", created)
        assert status == 200, updated
        assert (updated["spec"]["usages"], updated["status"]) == (["client auth"], {})
        assert updated["metadata"]["labels"] == {"a": "b"}
    finally:
        kube.call("DELETE", f"{CSRS}/csr-identity")


def test_csr_approval_and_status_subresources(kube: Kube) -> None:
    """csrApprovalStrategy and csrStatusStrategy: /approval changes only the conditions
    (Approved and Denied exclusive, none removed), /status may not add an approval but sets
    the certificate once; new conditions get their timestamps."""
    status, csr = kube.call("POST", CSRS, _csr("csr-approve", request=_request(),
                                               signerName="example.com/signer",
                                               usages=["client auth"]))
    assert status == 201, csr
    path = f"{CSRS}/csr-approve"
    try:
        # /status may not add an approval
        csr["status"] = {"conditions": [{"type": "Approved", "status": "True"}]}
        assert kube.messages("PUT", f"{path}/status", csr) == {
            "status.conditions": ['Forbidden: updates may not add a condition of type '
                                  '"Approved"']}
        csr["status"] = {"conditions": [
            {"type": "Approved", "status": "True", "reason": "Ok"},
            {"type": "Denied", "status": "True"}]}
        assert kube.messages("PUT", f"{path}/approval", csr) == {
            "status.conditions[1].type": [
                'Invalid value: "Denied": Approved and Denied conditions are mutually '
                "exclusive"]}
        csr["status"] = {"conditions": [{"type": "Approved", "status": "False"}],
                         "certificate": base64.b64encode(b"x").decode()}
        assert kube.reject("PUT", f"{path}/approval", csr) == Counter(
            {("status.conditions[0].status", UNSUP): 1})
        csr["status"]["conditions"][0]["status"] = "True"
        csr["spec"]["usages"] = ["server auth"]
        status, approved = kube.call("PUT", f"{path}/approval", csr)
        assert status == 200, approved
        [condition] = approved["status"]["conditions"]
        assert condition["type"] == "Approved" and condition["lastUpdateTime"]
        assert condition["lastTransitionTime"] == condition["lastUpdateTime"]
        # neither the spec nor the certificate moved through /approval
        assert approved["spec"]["usages"] == ["client auth"]
        assert "certificate" not in approved["status"]
        # an approval is never removed
        approved["status"]["conditions"] = []
        assert kube.messages("PUT", f"{path}/approval", approved) == {
            "status.conditions": ['Forbidden: updates may not remove a condition of type '
                                  '"Approved"']}
        # /status sets a certificate, which must be CERTIFICATE PEM blocks
        status, current = kube.call("GET", path)
        current["status"]["certificate"] = base64.b64encode(b"junk").decode()
        assert kube.messages("PUT", f"{path}/status", current) == {
            "status.certificate": ['Invalid value: "<certificate data>": must contain at '
                                   "least one CERTIFICATE PEM block"]}
    finally:
        kube.call("DELETE", path)

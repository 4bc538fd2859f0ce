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

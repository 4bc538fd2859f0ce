"""The warning a kubernetes.io/tls Secret draws (kubernetes v1.32
pkg/registry/core/secret/strategy.go warningsForSecret, on create and update): the error of Go's
crypto/tls X509KeyPair for the Secret's tls.crt and tls.key, as each of its branches words it."""

from __future__ import annotations

import base64
import datetime

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from setpoint.cluster.registry.warnings_secrets import tls_secret_warnings, x509_key_pair_error


def _pair() -> tuple[bytes, bytes]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "example.com")])
    start = datetime.datetime(2024, 1, 1)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(1).not_valid_before(start)
            .not_valid_after(start + datetime.timedelta(days=365)).sign(key, hashes.SHA256()))
    return (cert.public_bytes(serialization.Encoding.PEM),
            key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()))


CERT, KEY = _pair()
_, OTHER_KEY = _pair()


def _block(kind: str, body: bytes = b"hello") -> bytes:
    return (f"-----BEGIN {kind}-----\n".encode() + base64.b64encode(body)
            + f"\n-----END {kind}-----\n".encode())


@pytest.mark.parametrize(("cert", "key", "error"), [
    (CERT, KEY, None),
    (CERT, OTHER_KEY, "tls: private key does not match public key"),
    (b"", KEY, "tls: failed to find any PEM data in certificate input"),
    (KEY, CERT, "tls: failed to find certificate PEM data in certificate input, but did find "
                "a private key; PEM inputs may have been switched"),
    (_block("FOO") + _block("BAR"), KEY, 'tls: failed to find "CERTIFICATE" PEM block in '
     "certificate input after skipping PEM blocks of the following types: [FOO BAR]"),
    (CERT, b"", "tls: failed to find any PEM data in key input"),
    (CERT, CERT, "tls: found a certificate rather than a key in the PEM for the private key"),
    (CERT, _block("FOO"), 'tls: failed to find PEM block with type ending in "PRIVATE KEY" in '
     "key input after skipping PEM blocks of the following types: [FOO]"),
    (CERT, _block("EC PRIVATE KEY"), "tls: failed to parse private key"),
    (_block("CERTIFICATE"), KEY, "x509: malformed certificate"),
])
def test_key_pair_errors_are_x509_key_pairs(cert: bytes, key: bytes, error: str | None) -> None:
    assert x509_key_pair_error(cert, key) == error


def test_only_tls_secrets_are_checked() -> None:
    data = {"tls.crt": base64.b64encode(CERT).decode(),
            "tls.key": base64.b64encode(OTHER_KEY).decode()}
    assert tls_secret_warnings({"type": "kubernetes.io/tls", "data": data}) == [
        "tls: private key does not match public key"]
    assert tls_secret_warnings({"type": "Opaque", "data": data}) == []

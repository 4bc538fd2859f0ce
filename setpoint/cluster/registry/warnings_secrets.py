"""The warning a ``kubernetes.io/tls`` Secret draws when its pair does not load (kubernetes
v1.32 pkg/registry/core/secret/strategy.go ``warningsForSecret``, on create and on update):
the error Go's ``crypto/tls.X509KeyPair`` returns for ``tls.crt`` and ``tls.key``, word for
word where it is tls's own, ``x509: malformed certificate`` where the certificate's DER does
not parse."""

from __future__ import annotations

import base64
import binascii
import re

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.hazmat.primitives.serialization import load_der_private_key

from setpoint.cluster.registry.validation_certificates import json_bytes
from setpoint.machinery.objects import Obj

TLS_TYPE = "kubernetes.io/tls"
_BEGIN = re.compile(rb"-----BEGIN ([^\r\n]*?)-----\r?\n")


def tls_secret_warnings(secret: Obj) -> list[str]:
    """``warningsForSecret``: one warning, the key pair's error, for a TLS Secret."""
    if secret.get("type") != TLS_TYPE:
        return []
    data = secret.get("data") or {}
    error = x509_key_pair_error(json_bytes(data.get("tls.crt")),
                                json_bytes(data.get("tls.key")))
    return [error] if error else []


def x509_key_pair_error(cert_pem: bytes, key_pem: bytes) -> str | None:
    """What ``tls.X509KeyPair(cert_pem, key_pem)`` fails with, or None."""
    certs: list[bytes] = []
    skipped: list[str] = []
    for block_type, der in _pem_blocks(cert_pem):
        if block_type == "CERTIFICATE":
            certs.append(der)
        else:
            skipped.append(block_type)
    if not certs:
        if not skipped:
            return "tls: failed to find any PEM data in certificate input"
        if len(skipped) == 1 and skipped[0].endswith("PRIVATE KEY"):
            return ("tls: failed to find certificate PEM data in certificate input, but did "
                    "find a private key; PEM inputs may have been switched")
        return ('tls: failed to find "CERTIFICATE" PEM block in certificate input after '
                f"skipping PEM blocks of the following types: [{' '.join(skipped)}]")
    skipped = []
    key_der = None
    for block_type, der in _pem_blocks(key_pem):
        if block_type == "PRIVATE KEY" or block_type.endswith(" PRIVATE KEY"):
            key_der = der
            break
        skipped.append(block_type)
    if key_der is None:
        if not skipped:
            return "tls: failed to find any PEM data in key input"
        if skipped == ["CERTIFICATE"]:
            return "tls: found a certificate rather than a key in the PEM for the private key"
        return ('tls: failed to find PEM block with type ending in "PRIVATE KEY" in key input '
                f"after skipping PEM blocks of the following types: [{' '.join(skipped)}]")
    try:
        public = x509.load_der_x509_certificate(certs[0]).public_key()
    except ValueError:
        return "x509: malformed certificate"
    try:
        private = load_der_private_key(key_der, password=None)
    except (ValueError, TypeError):
        return "tls: failed to parse private key"
    return _match_error(public, private)


def _match_error(public: object, private: object) -> str | None:
    """X509KeyPair's check that the private key is the certificate's."""
    pairs = ((rsa.RSAPublicKey, rsa.RSAPrivateKey), (ec.EllipticCurvePublicKey,
             ec.EllipticCurvePrivateKey), (ed25519.Ed25519PublicKey, ed25519.Ed25519PrivateKey))
    for public_type, private_type in pairs:
        if isinstance(public, public_type):
            if not isinstance(private, private_type):
                return "tls: private key type does not match public key type"
            if _public_of(public) != _public_of(private.public_key()):
                return "tls: private key does not match public key"
            return None
    return "tls: unknown public key algorithm"


def _public_of(key: object) -> object:
    if isinstance(key, rsa.RSAPublicKey):
        return key.public_numbers().n
    if isinstance(key, ec.EllipticCurvePublicKey):
        numbers = key.public_numbers()
        return (numbers.x, numbers.y, key.curve.name)
    if isinstance(key, ed25519.Ed25519PublicKey):
        return key.public_bytes_raw()
    return key


def _pem_blocks(data: bytes) -> list[tuple[str, bytes]]:
    """encoding/pem.Decode applied until nothing is left: each well-formed block's type and
    bytes; a BEGIN line without its END or with bad base64 is passed over."""
    blocks: list[tuple[str, bytes]] = []
    rest = data
    while True:
        begin = _BEGIN.search(rest)
        if begin is None:
            return blocks
        block_type = begin.group(1).decode("utf-8", "replace")
        end_line = b"-----END " + begin.group(1) + b"-----"
        end = rest.find(end_line, begin.end())
        if end < 0:
            rest = rest[begin.end():]
            continue
        body = rest[begin.end():end]
        rest = rest[end + len(end_line):]
        lines = [ln for ln in body.splitlines() if ln.strip()]
        if lines and b":" in lines[0]:  # headers end at the first empty line
            parts = body.split(b"\n\n", 1)
            lines = [ln for ln in (parts[1] if len(parts) > 1 else b"").splitlines()
                     if ln.strip()]
        try:
            der = base64.b64decode(b"".join(ln.strip() for ln in lines), validate=True)
        except (binascii.Error, ValueError):
            continue
        blocks.append((block_type, der))

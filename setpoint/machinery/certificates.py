"""A certificate authority and a serving certificate it signs, made in one call.

Used where Setpoint serves TLS on its own: the embedded API server and, in tests and local
runs, an operator's webhook server. P-256 keys: generated in microseconds, where RSA-2048
takes tens of milliseconds. :func:`issue` encodes them with :mod:`setpoint.machinery.x509encode`
(OpenSSL's keys and signatures, without importing cryptography's ``x509`` package: a sixth of
``cluster up``'s path to serving); reading kept certificates (:func:`serving_covers`,
:func:`reissue_serving`, a ``--data`` restart) loads cryptography's ``x509``.
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from setpoint.machinery import x509encode

if TYPE_CHECKING:
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.asymmetric.types import CertificateIssuerPrivateKeyTypes

__all__ = ["Certificates", "issue", "reissue_serving", "serving_covers"]


@dataclass(frozen=True)
class Certificates:
    """A CA and a serving certificate signed by it, PEM-encoded."""

    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes
    ca_key_pem: bytes = b""  # for whoever signs more with the CA (the API server's CSR signer)


def issue(hosts: Sequence[str], *, ca_name: str, common_name: str | None = None,
          validity: datetime.timedelta = datetime.timedelta(days=365)) -> Certificates:
    """A new CA named ``ca_name`` and a certificate for ``hosts`` (IP addresses or DNS
    names; the subject is ``common_name``, else the first host), valid from five minutes
    ago (clock skew) for ``validity``."""
    if not hosts:
        raise ValueError("a serving certificate needs at least one host")
    pair = x509encode.ca_and_certificate(
        ca_name=ca_name, subject=common_name or hosts[0], validity=validity,
        extensions=[x509encode.subject_alt_names(hosts),
                    x509encode.extended_key_usage(x509encode.SERVER_AUTH)])
    return Certificates(
        ca_pem=x509encode.certificate_pem(pair.ca_der),
        cert_pem=x509encode.certificate_pem(pair.der),
        key_pem=x509encode.private_key_pem(pair.key),
        ca_key_pem=x509encode.private_key_pem(pair.ca_key),
    )


def _san(host: str) -> x509.GeneralName:
    from cryptography import x509

    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def _serving(ca_cert: x509.Certificate, ca_key: CertificateIssuerPrivateKeyTypes,
             hosts: Sequence[str], common_name: str | None, now: datetime.datetime,
             validity: datetime.timedelta) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    key = x509encode.new_key()
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name or hosts[0])])
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject).issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now).not_valid_after(now + validity)
        .add_extension(x509.SubjectAlternativeName([_san(h) for h in hosts]), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return cert, key


def serving_covers(cert_pem: bytes, hosts: Sequence[str]) -> bool:
    """Whether the serving certificate names every one of ``hosts`` in its SANs."""
    from cryptography import x509
    from cryptography.x509.oid import ExtensionOID

    cert = x509.load_pem_x509_certificate(cert_pem)
    # compared as text, by the extension's OID: no isinstance on cryptography's classes,
    # which a test runner that re-imports modules (pytester) makes twice
    named = {str(name.value) for ext in cert.extensions
             if ext.oid.dotted_string == ExtensionOID.SUBJECT_ALTERNATIVE_NAME.dotted_string
             for name in ext.value}
    return all(_normal(h) in named for h in hosts)


def _normal(host: str) -> str:
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return host


def reissue_serving(ca_pem: bytes, ca_key_pem: bytes, hosts: Sequence[str], *,
                    common_name: str | None = None,
                    validity: datetime.timedelta = datetime.timedelta(days=365)
                    ) -> tuple[bytes, bytes]:
    """A new serving certificate for ``hosts`` signed by the kept CA (so clients that trust
    it keep working): ``(cert_pem, key_pem)``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa

    ca_cert = x509.load_pem_x509_certificate(ca_pem)
    ca_key = serialization.load_pem_private_key(ca_key_pem, password=None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
        raise ValueError("the CA key can sign no certificate")
    now = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=5)
    cert, key = _serving(ca_cert, ca_key, hosts, common_name, now, validity)
    return (cert.public_bytes(serialization.Encoding.PEM),
            key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()))

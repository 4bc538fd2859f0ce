"""The certificates of a TLS etcd cluster, issued by the operator (the ``cryptography``
library): one CA per EtcdCluster, a certificate per member (server and peer), and one
client certificate the operator itself uses (and hands to users through its Secret).

Pure functions of PEM bytes; what goes in which Secret is :mod:`.tlssecrets`. ECDSA P-256
keys: etcd accepts them (Go's crypto/tls) and they are quick to make, which matters when a
test makes a cluster of three.

A member's certificate names every way it is reached: its stable DNS names under the
headless Service (peers, and clients that pick a member), the client Service's names, and
``localhost``/``127.0.0.1`` (etcd's own clients inside the pod). It has both extended key
usages, serverAuth and clientAuth: a member is a TLS server to clients and peers, and a TLS
client when it dials a peer (etcd's ``hack/tls-setup`` profile ``peer`` does the same).
The client certificate has clientAuth only, so it cannot pass for a member.
"""

from __future__ import annotations

import datetime
import ipaddress
import re
from collections.abc import Sequence
from dataclasses import dataclass

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_VALIDITY = datetime.timedelta(days=3650)
"""The CA outlives many rotations of the leaves; within ``renewBefore`` of its end it is
rotated (:mod:`.carotation`)."""
BACKDATE = datetime.timedelta(minutes=5)
"""notBefore is set a little in the past: a member whose clock runs behind the operator's
must not refuse a certificate as not yet valid."""

_DURATION = re.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")
DURATION_PATTERN = r"^([0-9]+h)?([0-9]+m)?([0-9]+s)?$"
"""A Go duration in hours, minutes and seconds (``8760h``, ``90m``), as cert-manager's
``duration`` and ``renewBefore`` (metav1.Duration) are written."""


def parse_duration(text: str) -> datetime.timedelta:
    match = _DURATION.match(text)
    if not match or not text:
        raise ValueError(f"not a duration of hours, minutes and seconds: {text!r}")
    hours, minutes, seconds = (int(g or 0) for g in match.groups())
    return datetime.timedelta(hours=hours, minutes=minutes, seconds=seconds)


@dataclass(frozen=True)
class KeyPair:
    """A certificate and its private key, PEM-encoded (the key is never logged)."""

    cert: bytes
    key: bytes

    def __repr__(self) -> str:
        return f"KeyPair(serial={serial(self.cert)}, key=<private>)"


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM,
                             serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def issue_ca(common_name: str) -> KeyPair:
    key = _key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = _now()
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - BACKDATE).not_valid_after(now + CA_VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(
                digital_signature=True, key_cert_sign=True, crl_sign=True,
                content_commitment=False, key_encipherment=False, data_encipherment=False,
                key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()),
                           critical=False)
            .sign(key, hashes.SHA256()))
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM), _pem_key(key))


def issue(ca: KeyPair, common_name: str, *, dns_names: Sequence[str] = (),
          ips: Sequence[str] = (), server: bool, validity: datetime.timedelta,
          now: datetime.datetime | None = None) -> KeyPair:
    """A leaf certificate signed by ``ca``: clientAuth always, serverAuth when ``server``."""
    ca_cert = x509.load_pem_x509_certificate(ca.cert)
    ca_key = serialization.load_pem_private_key(ca.key, password=None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    key = _key()
    now = now or _now()
    usages = [ExtendedKeyUsageOID.CLIENT_AUTH]
    if server:
        usages.insert(0, ExtendedKeyUsageOID.SERVER_AUTH)
    builder = (x509.CertificateBuilder()
               .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME,
                                                           common_name)]))
               .issuer_name(ca_cert.subject).public_key(key.public_key())
               .serial_number(x509.random_serial_number())
               .not_valid_before(now - BACKDATE).not_valid_after(now + validity)
               .add_extension(x509.BasicConstraints(ca=False, path_length=None),
                              critical=True)
               .add_extension(x509.KeyUsage(
                   digital_signature=True, key_encipherment=True, key_cert_sign=False,
                   crl_sign=False, content_commitment=False, data_encipherment=False,
                   key_agreement=False, encipher_only=False, decipher_only=False),
                   critical=True)
               .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
               .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                   ca_key.public_key()), critical=False))
    names: list[x509.GeneralName] = [x509.DNSName(n) for n in dns_names]
    names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM), _pem_key(key))


def not_after(cert: bytes) -> datetime.datetime:
    return x509.load_pem_x509_certificate(cert).not_valid_after_utc


def serial(cert: bytes) -> str:
    """The serial number in hex, what a pod records to say which certificate it started
    with."""
    return f"{x509.load_pem_x509_certificate(cert).serial_number:x}"


def names(cert: bytes) -> list[str]:
    """The certificate's subject alternative names (DNS names and IPs), for tests and
    events."""
    parsed = x509.load_pem_x509_certificate(cert)
    try:
        san = parsed.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return []
    return [*san.get_values_for_type(x509.DNSName),
            *(str(ip) for ip in san.get_values_for_type(x509.IPAddress))]


def signed_by(cert: bytes, ca: bytes) -> bool:
    try:
        x509.load_pem_x509_certificate(cert).verify_directly_issued_by(
            x509.load_pem_x509_certificate(ca))
    except (InvalidSignature, ValueError, TypeError):
        return False
    return True


def due(cert: bytes, renew_before: datetime.timedelta,
        now: datetime.datetime | None = None) -> bool:
    """Whether ``cert`` expires within ``renew_before``: time to issue the next one."""
    return not_after(cert) - (now or _now()) <= renew_before

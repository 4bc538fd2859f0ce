"""The certificates and keys ``setpoint.machinery.x509encode`` writes are, byte for byte,
what cryptography's ``CertificateBuilder`` and ``private_bytes`` write for the same fields.

The module encodes the DER itself so that a start need not import cryptography's ``x509``
package (docs/benchmarks.md, Start-up, eighteenth pass); the keys and signatures stay
OpenSSL's. Here each shape Setpoint issues (a CA, a serving certificate with IP and DNS
names, a client certificate) is built both ways from the same keys, serial and times: the
to-be-signed bytes must be equal, and the signature must verify with the issuer's key
(RFC 5280 4.1; the time encodings of 4.1.2.5).
"""

from __future__ import annotations

import datetime
import ipaddress

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from setpoint.machinery import x509encode

NOW = datetime.datetime(2026, 11, 28, 1, 2, 3, 456789, tzinfo=datetime.UTC)


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _builder(subject: str, issuer: str, key: ec.EllipticCurvePrivateKey, serial: int,
             not_after: datetime.datetime) -> x509.CertificateBuilder:
    return (x509.CertificateBuilder().subject_name(_name(subject)).issuer_name(_name(issuer))
            .public_key(key.public_key()).serial_number(serial)
            .not_valid_before(NOW).not_valid_after(not_after))


CA_USAGE = x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                         content_commitment=False, key_encipherment=False,
                         data_encipherment=False, key_agreement=False, encipher_only=False,
                         decipher_only=False)


@pytest.mark.parametrize("years", [1, 10, 30])  # 30: past 2049, a GeneralizedTime
def test_each_shape_is_what_cryptographys_builder_writes(years: int) -> None:
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    not_after = NOW + datetime.timedelta(days=365 * years)
    hosts = ["127.0.0.1", "localhost", "::1", "kubernetes.default.svc"]
    theirs = [
        _builder("setpoint-ca", "setpoint-ca", ca_key, 7, not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(CA_USAGE, critical=True),
        _builder("kube-apiserver", "setpoint-ca", key, 2 ** 158 + 1, not_after)
        .add_extension(x509.SubjectAlternativeName([
            x509.IPAddress(ipaddress.ip_address(hosts[0])), x509.DNSName(hosts[1]),
            x509.IPAddress(ipaddress.ip_address(hosts[2])), x509.DNSName(hosts[3])]),
            critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False),
        _builder("front-proxy-client", "setpoint-ca", key, 128, not_after)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False),
    ]
    ours = [
        x509encode.certificate(subject="setpoint-ca", issuer="setpoint-ca",
                               public_key=ca_key.public_key(), signing_key=ca_key,
                               not_before=NOW, not_after=not_after, serial=7,
                               extensions=x509encode.ca_extensions()),
        x509encode.certificate(subject="kube-apiserver", issuer="setpoint-ca",
                               public_key=key.public_key(), signing_key=ca_key,
                               not_before=NOW, not_after=not_after, serial=2 ** 158 + 1,
                               extensions=[x509encode.subject_alt_names(hosts),
                                           x509encode.extended_key_usage(x509encode.SERVER_AUTH)]),
        x509encode.certificate(subject="front-proxy-client", issuer="setpoint-ca",
                               public_key=key.public_key(), signing_key=ca_key,
                               not_before=NOW, not_after=not_after, serial=128,
                               extensions=[x509encode.extended_key_usage(x509encode.CLIENT_AUTH)]),
    ]
    for builder, der in zip(theirs, ours, strict=True):
        expected = builder.sign(ca_key, hashes.SHA256())
        cert = x509.load_der_x509_certificate(der)
        assert cert.tbs_certificate_bytes == expected.tbs_certificate_bytes
        assert cert.signature_algorithm_oid == expected.signature_algorithm_oid
        ca_key.public_key().verify(cert.signature, cert.tbs_certificate_bytes,
                                   ec.ECDSA(hashes.SHA256()))
        assert x509encode.certificate_pem(der) == cert.public_bytes(serialization.Encoding.PEM)
        assert x509encode.not_after(der) == expected.not_valid_after_utc


def test_keys_are_written_as_pkcs8_and_pkix_as_cryptography_writes_them() -> None:
    key = x509encode.new_key()
    assert x509encode.private_key_pem(key) == key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption())
    assert x509encode.public_key_der(key.public_key()) == key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    loaded = serialization.load_pem_private_key(x509encode.private_key_pem(key), None)
    assert isinstance(loaded, ec.EllipticCurvePrivateKey)
    assert loaded.private_numbers() == key.private_numbers()


def test_another_curve_is_refused_not_encoded_wrongly() -> None:
    key = ec.generate_private_key(ec.SECP384R1())
    with pytest.raises(ValueError, match="secp384r1"):
        x509encode.private_key_pem(key)
    with pytest.raises(ValueError, match="secp384r1"):
        x509encode.public_key_der(key.public_key())


def test_a_truncated_or_padded_certificate_has_no_end() -> None:
    key = x509encode.new_key()
    der = x509encode.certificate(subject="a", issuer="a", public_key=key.public_key(),
                                 signing_key=key, not_before=NOW,
                                 not_after=NOW + datetime.timedelta(days=1),
                                 extensions=x509encode.ca_extensions())
    assert x509encode.not_after(der) == (NOW + datetime.timedelta(days=1)).replace(
        microsecond=0)
    for broken in (der[:-1], der + b"\x00", der[:40], b"\x31" + der[1:], b""):
        with pytest.raises(ValueError):
            x509encode.not_after(broken)

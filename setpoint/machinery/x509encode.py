"""P-256 certificates and keys encoded here, generated and signed by OpenSSL.

The certificates Setpoint issues (a CA, a serving or client certificate it signs) are a few
fixed shapes: a CommonName, a validity, three or four extensions. cryptography builds them
with its ``x509`` package, whose import (builders, names, extensions, OIDs and the
serialization formats, all Python classes) took about 160 M instructions, a sixth of
``cluster up``'s path to serving, which issues five keys and four certificates at every
``--memory`` start (docs/benchmarks.md, Start-up, eighteenth pass). Here the keys are still
OpenSSL's (``ec.generate_private_key``) and so are the signatures (``key.sign``: ECDSA with
SHA-256); only the DER around them is written in this module, byte for byte what
cryptography's ``CertificateBuilder`` and ``private_bytes(PEM, PKCS8, NoEncryption())``
write for the same fields (``tests/machinery/test_x509encode.py`` compares the two on the
same keys, serials and times). :func:`not_after` reads a certificate's end back.
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric import ec

__all__ = [
    "CLIENT_AUTH",
    "SERVER_AUTH",
    "ca_extensions",
    "certificate",
    "certificate_pem",
    "extended_key_usage",
    "new_key",
    "not_after",
    "private_key_pem",
    "public_key_der",
    "random_serial",
    "subject_alt_names",
]

# X.680 universal tags
_BOOLEAN, _INTEGER, _BIT_STRING, _OCTET_STRING, _OID = 0x01, 0x02, 0x03, 0x04, 0x06
_UTF8_STRING, _UTC_TIME, _GENERALIZED_TIME = 0x0C, 0x17, 0x18
_SEQUENCE, _SET = 0x30, 0x31


def _tlv(tag: int, content: bytes) -> bytes:
    size = len(content)
    if size < 0x80:
        return bytes((tag, size)) + content
    length = size.to_bytes((size.bit_length() + 7) // 8, "big")
    return bytes((tag, 0x80 | len(length))) + length + content


def _sequence(*parts: bytes) -> bytes:
    return _tlv(_SEQUENCE, b"".join(parts))


def _integer(value: int) -> bytes:
    # two's complement, shortest form: a positive value whose top bit is set gets a 0 byte
    return _tlv(_INTEGER, value.to_bytes(value.bit_length() // 8 + 1, "big"))


def _oid(dotted: str) -> bytes:
    first, second, *rest = (int(arc) for arc in dotted.split("."))
    out = bytearray()
    for arc in (40 * first + second, *rest):
        chunk = [arc & 0x7F]
        arc >>= 7
        while arc:
            chunk.append(0x80 | (arc & 0x7F))
            arc >>= 7
        out += bytes(reversed(chunk))
    return _tlv(_OID, bytes(out))


def _bit_string(data: bytes, unused_bits: int = 0) -> bytes:
    return _tlv(_BIT_STRING, bytes((unused_bits,)) + data)


_EC_PUBLIC_KEY = _oid("1.2.840.10045.2.1")
_PRIME256V1 = _oid("1.2.840.10045.3.1.7")
_ECDSA_WITH_SHA256 = _sequence(_oid("1.2.840.10045.4.3.2"))  # no parameters (RFC 5758)
_COMMON_NAME = _oid("2.5.4.3")
_BASIC_CONSTRAINTS = _oid("2.5.29.19")
_KEY_USAGE = _oid("2.5.29.15")
_SUBJECT_ALT_NAME = _oid("2.5.29.17")
_EXTENDED_KEY_USAGE = _oid("2.5.29.37")
SERVER_AUTH = "1.3.6.1.5.5.7.3.1"
CLIENT_AUTH = "1.3.6.1.5.5.7.3.2"


def new_key() -> ec.EllipticCurvePrivateKey:
    """A new P-256 key, OpenSSL's."""
    from cryptography.hazmat.primitives.asymmetric import ec

    return ec.generate_private_key(ec.SECP256R1())


def _point(key: ec.EllipticCurvePublicKey) -> bytes:
    numbers = key.public_numbers()
    return b"\x04" + numbers.x.to_bytes(32, "big") + numbers.y.to_bytes(32, "big")


def _p256(key: ec.EllipticCurvePublicKey | ec.EllipticCurvePrivateKey) -> None:
    if key.curve.name != "secp256r1":
        raise ValueError(f"only P-256 keys are encoded here, not {key.curve.name}")


def public_key_der(key: ec.EllipticCurvePublicKey) -> bytes:
    """``SubjectPublicKeyInfo`` (RFC 5480) of a P-256 key: the uncompressed point."""
    _p256(key)
    return _sequence(_sequence(_EC_PUBLIC_KEY, _PRIME256V1), _bit_string(_point(key)))


def private_key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    """PKCS #8 ``PRIVATE KEY`` (RFC 5208) of a P-256 key, unencrypted, as OpenSSL writes it:
    the curve in the algorithm's parameters, the ``ECPrivateKey`` (RFC 5915) inside with its
    public key and without the parameters again."""
    _p256(key)
    scalar = key.private_numbers().private_value.to_bytes(32, "big")
    inner = _sequence(_integer(1), _tlv(_OCTET_STRING, scalar),
                      _tlv(0xA1, _bit_string(_point(key.public_key()))))
    der = _sequence(_integer(0), _sequence(_EC_PUBLIC_KEY, _PRIME256V1),
                    _tlv(_OCTET_STRING, inner))
    return _pem("PRIVATE KEY", der)


def _pem(label: str, der: bytes) -> bytes:
    text = base64.b64encode(der)
    lines = b"\n".join(text[i:i + 64] for i in range(0, len(text), 64))
    return (b"-----BEGIN " + label.encode() + b"-----\n" + lines +
            b"\n-----END " + label.encode() + b"-----\n")


def certificate_pem(der: bytes) -> bytes:
    return _pem("CERTIFICATE", der)


def random_serial() -> int:
    """A positive 159-bit serial, as ``x509.random_serial_number`` (RFC 5280: at most 20
    octets)."""
    return int.from_bytes(os.urandom(20), "big") >> 1


def _name(common_name: str) -> bytes:
    # an RDNSequence of one CommonName, a UTF8String as cryptography's NameAttribute writes it
    attribute = _sequence(_COMMON_NAME, _tlv(_UTF8_STRING, common_name.encode()))
    return _sequence(_tlv(_SET, attribute))


def _time(moment: datetime.datetime) -> bytes:
    # RFC 5280 4.1.2.5: UTCTime through 2049, GeneralizedTime from 2050; whole seconds, UTC
    moment = moment.astimezone(datetime.UTC)
    if moment.year < 2050:
        return _tlv(_UTC_TIME, moment.strftime("%y%m%d%H%M%SZ").encode())
    return _tlv(_GENERALIZED_TIME, moment.strftime("%Y%m%d%H%M%SZ").encode())


def _extension(oid: bytes, value: bytes, *, critical: bool) -> bytes:
    # critical is DEFAULT FALSE: DER leaves a false one out
    flag = _tlv(_BOOLEAN, b"\xff") if critical else b""
    return _sequence(oid, flag, _tlv(_OCTET_STRING, value))


def ca_extensions() -> list[bytes]:
    """A CA's: BasicConstraints ``CA:TRUE`` with no path length, and KeyUsage
    digitalSignature, keyCertSign and cRLSign, both critical."""
    # KeyUsage bits 0, 5 and 6 (10000110), the unused trailing bit counted
    return [_extension(_BASIC_CONSTRAINTS, _sequence(_tlv(_BOOLEAN, b"\xff")), critical=True),
            _extension(_KEY_USAGE, _bit_string(b"\x86", 1), critical=True)]


def subject_alt_names(hosts: Sequence[str]) -> bytes:
    """SubjectAltName of ``hosts``: iPAddress for an IP address, dNSName otherwise."""
    names = []
    for host in hosts:
        try:
            names.append(_tlv(0x87, ipaddress.ip_address(host).packed))
        except ValueError:
            names.append(_tlv(0x82, host.encode("ascii")))
    return _extension(_SUBJECT_ALT_NAME, _sequence(*names), critical=False)


def extended_key_usage(*usages: str) -> bytes:
    return _extension(_EXTENDED_KEY_USAGE, _sequence(*(_oid(u) for u in usages)),
                      critical=False)


def certificate(*, subject: str, issuer: str, public_key: ec.EllipticCurvePublicKey,
                signing_key: ec.EllipticCurvePrivateKey, not_before: datetime.datetime,
                not_after: datetime.datetime, extensions: Sequence[bytes],
                serial: int | None = None) -> bytes:
    """A v3 certificate (RFC 5280), DER: ``subject`` and ``issuer`` are CommonNames, the
    signature ECDSA with SHA-256 by ``signing_key``, OpenSSL's."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec

    tbs = _sequence(
        _tlv(0xA0, _integer(2)),  # [0] EXPLICIT version v3
        _integer(random_serial() if serial is None else serial),
        _ECDSA_WITH_SHA256,
        _name(issuer),
        _sequence(_time(not_before), _time(not_after)),
        _name(subject),
        public_key_der(public_key),
        _tlv(0xA3, _sequence(*extensions)),  # [3] EXPLICIT extensions
    )
    signature = signing_key.sign(tbs, ec.ECDSA(hashes.SHA256()))
    return _sequence(tbs, _ECDSA_WITH_SHA256, _bit_string(signature))


@dataclass(frozen=True)
class SignedPair:
    """A new CA and one certificate it signed: keys and DER."""

    ca_key: ec.EllipticCurvePrivateKey
    ca_der: bytes
    key: ec.EllipticCurvePrivateKey
    der: bytes


def ca_and_certificate(*, ca_name: str, subject: str, extensions: Sequence[bytes],
                       validity: datetime.timedelta) -> SignedPair:
    """A new self-signed CA named ``ca_name`` and a certificate for ``subject`` it signed,
    both valid from five minutes ago (clock skew) for ``validity``."""
    now = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=5)
    ca_key = new_key()
    ca_der = certificate(subject=ca_name, issuer=ca_name, public_key=ca_key.public_key(),
                         signing_key=ca_key, not_before=now, not_after=now + validity,
                         extensions=ca_extensions())
    key = new_key()
    der = certificate(subject=subject, issuer=ca_name, public_key=key.public_key(),
                      signing_key=ca_key, not_before=now, not_after=now + validity,
                      extensions=extensions)
    return SignedPair(ca_key, ca_der, key, der)


def _element(der: bytes, offset: int, tag: int) -> tuple[int, int]:
    """The content's ``(start, end)`` of the element of ``tag`` at ``offset`` (ValueError
    if it is another, or runs past the data)."""
    if offset + 2 > len(der) or der[offset] != tag:
        raise ValueError("not the DER of a certificate")
    size, start = der[offset + 1], offset + 2
    if size & 0x80:
        octets = size & 0x7F
        if not 0 < octets <= 4:
            raise ValueError("not the DER of a certificate")
        size, start = int.from_bytes(der[start:start + octets], "big"), start + octets
    if start + size > len(der):
        raise ValueError("not the DER of a certificate")
    return start, start + size


def not_after(der: bytes) -> datetime.datetime:
    """The end of a certificate's validity (UTC), read from its DER: the fields before it
    are walked, not checked (cryptography's parser checks a certificate whole)."""
    try:
        return _not_after(der)
    except (IndexError, UnicodeDecodeError):
        raise ValueError("not the DER of a certificate") from None


def _not_after(der: bytes) -> datetime.datetime:
    start, end = _element(der, 0, _SEQUENCE)
    if end != len(der):
        raise ValueError("not the DER of a certificate")
    offset, _ = _element(der, start, _SEQUENCE)  # tbsCertificate
    if der[offset] == 0xA0:  # [0] version
        offset = _element(der, offset, 0xA0)[1]
    offset = _element(der, offset, _INTEGER)[1]
    offset = _element(der, offset, _SEQUENCE)[1]  # signature algorithm
    offset = _element(der, offset, _SEQUENCE)[1]  # issuer
    offset, _ = _element(der, offset, _SEQUENCE)  # validity
    offset = _element(der, offset, der[offset])[1]  # notBefore
    tag = der[offset]
    if tag not in (_UTC_TIME, _GENERALIZED_TIME):
        raise ValueError("not the DER of a certificate")
    start, end = _element(der, offset, tag)
    text = der[start:end].decode("ascii")
    if tag == _UTC_TIME:  # RFC 5280 4.1.2.5.1: YY of 50 or more is 19YY
        text = ("19" if int(text[:2]) >= 50 else "20") + text
    return datetime.datetime.strptime(text, "%Y%m%d%H%M%SZ").replace(tzinfo=datetime.UTC)

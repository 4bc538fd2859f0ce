"""Whether a webhook's caBundle can be trusted as root certificates, in client-go's words.

Shared by the validation of webhook configurations (apiextensions and admissionregistration)
and by the client that calls webhooks with a bundle stored before it was checked.
"""

from __future__ import annotations

import base64
import binascii
import re

_PEM_BLOCK = re.compile(
    rb"(?:^|\n)-----BEGIN ([^\n]*?)-----[ \t]*\r?\n(.*?)(?:^|\n)-----END \1-----", re.S | re.M)


def certificate_blocks(bundle: bytes) -> list[bytes]:
    """The DER of each ``CERTIFICATE`` block without headers, in order: the blocks
    client-go's ``cert.ParseCertsPEM`` (util/cert/pem.go) hands to x509.ParseCertificate
    (it skips the others)."""
    out = []
    for block in _PEM_BLOCK.finditer(bundle):
        head, _, body = block[2].rpartition(b"\n\n") if b":" in block[2] else (b"", b"", block[2])
        if block[1] == b"CERTIFICATE" and not head:
            out.append(base64.b64decode(b"".join(body.split())))
    return out


def ca_bundle_error(bundle: bytes) -> str:
    """Why client-go's ``rootCertPool`` (transport/transport.go, called by TLSConfigFor)
    refuses ``bundle``, worded by its ``createErrorParsingCAData``; "" when some block is a
    certificate x509.ParseCertificate accepts."""
    from cryptography import x509

    blocks = list(_PEM_BLOCK.finditer(bundle))
    for block in blocks:
        head, _, body = block[2].rpartition(b"\n\n") if b":" in block[2] else (b"", b"", block[2])
        if block[1] != b"CERTIFICATE" or head:
            continue
        try:
            x509.load_der_x509_certificate(base64.b64decode(b"".join(body.split())))
        except (ValueError, binascii.Error):
            break
        else:
            return ""
    if not blocks:
        return "unable to load root certificates: unable to parse bytes as PEM block"
    certs = [b for b in blocks if b[1] == b"CERTIFICATE" and b":" not in b[2]]
    if certs:
        return "unable to load root certificates: failed to parse certificate: x509: " \
               "malformed certificate"
    return "unable to load root certificates: no valid certificate authority data seen"

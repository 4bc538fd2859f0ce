"""Users named by client certificates: kube-apiserver's ``--client-ca-file`` authenticator.

k8s.io/apiserver pkg/authentication/request/x509/x509.go: a certificate chaining to the
client CA (the TLS listener verified that) with the ``client auth`` extended key usage
names the user by its subject's CommonName (``CommonNameUserConversion``: none, no user) and
the groups by its Organizations; authenticated users are also in ``system:authenticated``
(the group adder kube-apiserver wraps its authenticators in).
"""

from __future__ import annotations

import functools
from typing import Any

AUTHENTICATED = "system:authenticated"


def user_of_certificate(der: bytes) -> dict[str, Any] | None:
    """The user ``der`` (a verified client certificate) names, or None: a fresh dict each
    time, the certificate parsed once (a client sends the same one with every request on a
    connection)."""
    named = _named_by(der)
    return None if named is None else {"username": named[0], "groups": list(named[1])}


@functools.lru_cache(maxsize=256)
def _named_by(der: bytes) -> tuple[str, tuple[str, ...]] | None:
    # cryptography's x509 package with the first client certificate, not at the start
    from cryptography import x509
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    try:
        cert = x509.load_der_x509_certificate(der)
    except ValueError:
        return None
    try:
        usages = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    except x509.ExtensionNotFound:
        usages = None  # Go's Verify takes a certificate without the extension for any usage
    if usages is not None and ExtendedKeyUsageOID.CLIENT_AUTH not in usages \
            and ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE not in usages:
        return None
    names = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    common_name = str(names[-1].value) if names else ""  # pkix.Name keeps the last
    if not common_name:
        return None
    groups = [str(a.value) for a in cert.subject.get_attributes_for_oid(
        NameOID.ORGANIZATION_NAME)]
    if AUTHENTICATED not in groups:
        groups.append(AUTHENTICATED)
    return common_name, tuple(groups)

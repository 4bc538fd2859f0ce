"""The cluster's certificate authority and serving certificate, generated once per data dir.

The CA is also kube-apiserver's ``--client-ca-file``: the TLS listener asks for a client
certificate and accepts one the CA signed (``x509.py`` names its user), and the CA's key is
kube-controller-manager's ``--cluster-signing-key-file`` (the CSR signing controller).
"""

from __future__ import annotations

import datetime
import ssl
from dataclasses import dataclass
from pathlib import Path

from setpoint.cluster.storage.privatefiles import private_directory, read_private, write_private
from setpoint.machinery.certificates import issue, reissue_serving, serving_covers

VALIDITY = datetime.timedelta(days=3650)
_FILES = ("ca.crt", "serving.crt", "serving.key", "ca.key")


@dataclass(frozen=True)
class ServingCerts:
    """The CA, the serving certificate and their keys, PEM-encoded."""

    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes
    ca_key_pem: bytes

    def ssl_context(self, directory: Path) -> ssl.SSLContext:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        # Go's crypto/tls server never renegotiates (conn.go handleRenegotiation is the
        # client's only), so a connection's client certificate is the handshake's
        ctx.options |= ssl.OP_NO_RENEGOTIATION
        ctx.load_cert_chain(directory / "serving.crt", directory / "serving.key")
        # Go's tls.RequestClientCert: a certificate is asked for, not required. (OpenSSL
        # refuses the handshake of a client whose certificate the CA did not sign, where Go
        # answers its requests 401.)
        ctx.load_verify_locations(cadata=self.ca_pem.decode())
        ctx.verify_mode = ssl.CERT_OPTIONAL
        return ctx


def _generate(hosts: list[str]) -> ServingCerts:
    made = issue(hosts, ca_name="setpoint-ca", common_name="kube-apiserver", validity=VALIDITY)
    return ServingCerts(made.ca_pem, made.cert_pem, made.key_pem, made.ca_key_pem)


def ensure_certs(directory: Path, hosts: list[str]) -> ServingCerts:
    """Load the certificates kept in ``directory``, generating them on first use (and anew
    where an older version kept no CA key)."""
    private_directory(directory)
    files = {n: directory / n for n in _FILES}
    if all(p.exists() for p in files.values()):
        kept = ServingCerts(*(read_private(files[n]) for n in _FILES))
        if serving_covers(kept.cert_pem, hosts):
            return kept
        # started on another --host than the certificate was made for: a new serving
        # certificate from the same CA, so kubeconfigs written before still verify it
        cert_pem, key_pem = reissue_serving(kept.ca_pem, kept.ca_key_pem, hosts,
                                            common_name="kube-apiserver", validity=VALIDITY)
        write_private(files["serving.key"], key_pem)
        write_private(files["serving.crt"], cert_pem)
        return ServingCerts(kept.ca_pem, cert_pem, key_pem, kept.ca_key_pem)
    certs = _generate(hosts)
    write_private(files["ca.crt"], certs.ca_pem)
    write_private(files["serving.crt"], certs.cert_pem)
    write_private(files["serving.key"], certs.key_pem)
    write_private(files["ca.key"], certs.ca_key_pem)
    return certs

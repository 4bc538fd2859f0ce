"""metrics-server's serving certificate: a CA made at start and a certificate it signs for
``metrics-server.kube-system.svc``, the server name the aggregator checks (kube-aggregator
pkg/apiserver/handler_proxy.go: ``<service>.<namespace>.svc``). The CA is the APIService's
``caBundle``. Nothing is kept on disk: the key goes to ``ssl`` through a private directory
(mode 0700, key 0600) that is gone once it is loaded.
"""

from __future__ import annotations

import datetime
import ssl
import tempfile
from pathlib import Path

from setpoint.machinery.certificates import Certificates, issue

__all__ = ["server_context", "serving_certificates"]

VALIDITY = datetime.timedelta(days=365)


def serving_certificates(service: str, namespace: str) -> Certificates:
    """A new CA and a serving certificate for the Service's DNS names and 127.0.0.1."""
    hosts = [f"{service}.{namespace}.svc", f"{service}.{namespace}.svc.cluster.local",
             f"{service}.{namespace}", service, "127.0.0.1", "localhost"]
    return issue(hosts, ca_name=f"{service}-ca@{int(datetime.datetime.now().timestamp())}",
                 validity=VALIDITY)


def server_context(made: Certificates) -> ssl.SSLContext:
    """A TLS server context with ``made``'s certificate that asks clients for one (the
    authenticator loads the CAs it accepts: k8s.io/apiserver requests client certificates
    and verifies them itself)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    with tempfile.TemporaryDirectory(prefix="setpoint-metrics-server-") as tmp:
        cert, key = Path(tmp) / "tls.crt", Path(tmp) / "tls.key"
        cert.write_bytes(made.cert_pem)
        key.touch(mode=0o600)
        key.write_bytes(made.key_pem)
        context.load_cert_chain(cert, key)
    context.verify_mode = ssl.CERT_OPTIONAL
    return context

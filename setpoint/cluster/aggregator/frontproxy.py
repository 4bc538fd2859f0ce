"""The front proxy's identity: a requestheader CA and the client certificate it signs.

kube-apiserver proves itself to an extension API server with ``--proxy-client-cert-file``
(kubeadm: ``front-proxy-client.crt``, CN ``front-proxy-client``) signed by
``--requestheader-client-ca-file`` (``front-proxy-ca.crt``); the backend trusts the user it
is told in ``X-Remote-User`` only from a client presenting such a certificate, reading the CA
and the allowed names from the ConfigMap ``kube-system/extension-apiserver-authentication``
(k8s.io/kubernetes pkg/controlplane/controller/clusterauthenticationtrust). The files are
made once beside the cluster's other keys, 0600 in a 0700 directory.
"""

from __future__ import annotations

import datetime
import ssl
from dataclasses import dataclass
from pathlib import Path

from setpoint.cluster.storage.privatefiles import (
    private_directory,
    private_file,
    read_private,
    write_private,
)
from setpoint.machinery import x509encode

CLIENT_NAME = "front-proxy-client"
CA_NAME = "front-proxy-ca"
VALIDITY = datetime.timedelta(days=3650)
AUTHENTICATION_CONFIGMAP = "extension-apiserver-authentication"
# kube-apiserver's defaults for the request headers (kubeadm sets the same flags)
USERNAME_HEADERS = ["X-Remote-User"]
GROUP_HEADERS = ["X-Remote-Group"]
EXTRA_HEADERS_PREFIX = ["X-Remote-Extra-"]
FILES = ("front-proxy-ca.crt", "front-proxy-client.crt", "front-proxy-client.key")


@dataclass(frozen=True)
class FrontProxy:
    """Where the requestheader CA and the proxy's client certificate and key are kept."""

    ca_pem: bytes
    cert_file: Path
    key_file: Path

    def client_context(self, ctx: ssl.SSLContext) -> ssl.SSLContext:
        """``ctx`` presenting the proxy's client certificate."""
        ctx.load_cert_chain(self.cert_file, self.key_file)
        return ctx


def _issue() -> tuple[bytes, bytes, bytes]:
    # encoded by x509encode: cryptography's x509 package stays off the server's start
    pair = x509encode.ca_and_certificate(
        ca_name=CA_NAME, subject=CLIENT_NAME, validity=VALIDITY,
        extensions=[x509encode.extended_key_usage(x509encode.CLIENT_AUTH)])
    return (x509encode.certificate_pem(pair.ca_der), x509encode.certificate_pem(pair.der),
            x509encode.private_key_pem(pair.key))


def ensure_front_proxy(directory: Path) -> FrontProxy:
    """The front-proxy material kept in ``directory``, made on first use."""
    private_directory(directory)
    paths = [directory / name for name in FILES]
    if not all(p.exists() for p in paths):
        for path, content in zip(paths, _issue(), strict=True):
            write_private(path, content)
    ca_pem = read_private(paths[0])
    for path in paths[1:]:
        private_file(path)  # an older copy left readable is tightened before use
    return FrontProxy(ca_pem, paths[1], paths[2])


def authentication_configmap_data(client_ca_pem: bytes, front_proxy: FrontProxy | None,
                                  ) -> dict[str, str]:
    """The data of ``kube-system/extension-apiserver-authentication``, as
    clusterauthenticationtrust's ``getConfigMapDataFor`` writes it: the client CA, and the
    requestheader CA with its allowed names and headers as JSON string lists."""
    import orjson

    data = {"client-ca-file": client_ca_pem.decode()}
    if front_proxy is not None:
        data.update({
            "requestheader-client-ca-file": front_proxy.ca_pem.decode(),
            "requestheader-allowed-names": orjson.dumps([CLIENT_NAME]).decode(),
            "requestheader-username-headers": orjson.dumps(USERNAME_HEADERS).decode(),
            "requestheader-group-headers": orjson.dumps(GROUP_HEADERS).decode(),
            "requestheader-extra-headers-prefix": orjson.dumps(EXTRA_HEADERS_PREFIX).decode(),
        })
    return data

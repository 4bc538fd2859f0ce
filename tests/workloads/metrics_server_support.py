"""Reaching the workloads' metrics-server as the aggregator does: the address from the
Endpoints of the Service the APIService names, the server's CA from the APIService's
caBundle, server name ``metrics-server.kube-system.svc``, and a front-proxy client
certificate signed by the CA published in kube-system/extension-apiserver-authentication
(kube-aggregator pkg/apiserver/handler_proxy.go; k8s.io/apiserver
pkg/authentication/request/headerrequest). The tests sign that certificate with a CA of
their own, published before the kubelets start.
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import json
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from setpoint.client import Client, Kind, NotFoundError, ServiceUnavailableError
from setpoint.workloads.kubelet import KubeletOptions
from tests.workloads.test_kubelet_support import FAST, Env, kubelet_env, wait_for

CONFIGMAP = Kind("v1", "ConfigMap")
ENDPOINTS = Kind("v1", "Endpoints")
APISERVICE = Kind("apiregistration.k8s.io/v1", "APIService")
SERVER_NAME = "metrics-server.kube-system.svc"
Obj = dict[str, Any]


def _name(cn: str, org: str | None = None) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    if org:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    return x509.Name(attrs)


@dataclass
class CA:
    """A test certificate authority that signs client certificates."""

    key: ec.EllipticCurvePrivateKey
    cert: x509.Certificate

    @classmethod
    def new(cls, name: str) -> CA:
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=5)
        cert = (x509.CertificateBuilder().subject_name(_name(name)).issuer_name(_name(name))
                .public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
                .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
                .sign(key, hashes.SHA256()))
        return cls(key, cert)

    @property
    def pem(self) -> str:
        return self.cert.public_bytes(serialization.Encoding.PEM).decode()

    def client_files(self, directory: Path, cn: str, org: str | None = None
                     ) -> tuple[Path, Path]:
        """A client certificate (CN ``cn``) and its key, written 0600 under ``directory``."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=5)
        cert = (x509.CertificateBuilder().subject_name(_name(cn, org))
                .issuer_name(self.cert.subject).public_key(key.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
                .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), False)
                .sign(self.key, hashes.SHA256()))
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        cert_file, key_file = directory / f"{cn}.crt", directory / f"{cn}.key"
        cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        key_file.touch(mode=0o600)
        key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                               serialization.PrivateFormat.PKCS8,
                                               serialization.NoEncryption()))
        return cert_file, key_file


def authentication_configmap(front_proxy: CA, client_ca: CA | None = None,
                             allowed: tuple[str, ...] = ("front-proxy-client",)) -> Obj:
    """kube-system/extension-apiserver-authentication as kube-apiserver publishes it
    (pkg/controlplane/controller/clusterauthenticationtrust)."""
    data = {"requestheader-client-ca-file": front_proxy.pem,
            "requestheader-allowed-names": json.dumps(list(allowed)),
            "requestheader-username-headers": json.dumps(["X-Remote-User"]),
            "requestheader-group-headers": json.dumps(["X-Remote-Group"]),
            "requestheader-extra-headers-prefix": json.dumps(["X-Remote-Extra-"])}
    if client_ca is not None:
        data["client-ca-file"] = client_ca.pem
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "extension-apiserver-authentication",
                         "namespace": "kube-system"}, "data": data}


async def publish(client: Client, configmap: Obj) -> None:
    try:
        current = await client.get(CONFIGMAP, "extension-apiserver-authentication",
                                   namespace="kube-system")
    except NotFoundError:
        await client.create(configmap)
        return
    await client.update({**configmap, "metadata": {
        **configmap["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]}})


async def backend(client: Client) -> tuple[int, bytes] | None:
    """The port the Endpoints name and the APIService's CA, once registered."""
    try:
        endpoints = await client.get(ENDPOINTS, "metrics-server", namespace="kube-system")
        service = await client.get(APISERVICE, "v1beta1.metrics.k8s.io")
    except NotFoundError:
        return None
    subsets = endpoints.get("subsets") or []
    if not subsets:
        return None
    if "caBundle" not in service["spec"]:
        return None  # still the local APIService the legacy CRDs had (crdregistration)
    return int(subsets[0]["ports"][0]["port"]), base64.b64decode(service["spec"]["caBundle"])


class MetricsServerClient:
    """HTTPS to the backend with an optional client certificate."""

    def __init__(self, port: int, ca_pem: bytes,
                 cert: tuple[Path, Path] | None = None) -> None:
        self.port = port
        context = ssl.create_default_context(cadata=ca_pem.decode())
        if cert is not None:
            context.load_cert_chain(*cert)
        self.context = context

    async def get(self, path: str, *, user: str | None = None,
                  groups: tuple[str, ...] = (), accept: str = "application/json",
                  ) -> tuple[int, Any]:
        return await self.request("GET", path, user=user, groups=groups, accept=accept)

    async def request(self, method: str, path: str, *, user: str | None = None,
                      groups: tuple[str, ...] = (), accept: str = "application/json",
                      token: str | None = None) -> tuple[int, Any]:
        headers: list[tuple[str, str]] = [("Accept", accept)]
        if token is not None:
            headers.append(("Authorization", f"Bearer {token}"))
        if user is not None:
            headers.append(("X-Remote-User", user))
        headers += [("X-Remote-Group", g) for g in groups]
        connector = aiohttp.TCPConnector(ssl=self.context)
        async with aiohttp.ClientSession(connector=connector) as session, session.request(
                method, f"https://127.0.0.1:{self.port}{path}", headers=headers,
                server_hostname=SERVER_NAME) as response:
            text = await response.text()
            try:
                return response.status, json.loads(text)
            except ValueError:
                return response.status, text


class MetricsReader:
    """Reads metrics.k8s.io through the API server, which proxies to the workloads'
    metrics-server (the aggregator), as kubectl top does."""

    def __init__(self, client: Client) -> None:
        self.client = client

    async def get(self, path: str) -> Obj:
        return dict(await self.client.request("GET", path))


async def metrics_api_served(client: Client) -> bool:
    """Whether the aggregator serves metrics.k8s.io (its APIService Available)."""
    try:
        await client.request("GET", "/apis/metrics.k8s.io/v1beta1")
    except (NotFoundError, ServiceUnavailableError):
        return False
    return True


@contextlib.asynccontextmanager
async def metrics_env(options: KubeletOptions = FAST
                      ) -> AsyncIterator[tuple[Env, MetricsReader]]:
    """A kubelet environment once its metrics-server is served through the API server
    (the APIService Available), and a reader of its metrics."""
    async with kubelet_env(options) as env:
        await wait_for(lambda: metrics_api_served(env.client))
        yield env, MetricsReader(env.client)

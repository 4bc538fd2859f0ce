"""Starting and stopping the embedded cluster: TLS, token, socket, kubeconfig."""

from __future__ import annotations

import secrets
import socket
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from setpoint.cluster.admission.admissionconfig import AdmissionConfiguration
from setpoint.cluster.admission.pods import DefaultTolerationSeconds
from setpoint.cluster.aggregator.frontproxy import ensure_front_proxy
from setpoint.cluster.apiserver import APIServer
from setpoint.cluster.authentication import kubeconfig as kubeconfig_file
from setpoint.cluster.authentication.tls import ensure_certs
from setpoint.cluster.authentication.tokens import TokenIssuer
from setpoint.cluster.endpoints.auditing import Auditor
from setpoint.cluster.endpoints.connections import ConnectionLimits
from setpoint.cluster.endpoints.httpserver import HTTPServer
from setpoint.cluster.endpoints.server import Handler
from setpoint.cluster.storage.privatefiles import private_directory, read_private, write_private
from setpoint.machinery.eventloop import quiet_closed_tls_writes

if TYPE_CHECKING:
    from setpoint.cluster.audit.backend import Backend
    from setpoint.cluster.audit.policy import Policy


@dataclass
class RunningCluster:
    """A started cluster: where it listens and how to reach it."""

    url: str
    kubeconfig: Path
    token: str
    ca_file: Path
    api: APIServer = field(repr=False)

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])


def _token_for(directory: Path) -> str:
    path = directory / "token"
    if path.exists():
        return read_private(path).decode().strip()
    token = secrets.token_urlsafe(32)
    write_private(path, token + "\n")
    return token


@asynccontextmanager
async def serve(
    data: Path | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    kubeconfig: Path | None = None,
    state_dir: Path | None = None,
    limits: ConnectionLimits | None = None,
    service_cluster_ip_range: str | None = None,
    admission_config: AdmissionConfiguration | None = None,
    default_toleration_seconds: DefaultTolerationSeconds | None = None,
    audit_policy: Policy | None = None,
    audit_log: Backend | None = None,
) -> AsyncIterator[RunningCluster]:
    """Run an API server until the block exits.

    ``data`` keeps the state (SQLite), the CA and the token across restarts; without it the
    state lives in memory and the credentials in a temporary directory.
    ``service_cluster_ip_range`` is kube-apiserver's ``--service-cluster-ip-range``
    (10.96.0.0/12 unless given; clusters whose kubelets run real processes give a loopback
    range, so that ClusterIPs are addresses a local proxy can listen on:
    ``setpoint.workloads.loopbacknet``).
    ``admission_config`` is what kube-apiserver's ``--admission-control-config-file`` gives
    its admission plugins (:func:`read_admission_configuration`).
    ``default_toleration_seconds`` are ``--default-not-ready-toleration-seconds`` and
    ``--default-unreachable-toleration-seconds`` (300 each unless given).
    ``audit_policy`` and ``audit_log`` are ``--audit-policy-file`` (:func:`load_policy`) and
    the audit backend (a :class:`LogBackend`, or all that ``AuditOptions.backend`` makes of
    kube-apiserver's log and webhook flags; shut down when the server stops): requests are
    audited only with both, as kube-apiserver audits only with a policy and a backend.
    """
    quiet_closed_tls_writes()  # a client dropping its TLS connection is no traceback
    tmp: tempfile.TemporaryDirectory[str] | None = None
    if data is not None:
        secrets_dir = private_directory(data)  # before anything is written into it
    else:
        tmp = tempfile.TemporaryDirectory(prefix="setpoint-")
        secrets_dir = private_directory(state_dir) if state_dir else Path(tmp.name)
    hosts = [host, "localhost", "127.0.0.1", "kubernetes", "kubernetes.default",
             "kubernetes.default.svc"]
    certs = ensure_certs(secrets_dir, sorted(set(hosts)))
    token = _token_for(secrets_dir)
    api = APIServer(data, ca_pem=certs.ca_pem, ca_key_pem=certs.ca_key_pem,
                    tokens=TokenIssuer.load_or_create(secrets_dir),
                    front_proxy=ensure_front_proxy(secrets_dir),
                    admission_config=admission_config,
                    default_toleration_seconds=default_toleration_seconds,
                    **({"service_cluster_ip_range": service_cluster_ip_range}
                       if service_cluster_ip_range else {}))
    # IPPROTO_TCP named explicitly: asyncio sets TCP_NODELAY only on sockets that say so,
    # and without it each answer waits for the client's delayed ACK
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM,
                         socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(512)
    sock.setblocking(False)
    bound_port = sock.getsockname()[1]
    api.start(advertise_address=host if host not in ("0.0.0.0", "::") else "127.0.0.1",
              port=bound_port)
    auditor = Auditor(audit_policy, audit_log) \
        if audit_policy is not None and audit_log is not None else None
    handler = Handler(api.front_parts(), token, auditor)
    http = HTTPServer(handler, limits, at_once=handler.answer_at_once)
    await http.start(sock, certs.ssl_context(secrets_dir))
    api.post_start()
    url_host = f"[{host}]" if ":" in host else host
    url = f"https://{url_host}:{bound_port}"
    config_path = kubeconfig or secrets_dir / "kubeconfig"
    kubeconfig_file.write(config_path, url, certs.ca_pem, token)
    try:
        yield RunningCluster(url, config_path, token, secrets_dir / "ca.crt", api)
    finally:
        await api.stop()
        await http.stop()
        if auditor is not None:
            await auditor.shutdown()
        elif audit_log is not None:
            await audit_log.shutdown()
        if tmp is not None:
            tmp.cleanup()

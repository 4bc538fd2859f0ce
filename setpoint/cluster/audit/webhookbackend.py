"""The webhook backend (k8s.io/apiserver plugin/pkg/audit/webhook/webhook.go): events POSTed
as an ``audit.k8s.io/v1`` ``EventList`` to the server a kubeconfig names
(``--audit-webhook-config-file``, read by pkg/util/webhook ``LoadKubeconfig``: its current
context's cluster, certificate authority, client certificate and token), retried on any
error (``retryOnError``) with ``DefaultRetryBackoffWithInitialDelay``: 5 tries, the first
wait ``--audit-webhook-initial-backoff`` (10s unless given), then 1.5 times longer each,
up to a fifth more at random. Each call may take 30 s (``defaultRequestTimeout``)."""

from __future__ import annotations

import asyncio
import base64
import random
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from setpoint.cluster.audit.backend import Event
from setpoint.cluster.audit.event import ordered
from setpoint.cluster.audit.metrics import plugin_error
from setpoint.machinery import gojson

PLUGIN_NAME = "webhook"
REQUEST_TIMEOUT_S = 30.0
BACKOFF_FACTOR = 1.5
BACKOFF_JITTER = 0.2
BACKOFF_STEPS = 5


class WebhookConfigError(ValueError):
    """A kubeconfig the webhook cannot use, in client-go's words."""


@dataclass
class WebhookClientConfig:
    """What of the kubeconfig reaches the client (``rest.Config``)."""

    server: str
    ca_pem: bytes | None = None
    insecure: bool = False
    cert_pem: bytes | None = None
    key_pem: bytes | None = None
    token: str | None = None


def load_kubeconfig(path: str) -> WebhookClientConfig:
    """clientcmd's loading of an explicit path, as ``LoadKubeconfig`` asks it."""
    import yaml

    file = Path(path)
    if not file.exists():
        raise WebhookConfigError(f"stat {path}: no such file or directory")
    try:
        doc = yaml.safe_load(file.read_bytes()) or {}
        if not isinstance(doc, dict):
            raise yaml.YAMLError("the kubeconfig is not a mapping")
    except (OSError, yaml.YAMLError) as exc:
        raise WebhookConfigError(f'error loading config file "{path}": {exc}') from None
    base = file.parent

    def named(key: str, name: str, body: str) -> dict[str, Any]:
        for item in doc.get(key) or []:
            if isinstance(item, dict) and item.get("name") == name:
                return item.get(body) or {}
        return {}

    context_name = doc.get("current-context") or ""
    context = named("contexts", context_name, "context")
    cluster = named("clusters", context.get("cluster", ""), "cluster")
    user = named("users", context.get("user", ""), "user")
    server = cluster.get("server")
    if not server:
        raise WebhookConfigError("invalid configuration: no configuration has been provided, "
                                 "try setting KUBERNETES_MASTER environment variable")

    def data(section: dict[str, Any], key: str) -> bytes | None:
        if section.get(f"{key}-data"):
            return base64.b64decode(section[f"{key}-data"])
        if section.get(key):
            return (base / str(section[key])).read_bytes()
        return None

    try:
        token = user.get("token") or (
            (base / user["tokenFile"]).read_text().strip() if user.get("tokenFile") else None)
        return WebhookClientConfig(
            server=server, ca_pem=data(cluster, "certificate-authority"),
            insecure=bool(cluster.get("insecure-skip-tls-verify")),
            cert_pem=data(user, "client-certificate"), key_pem=data(user, "client-key"),
            token=token)
    except (OSError, ValueError) as exc:
        raise WebhookConfigError(f'error loading config file "{path}": {exc}') from None


def event_list(events: list[Event]) -> bytes:
    """The body: an EventList, its items without TypeMeta."""
    body = {"kind": "EventList", "apiVersion": "audit.k8s.io/v1", "metadata": {},
            "items": [ordered(e, typed=False) for e in events]}
    return gojson.go_text(orjson.dumps(body))


class WebhookBackend:
    """``backend``: a batch POSTed, retried with backoff, and dropped (logged) after the
    last try."""

    def __init__(self, config: WebhookClientConfig, initial_backoff: float) -> None:
        self.config = config
        self.initial_backoff = initial_backoff
        self._session: Any = None
        self._ssl = self._ssl_context()

    @classmethod
    def from_kubeconfig(cls, path: str, initial_backoff: float) -> WebhookBackend:
        return cls(load_kubeconfig(path), initial_backoff)

    def __repr__(self) -> str:
        return f"WebhookBackend(server={self.config.server!r})"

    def _ssl_context(self) -> ssl.SSLContext | None:
        if not self.config.server.startswith("https:"):
            return None
        if self.config.ca_pem is not None:
            ctx = ssl.create_default_context(cadata=self.config.ca_pem.decode())
        else:
            ctx = ssl.create_default_context()
        if self.config.insecure:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        if self.config.cert_pem is not None and self.config.key_pem is not None:
            # (ssl loads a chain only from files)
            with tempfile.TemporaryDirectory() as tmp:
                cert, key = Path(tmp) / "tls.crt", Path(tmp) / "tls.key"
                cert.write_bytes(self.config.cert_pem)
                key.write_bytes(self.config.key_pem)
                ctx.load_cert_chain(cert, key)
        return ctx

    def process_events(self, events: list[Event]) -> asyncio.Future[bool]:
        return asyncio.ensure_future(self._send(events))

    async def _send(self, events: list[Event]) -> bool:
        """``processEvents`` through ``WithExponentialBackoff``."""
        import aiohttp

        if self._session is None:
            self._session = aiohttp.ClientSession()
        body = event_list(events)
        headers = {"Content-Type": "application/json", "Accept": "application/json, */*"}
        if self.config.token:
            headers["Authorization"] = f"Bearer {self.config.token}"
        wait = self.initial_backoff
        error = ""
        for step in range(BACKOFF_STEPS):
            try:
                async with self._session.post(
                        self.config.server, data=body, headers=headers, ssl=self._ssl,
                        timeout=aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_S)) as resp:
                    answer = await resp.read()
                    if 200 <= resp.status <= 206:
                        return True
                    error = f"an error on the server ({answer[:200]!r}) has prevented the " \
                            f"request from succeeding (post of {resp.status})"
            except (TimeoutError, aiohttp.ClientError, OSError) as exc:
                error = str(exc) or type(exc).__name__
            if step < BACKOFF_STEPS - 1:
                await asyncio.sleep(wait * (1 + random.random() * BACKOFF_JITTER))
                wait *= BACKOFF_FACTOR
        plugin_error(PLUGIN_NAME, error, events)
        return False

    async def shutdown(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

"""Calling an admission or conversion webhook: where it is, how to trust it, one POST.

A webhook's ``clientConfig`` names either a ``url`` or a Service. The embedded cluster has no
service network, so a Service reference is resolved through its Endpoints to an address (as
the apiserver does with ``--enable-aggregator-routing``), while TLS still verifies the name
``<service>.<namespace>.svc`` against ``caBundle``. Failures are worded like Go's HTTP client,
since they end up in the messages users read (``failed calling webhook "x": ...``).
"""

from __future__ import annotations

import base64
import ssl
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import orjson

from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.storage import Reader


class CallError(Exception):
    """The webhook could not be called or answered unusably; ``str()`` is the reason."""


@dataclass(frozen=True)
class Target:
    """Where to POST: the URL, and the name TLS must verify when it is not the URL's host."""

    url: str
    server_hostname: str | None = None


def resolve(store: Reader, client_config: Obj) -> Target:
    """The address a ``clientConfig`` designates."""
    url = client_config.get("url")
    if url:
        return Target(str(url))
    service = client_config.get("service") or {}
    namespace, name = service.get("namespace", ""), service.get("name", "")
    port = int(service.get("port") or 443)
    path = service.get("path") or ""
    svc = store.get("/services", namespace, name)
    if svc is None:
        raise CallError(f'service "{name}" not found')
    spec_ports = (svc.get("spec") or {}).get("ports") or []
    service_port = next((p for p in spec_ports if p.get("port") == port), None)
    if service_port is None:
        raise CallError(f'service "{name}" does not expose port {port}')
    address = _endpoint(store, namespace, name, service_port)
    if address is None:
        raise CallError(f'no endpoints available for service "{name}"')
    host, target_port = address
    return Target(f"https://{host}:{target_port}{path}", f"{name}.{namespace}.svc")


def _endpoint(store: Reader, namespace: str, name: str,
              service_port: Obj) -> tuple[str, int] | None:
    endpoints = store.get("/endpoints", namespace, name)
    for subset in (endpoints or {}).get("subsets") or []:
        addresses = subset.get("addresses") or []
        ports = subset.get("ports") or []
        if not addresses or not ports:
            continue
        wanted = service_port.get("name")
        port = next((p for p in ports if p.get("name") == wanted), None) \
            if wanted else ports[0]
        if port is not None:
            return str(addresses[0].get("ip", "")), int(port.get("port", 0))
    return None


class WebhookClient:
    """Calls webhooks over one pooled HTTP session, trusting each ``caBundle`` through one
    TLS context (so that connections to a webhook are kept and reused between calls)."""

    def __init__(self, store: Reader) -> None:
        self.store = store  # Services and Endpoints, to find a webhook's address
        self._session: Any = None
        self._contexts: dict[str, ssl.SSLContext] = {}

    def __repr__(self) -> str:
        return f"WebhookClient(open={self._session is not None})"

    def _ssl_context(self, client_config: Obj) -> ssl.SSLContext:
        bundle = str(client_config.get("caBundle") or "")
        ctx = self._contexts.get(bundle)
        if ctx is None:
            if not bundle:
                ctx = ssl.create_default_context()
            else:
                try:
                    ctx = ssl.create_default_context(cadata=base64.b64decode(bundle).decode())
                except (ValueError, ssl.SSLError) as exc:
                    raise CallError(f"unable to load root certificates: {exc}") from None
            self._contexts[bundle] = ctx
        return ctx

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def post(self, client_config: Obj, body: Obj, timeout_s: int) -> Obj:
        """POST ``body`` to the webhook; its decoded JSON answer, or CallError."""
        import aiohttp  # only clusters that configure webhooks pay for the HTTP client

        target = resolve(self.store, client_config)
        ctx = self._ssl_context(client_config) if target.url.startswith("https:") else None
        separator = "&" if urlsplit(target.url).query else "?"
        url = f"{target.url}{separator}timeout={timeout_s}s"
        shown = f'Post "{url}"'
        if self._session is None:
            self._session = aiohttp.ClientSession()
        try:
            async with self._session.post(
                    url, data=orjson.dumps(body), ssl=ctx if ctx is not None else False,
                    server_hostname=target.server_hostname,
                    timeout=aiohttp.ClientTimeout(total=timeout_s),
                    headers={"Content-Type": "application/json",
                             "Accept": "application/json"}) as resp:
                raw = await resp.read()
                status = resp.status
        except TimeoutError:
            raise CallError(f"{shown}: context deadline exceeded") from None
        except aiohttp.ClientConnectorCertificateError as exc:
            raise CallError(f"{shown}: tls: failed to verify certificate: "
                            f"{exc.certificate_error}") from None
        except aiohttp.ClientConnectorError as exc:
            host = urlsplit(target.url).netloc
            reason = "connection refused" if isinstance(exc.os_error, ConnectionRefusedError) \
                else (exc.os_error.strerror or str(exc.os_error))
            raise CallError(f"{shown}: dial tcp {host}: connect: {reason}") from None
        except aiohttp.ClientError as exc:
            raise CallError(f"{shown}: {exc}") from None
        if not 200 <= status < 300:
            raise CallError(f"the server responded with the status code {status} but did "
                            "not return more information")
        try:
            answer = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise CallError(f"couldn't get version/kind; json parse error: {exc}") from None
        if not isinstance(answer, dict):
            raise CallError("couldn't get version/kind; json parse error: not an object")
        return answer

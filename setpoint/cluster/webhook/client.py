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

from setpoint.machinery import gojson
from setpoint.machinery.cabundle import ca_bundle_error
from setpoint.machinery.fielderrors import go_quote
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.storage import Reader


class CallError(Exception):
    """The webhook could not be called or answered unusably; ``str()`` is the reason."""


class ClientConfigError(CallError):
    """No client could be made from the ``clientConfig`` (client-go's rest.Config failed):
    the dispatcher words it "could not get REST client"."""


# the OpenSSL verify results Go's crypto/x509 reports as an UnknownAuthorityError
_UNKNOWN_AUTHORITY = {18, 19, 20, 21}


def _verification_failure(exc: ssl.SSLCertVerificationError) -> str:
    """A failed handshake's reason, in Go's words where it has them."""
    if exc.verify_code in _UNKNOWN_AUTHORITY:
        return "x509: certificate signed by unknown authority"
    return str(exc.verify_message or exc)


@dataclass(frozen=True)
class Target:
    """Where to POST: the URL, and the name TLS must verify when it is not the URL's host."""

    url: str
    server_hostname: str | None = None


def request_url(client_config: Obj) -> str:
    """The URL the request is made to, as Go's errors show it: a Service's is
    ``https://<name>.<namespace>.svc:<port><path>``, resolved only when dialling
    (k8s.io/apiserver pkg/util/webhook/client.go HookClient)."""
    url = client_config.get("url")
    if url:
        return str(url)
    service = client_config.get("service") or {}
    return (f"https://{service.get('name', '')}.{service.get('namespace', '')}.svc:"
            f"{int(service.get('port') or 443)}{service.get('path') or ''}")


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


# NewGenericServerResponse's fixed texts (None: the server's own message)
_GENERIC_MESSAGES: dict[int, str | None] = {
    409: "the server reported a conflict",
    404: "the server could not find the requested resource",
    400: "the server rejected our request for an unknown reason",
    401: "the server has asked for the client to provide credentials",
    403: None,
    415: None,
    405: "the server does not allow this method on the requested resource",
    422: "the server rejected our request due to an error in our request",
    503: "the server is currently unable to handle the request",
    504: "the server was unable to return a response in the time allotted, but may still be "
         "processing the request",
    429: "the server has received too many requests and has asked us to try again later",
}
_MAX_UNSTRUCTURED_RESPONSE_TEXT_BYTES = 2048


def unexpected_response(code: int, content_type: str, body: bytes) -> str:
    """What client-go makes of a failed answer: the Status it carries (its message), or
    NewGenericServerResponse's words for the code (k8s.io/client-go rest/request.go
    transformResponse and newUnstructuredResponseError; k8s.io/apimachinery
    pkg/api/errors/errors.go NewGenericServerResponse)."""
    try:
        decoded = orjson.loads(body)
    except orjson.JSONDecodeError:
        decoded = None
    if isinstance(decoded, dict) and decoded.get("kind") in (None, "", "Status") \
            and isinstance(decoded.get("status"), str) and decoded["status"]:
        return str(decoded.get("message") or "")
    media = content_type.split(";", 1)[0].strip().lower()
    server_message = "unknown"
    if not content_type or media.startswith("text/"):
        text = body[:_MAX_UNSTRUCTURED_RESPONSE_TEXT_BYTES].decode("utf-8", "replace")
        server_message = text.strip()
    if code == 406:
        return server_message if server_message not in ("", "unknown") else \
            "the server was unable to respond with a content type that the client supports"
    if code in _GENERIC_MESSAGES:
        return _GENERIC_MESSAGES[code] or server_message
    if code >= 500:
        return (f"an error on the server ({go_quote(server_message)}) has prevented the "
                "request from succeeding")
    return f"the server responded with the status code {code} but did not return more " \
           "information"


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
                pem = base64.b64decode(bundle)
                try:
                    ctx = ssl.create_default_context(cadata=pem.decode())
                except (ValueError, ssl.SSLError):
                    raise ClientConfigError(ca_bundle_error(pem) or "unable to load root "
                                            "certificates") from None
            self._contexts[bundle] = ctx
        return ctx

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def post(self, client_config: Obj, body: Obj, timeout_s: int) -> Obj:
        """POST ``body`` to the webhook; its decoded JSON answer, or CallError."""
        import aiohttp  # only clusters that configure webhooks pay for the HTTP client

        ctx = self._ssl_context(client_config) \
            if request_url(client_config).startswith("https:") else None
        shown_url = request_url(client_config)
        separator = "&" if urlsplit(shown_url).query else "?"
        shown = f'Post "{shown_url}{separator}timeout={timeout_s}s"'
        try:
            target = resolve(self.store, client_config)
        except CallError as exc:  # the Service's resolver fails the dial
            raise CallError(f"{shown}: {exc}") from None
        url = f"{target.url}{separator}timeout={timeout_s}s"
        if self._session is None:
            self._session = aiohttp.ClientSession()
        try:
            async with self._session.post(
                    url, data=gojson.dumps(body), ssl=ctx if ctx is not None else False,
                    server_hostname=target.server_hostname,
                    timeout=aiohttp.ClientTimeout(total=timeout_s),
                    headers={"Content-Type": "application/json",
                             "Accept": "application/json"}) as resp:
                raw = await resp.read()
                status = resp.status
                content_type = resp.headers.get("Content-Type", "")
        except TimeoutError:
            raise CallError(f"{shown}: context deadline exceeded") from None
        except aiohttp.ClientConnectorCertificateError as exc:
            failure = exc.certificate_error
            reason = _verification_failure(failure) \
                if isinstance(failure, ssl.SSLCertVerificationError) else str(failure)
            raise CallError(f"{shown}: tls: failed to verify certificate: {reason}") from None
        except aiohttp.ClientConnectorError as exc:
            host = urlsplit(target.url).netloc
            reason = "connection refused" if isinstance(exc.os_error, ConnectionRefusedError) \
                else (exc.os_error.strerror or str(exc.os_error))
            raise CallError(f"{shown}: dial tcp {host}: connect: {reason}") from None
        except aiohttp.ClientError as exc:
            raise CallError(f"{shown}: {exc}") from None
        if not 200 <= status <= 206:  # client-go: anything past 206 Partial Content failed
            raise CallError(unexpected_response(status, content_type, raw))
        try:
            answer = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise CallError(f"couldn't get version/kind; json parse error: {exc}") from None
        if not isinstance(answer, dict):
            raise CallError("couldn't get version/kind; json parse error: not an object")
        return answer

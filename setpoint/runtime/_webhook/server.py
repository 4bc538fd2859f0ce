"""``WebhookServer``: the HTTPS server the API server calls for admission and conversion.

    server = WebhookServer([hooks, conversion], port=0, generate_certs=True)
    await server.start()        # server.url, server.ca_pem for the webhook configurations
    ...
    await server.stop()

As controller-runtime's ``webhook.Server``: TLS from ``tls.crt``/``tls.key`` in the
certificate directory (reloaded when rotated), one path per webhook, POST only, request
bodies up to 7 MiB, and the ``controller_runtime_webhook_*`` metrics per path. Run by a
:class:`~setpoint.runtime._manager.Manager` it starts before the controllers, serves on every
replica whether or not it leads, and stops last.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import orjson
from aiohttp import web

from setpoint.runtime._listen import ListenError
from setpoint.runtime._logs import format_fields
from setpoint.runtime._metrics import Metrics
from setpoint.runtime._retries import error_text
from setpoint.runtime._webhook.certs import CertificateSource
from setpoint.runtime._webhook.endpoint import Endpoint

if TYPE_CHECKING:
    from setpoint.client import Client

__all__ = ["MAX_REQUEST_SIZE", "ListenError", "WebhookServer"]

log = logging.getLogger("setpoint.runtime._webhook")

# controller-runtime's limit: the API server's 3 MiB object limit, twice (object and
# oldObject), plus the review around them
MAX_REQUEST_SIZE = 7 * 1024 * 1024
_WILDCARD_HOSTS = ("", "0.0.0.0", "::")


class WebhookServer:
    """Serves the endpoints of admission webhooks and conversions over HTTPS.

    ``hooks`` are objects with ``endpoints(client)`` (``Webhook``, ``Conversion``); more can
    be registered before or after :meth:`start`. ``port`` 0 takes a free port. Without
    ``tls.crt``/``tls.key`` in ``cert_dir`` the server refuses to start unless
    ``generate_certs``, which makes a self-signed CA and certificate for ``hosts``
    (default: 127.0.0.1, localhost and ``host``). ``client`` is handed to the handlers'
    context; ``metrics`` is where requests are counted (the manager's, or a new one).
    """

    def __init__(self, hooks: Sequence[Any] = (), *, host: str = "127.0.0.1",
                 port: int = 9443, cert_dir: str | os.PathLike[str] | None = None,
                 cert_name: str = "tls.crt", key_name: str = "tls.key",
                 generate_certs: bool = False, hosts: Sequence[str] | None = None,
                 client: Client | None = None, metrics: Metrics | None = None,
                 reload_interval: float = 10.0) -> None:
        self.host = host
        self.requested_port = port
        self.client = client
        self.metrics = metrics or Metrics()
        if hosts is None:
            hosts = ["127.0.0.1", "localhost"]
            if host not in _WILDCARD_HOSTS and host not in hosts:
                hosts.append(host)
        self.certs = CertificateSource(cert_dir, cert_name=cert_name, key_name=key_name,
                                       generate=generate_certs, hosts=hosts)
        self.reload_interval = reload_interval
        self.port: int | None = None
        self._endpoints: dict[str, Endpoint] = {}
        self._runner: web.AppRunner | None = None
        self._reloader: asyncio.Task[None] | None = None
        for hook in hooks:
            self.register(hook)

    def __repr__(self) -> str:
        return f"WebhookServer(port={self.port}, paths={self.paths})"

    # -- wiring ----------------------------------------------------------------------------

    def register(self, hook: Any) -> None:
        """Serve the endpoints of ``hook`` (anything with ``endpoints(client)``)."""
        for endpoint in hook.endpoints(self.client):
            self.add_endpoint(endpoint)

    def add_endpoint(self, endpoint: Endpoint) -> None:
        """Serve one endpoint; a path can be served once."""
        if endpoint.path in self._endpoints:
            raise ValueError(f"a webhook is already served at {endpoint.path!r}")
        self._endpoints[endpoint.path] = endpoint

    @property
    def paths(self) -> list[str]:
        return sorted(self._endpoints)

    @property
    def url(self) -> str:
        """``https://host:port`` of the running server (a loopback address when it listens
        on every interface)."""
        if self.port is None:
            raise RuntimeError("the webhook server is not started")
        host = "127.0.0.1" if self.host in _WILDCARD_HOSTS else self.host
        if ":" in host:
            host = f"[{host}]"
        return f"https://{host}:{self.port}"

    @property
    def ca_pem(self) -> bytes | None:
        """The CA that signed the serving certificate, when known (generated, or ``ca.crt``
        in the certificate directory): a webhook configuration's ``caBundle``."""
        return self.certs.ca_pem

    @property
    def serving(self) -> bool:
        return self._runner is not None and self.port is not None

    def check(self) -> str | None:
        """A readiness check: None while the server listens, else why not."""
        return None if self.serving else "webhook server is not serving"

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> int:
        """Load the certificate, listen, and return the port."""
        if self._runner is not None:
            raise RuntimeError("the webhook server is already started")
        context = self.certs.load()
        app = web.Application(client_max_size=MAX_REQUEST_SIZE)
        # one catch-all route, so that webhooks registered after start are served too
        app.router.add_post("/{path:.*}", self._dispatch)
        runner = web.AppRunner(app, access_log=None, handle_signals=False,
                               shutdown_timeout=1.0)
        await runner.setup()
        site = web.TCPSite(runner, self.host or None, self.requested_port,
                           ssl_context=context)
        try:
            await site.start()
        except OSError as exc:
            await runner.cleanup()
            raise ListenError(self.host, self.requested_port, exc) from exc
        except BaseException:
            await runner.cleanup()
            raise
        sockets = getattr(site._server, "sockets", None) or []
        self.port = sockets[0].getsockname()[1] if sockets else self.requested_port
        self._runner = runner
        if not self.certs.generated:
            self._reloader = asyncio.create_task(self._reload_certs(),
                                                 name="webhook-cert-reloader")
        log.info("webhook_server_started port=%s paths=%s", self.port, ",".join(self.paths))
        return self.port

    async def stop(self) -> None:
        """Stop listening; requests in flight get a second to finish."""
        if self._reloader is not None:
            self._reloader.cancel()
            await asyncio.gather(self._reloader, return_exceptions=True)
            self._reloader = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
            log.info("webhook_server_stopped port=%s", self.port)
        self.port = None

    async def _reload_certs(self) -> None:
        while True:
            await asyncio.sleep(self.reload_interval)
            try:
                if self.certs.reload_if_changed():
                    log.info("webhook_certificate_reloaded dir=%s", self.certs.cert_dir)
            except (OSError, ValueError) as exc:
                # a rotation caught half-written: keep serving the old one, try again later
                log.warning("webhook_certificate_reload_failed %s",
                            format_fields({"error": error_text(exc)}))

    # -- serving ---------------------------------------------------------------------------

    async def _dispatch(self, request: web.Request) -> web.Response:
        path = request.path
        endpoint = self._endpoints.get(path)
        if endpoint is None:
            return web.Response(status=404, text="404 page not found\n")
        in_flight = self.metrics.webhook_in_flight.labels(path)
        in_flight.inc()
        started = time.perf_counter()
        status, payload = 500, {}
        try:
            try:
                body = await request.read()
            except web.HTTPRequestEntityTooLarge:
                status, payload = 413, _status(
                    413, "RequestEntityTooLarge",
                    f"request entity is too large; limit is {MAX_REQUEST_SIZE} bytes")
            else:
                status, payload = await endpoint.handle(body, request.content_type)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.error("webhook_request_failed path=%s %s", path,
                      format_fields({"error": error_text(exc)}), exc_info=exc)
            status, payload = 500, _status(500, "InternalError",
                                           f"webhook failed: {error_text(exc)}")
        finally:
            in_flight.dec()
            self.metrics.webhook_latency.labels(path).observe(time.perf_counter() - started)
        self.metrics.webhook_requests.labels(path, str(status)).inc()
        return web.Response(status=status, body=orjson.dumps(payload),
                            content_type="application/json")


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}


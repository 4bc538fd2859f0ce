"""``MetricsServer``: the HTTPS server behind the APIService v1beta1.metrics.k8s.io.

As metrics-server's generic API server (pkg/server/server.go): TLS on its own port (here an
ephemeral one on 127.0.0.1), every request authenticated
(:mod:`~setpoint.workloads.metricsserver.authentication`) and authorized
(:mod:`~setpoint.workloads.metricsserver.authorization`) before
:mod:`~setpoint.workloads.metricsserver.api` answers it; a refused credential is a 401
Status, a refused request a 403 Status. Its HTTP/1.1 layer is
:mod:`~setpoint.workloads.metricsserver.http1` (asyncio and httptools: the workloads'
process does not load aiohttp, and the front proxy's client certificate is read from each
connection).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from setpoint.client import ApiError, ClientError
from setpoint.machinery.errors import StatusError, unauthorized
from setpoint.runtime._logs import format_fields
from setpoint.workloads.metricsserver.api import (
    MetricsAPI,
    as_table,
    route,
    wants_table,
)
from setpoint.workloads.metricsserver.authentication import (
    AUTHENTICATION_CONFIGMAP,
    CONFIGMAP,
    AuthenticationFailed,
    RequestAuthenticator,
)
from setpoint.workloads.metricsserver.authorization import (
    DelegatingAuthorizer,
    forbidden_message,
)
from setpoint.workloads.metricsserver.certs import server_context, serving_certificates
from setpoint.workloads.metricsserver.http1 import HTTPServer, Request, Response

if TYPE_CHECKING:
    from setpoint.client import Client

__all__ = ["NAMESPACE", "SERVICE", "MetricsServer"]

log = logging.getLogger("setpoint.workloads.metricsserver")

SERVICE, NAMESPACE = "metrics-server", "kube-system"
CONFIGURATION_RECHECK_S = 60.0  # dynamiccertificates.FileRefreshDuration
CONFIGURATION_RETRY_S = 1.0  # after a failed read or watch


_status = Response.status_error
NOT_FOUND = Response.text(404, "404 page not found\n")
METHOD_NOT_ALLOWED = Response.text(405, "405: Method Not Allowed")


class MetricsServer:
    """Serves ``api`` over HTTPS on ``host`` (port 0: a free one), authenticating with the
    API server's published CAs and authorizing through ``client``."""

    def __init__(self, api: MetricsAPI, client: Client, *, host: str = "127.0.0.1",
                 port: int = 0) -> None:
        self.api = api
        self.client = client
        self.host = host
        self.requested_port = port
        self.certificates = serving_certificates(SERVICE, NAMESPACE)
        self.context = server_context(self.certificates)
        self.authenticator = RequestAuthenticator(self.context, client)
        self.authorizer = DelegatingAuthorizer(client)
        self.port: int | None = None
        self.configured = False
        """Whether the authentication ConfigMap was found."""
        self._http: HTTPServer | None = None

    def __repr__(self) -> str:
        return f"MetricsServer(port={self.port})"

    @property
    def ca_pem(self) -> bytes:
        """The CA of the serving certificate: the APIService's caBundle."""
        return self.certificates.ca_pem

    async def start(self) -> int:
        if self._http is not None:
            raise RuntimeError("the metrics server is already started")
        self.configured = await self.authenticator.refresh(self.client)
        if not self.configured:
            log.warning("metrics_server_no_authentication_configmap (requests are "
                        "anonymous until kube-system/extension-apiserver-authentication "
                        "exists)")
        http = HTTPServer(self._dispatch, self.context)
        self.port = await http.start(self.host, self.requested_port)
        self._http = http
        log.info("metrics_server_started port=%s", self.port)
        return self.port

    async def stop(self) -> None:
        if self._http is not None:
            http, self._http = self._http, None
            await http.stop()
        self.port = None

    async def watch_configuration(self) -> None:
        """Follow the authentication ConfigMap: read it, then watch it, and read it again
        each minute (k8s.io/apiserver pkg/server/dynamiccertificates
        configmap_cafile_content.go and headerrequest's ``RequestHeaderAuthRequestController``:
        an informer on that one ConfigMap, and a recheck every ``FileRefreshDuration``).
        The API server may publish or rotate it after the workloads start; a deleted one
        leaves the last configuration in place, as their ``loadCABundle`` does."""
        namespace, name = AUTHENTICATION_CONFIGMAP
        while True:
            try:
                found = await self.authenticator.read(self.client)
                self.configured = self.configured or found is not None
                # Watched from now, not from the object's own resourceVersion: that revision
                # is compacted once the store moves on (every 5 minutes in kube-apiserver),
                # and a watch from it is 410 Gone every time. The watch begins with the
                # object as it is, so nothing written since the read is missed. The watch
                # ends each minute: the recheck's read comes next.
                async with self.client.watch(
                        CONFIGMAP, namespace=namespace, name=name,
                        timeout_seconds=int(CONFIGURATION_RECHECK_S)) as events:
                    async for event_type, obj in events:
                        if event_type in ("ADDED", "MODIFIED") and isinstance(obj, dict):
                            self.authenticator.configure(dict(obj.get("data") or {}))
                            self.configured = True
            except (ApiError, ClientError) as exc:  # GoneError included: read it again
                log.warning("metrics_server_configmap_watch_failed %s",
                            format_fields({"error": str(exc)}))
                await asyncio.sleep(CONFIGURATION_RETRY_S)

    async def _dispatch(self, request: Request) -> Response:
        routed = route(request.method, request.path, request.query)
        if routed is None:
            return NOT_FOUND
        try:
            user = await self.authenticator.authenticate(
                request.peer_certificate, request.headers,
                lambda name: request.headers.getall(name, []))
        except AuthenticationFailed as exc:
            log.info("metrics_server_unauthorized %s", format_fields({"error": str(exc)}))
            return _status(unauthorized())
        except (ApiError, ClientError) as exc:  # the TokenReview could not be asked
            log.warning("metrics_server_token_review_failed %s",
                        format_fields({"error": str(exc)}))
            return _status(unauthorized())
        attrs = routed.attributes
        try:
            decision = await self.authorizer.authorize(user, attrs)
        except (ApiError, ClientError) as exc:
            # the webhook authorizer's error: the request fails, as WithAuthorization answers
            return _status(StatusError(500, "InternalError",
                                       f"Internal error occurred: {exc}"))
        if not decision.allowed:
            resource = attrs.resource if attrs.resource_request else ""
            return _status(StatusError(
                403, "Forbidden", forbidden_message(user, attrs, decision.reason),
                name=attrs.name, group=attrs.group if resource else "", kind=resource))
        if routed.kind == "health":
            if request.method not in ("GET", "HEAD"):
                return METHOD_NOT_ALLOWED
            return Response.text(200, "ok")
        if request.method not in ("GET", "HEAD"):
            # the storage has only get and list: go-restful has no route for the method
            return METHOD_NOT_ALLOWED
        try:
            body = self.api.answer(routed, request.query)
            table = wants_table(request.headers.get("Accept", ""))
            if table is not None and attrs.resource_request:
                body = as_table(body, table, request.query.get("includeObject", "Metadata"))
        except StatusError as err:
            return _status(err)
        return Response.json(200, body)

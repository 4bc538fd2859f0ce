"""A tiny extension API server for the aggregator tests: HTTPS on 127.0.0.1, an ephemeral
port, trusting only clients whose certificate the front-proxy CA signed (the CA and the
allowed names read from ``kube-system/extension-apiserver-authentication``, as
k8s.io/apiserver's requestheader authenticator does), and serving
``wardle.example.com/v1alpha1`` flunders from memory."""

from __future__ import annotations

import asyncio
import base64
import ssl
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from aiohttp import web

from setpoint.machinery.certificates import issue

GROUP, VERSION = "wardle.example.com", "v1alpha1"
GV = f"{GROUP}/{VERSION}"
METRICS_GV = "metrics.k8s.io/v1beta1"
AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


@dataclass
class Seen:
    """One request as the backend saw it."""

    method: str
    path: str
    query: dict[str, str]
    headers: list[tuple[str, str]]
    client_cn: str

    def values(self, name: str) -> list[str]:
        return [v for n, v in self.headers if n.lower() == name.lower()]


def _flunder(name: str, rv: str = "1") -> dict[str, Any]:
    return {"apiVersion": GV, "kind": "Flunder",
            "metadata": {"name": name, "namespace": "default", "resourceVersion": rv,
                         "creationTimestamp": "2024-12-11T00:00:00Z"}}


@dataclass
class Backend:
    """The server; ``seen`` records every request, :meth:`publish` feeds open watches."""

    workdir: Path
    authentication: dict[str, str]  # the ConfigMap's data
    service: str = "wardle-api.wardle.svc"
    seen: list[Seen] = field(default_factory=list)
    watchers: list[asyncio.Queue[dict[str, Any]]] = field(default_factory=list)
    aggregated: bool = False  # serve apidiscovery v2 at /apis (else only legacy discovery)
    port: int = 0
    stopped: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when the backend stops: what it never answers waits for it."""

    def __post_init__(self) -> None:
        certs = issue([self.service], ca_name="wardle-ca")
        self.ca_bundle = base64.b64encode(certs.ca_pem).decode()
        (self.workdir / "backend.crt").write_bytes(certs.cert_pem)
        (self.workdir / "backend.key").write_bytes(certs.key_pem)
        self.workdir.joinpath("backend.key").chmod(0o600)
        self._runner: web.AppRunner | None = None

    def ssl_context(self) -> ssl.SSLContext:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(self.workdir / "backend.crt", self.workdir / "backend.key")
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.load_verify_locations(cadata=self.authentication["requestheader-client-ca-file"])
        return ctx

    async def start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        # a watch left open waits for its next event: stopping does not wait for it
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=self.ssl_context())
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    def requests_to(self, path: str) -> list[Seen]:
        """The requests for ``path`` (the aggregator's own checks come and go beside)."""
        return [seen for seen in self.seen if seen.path == path]

    def watches(self) -> int:
        return sum(1 for seen in self.seen if seen.query.get("watch") in ("true", "1"))

    def publish(self, event: dict[str, Any]) -> None:
        """Send ``event`` to every open watch (one a client left ends at its next write)."""
        for queue in self.watchers:
            queue.put_nowait(event)

    async def stop(self) -> None:
        self.stopped.set()
        if self._runner is not None:
            await self._runner.cleanup()

    def _client_cn(self, request: web.Request) -> str:
        cert = request.transport.get_extra_info("peercert") if request.transport else None
        for rdn in (cert or {}).get("subject", ()):
            for key, value in rdn:
                if key == "commonName":
                    return str(value)
        return ""

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        cn = self._client_cn(request)
        allowed = orjson.loads(self.authentication["requestheader-allowed-names"])
        if cn not in allowed:  # requestheader: only the front proxy may name a user
            return web.json_response({"kind": "Status", "code": 401}, status=401)
        self.seen.append(Seen(request.method, request.path, dict(request.query),
                              list(request.headers.items()), cn))
        path = request.path
        if path == "/apis" and self.aggregated and "apidiscovery" in request.headers.get(
                "Accept", ""):
            return web.Response(body=orjson.dumps(_aggregated()), content_type=None,
                                headers={"Content-Type": AGGREGATED})
        if path == f"/apis/{GV}":
            return web.json_response(_resource_list())
        if path == "/openapi/v3":
            return web.json_response({"paths": {f"apis/{GV}": {
                "serverRelativeURL": f"/openapi/v3/apis/{GV}?hash={OPENAPI_HASH}"}}})
        if path == "/openapi/v2":
            return web.json_response(_openapi_v2())
        if path == f"/openapi/v3/apis/{GV}":
            return web.json_response(_openapi_v3(), headers={"ETag": f'"{OPENAPI_HASH}"'})
        if path == f"/apis/{METRICS_GV}":
            return web.json_response(_metrics_resource_list())
        if path == f"/apis/{METRICS_GV}/namespaces/default/pods":
            return web.json_response(_pod_metrics())
        if path == f"/apis/{GV}/namespaces/default/flunders":
            if request.query.get("watch") in ("true", "1"):
                return await self._watch(request)
            return web.json_response({"apiVersion": GV, "kind": "FlunderList",
                                      "metadata": {"resourceVersion": "1"},
                                      "items": [_flunder("one")]})
        if path == f"/apis/{GV}/namespaces/default/flunders/one/exec":
            return await self._echo(request)
        if path == f"/apis/{GV}/namespaces/default/flunders/slow":
            await self.stopped.wait()  # never answered: the aggregator's timeout ends it
        if path == f"/apis/{GV}/namespaces/default/flunders/one":
            return web.json_response(_flunder("one"))
        return web.json_response({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                  "reason": "NotFound", "code": 404}, status=404)

    async def _echo(self, request: web.Request) -> web.StreamResponse:
        """A WebSocket (the ``v5.channel.k8s.io`` subprotocol exec speaks) that sends back
        each message it gets."""
        ws = web.WebSocketResponse(protocols=("v5.channel.k8s.io",))
        await ws.prepare(request)
        async for message in ws:
            await ws.send_bytes(b"echo:" + message.data)
        return ws

    async def _watch(self, request: web.Request) -> web.StreamResponse:
        events: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.watchers.append(events)  # before any await: a recorded watch is listening
        try:
            resp = web.StreamResponse(headers={"Content-Type": "application/json"})
            resp.enable_chunked_encoding()
            await resp.prepare(request)
            await resp.write(orjson.dumps({"type": "ADDED", "object": _flunder("one")}) + b"\n")
            while True:
                await resp.write(orjson.dumps(await events.get()) + b"\n")
        finally:
            self.watchers.remove(events)


OPENAPI_HASH = "0123456789ABCDEF"
FLUNDER_DESCRIPTION = "Flunder is the one kind the wardle test backend serves."


def _openapi_v3() -> dict[str, Any]:
    """The backend's OpenAPI v3 document of its group-version (what kubectl explain reads)."""
    string = {"type": "string"}
    gvk = {"group": GROUP, "version": VERSION, "kind": "Flunder"}
    ref = {"$ref": "#/components/schemas/com.example.wardle.v1alpha1.Flunder"}
    get = {"get": {"operationId": "readWardleV1alpha1NamespacedFlunder",
                   "x-kubernetes-action": "get", "x-kubernetes-group-version-kind": gvk,
                   "responses": {"200": {"description": "OK", "content": {
                       "application/json": {"schema": ref}}}}}}
    path = f"/apis/{GV}/namespaces/{{namespace}}/flunders/{{name}}"
    return {"openapi": "3.0.0", "info": {"title": "wardle", "version": VERSION},
            "paths": {path: get},
            "components": {"schemas": {"com.example.wardle.v1alpha1.Flunder": {
                "type": "object", "description": FLUNDER_DESCRIPTION,
                "properties": {
                    "apiVersion": string, "kind": string, "metadata": {"type": "object"},
                    "spec": {"type": "object", "description": "What the flunder wants.",
                             "properties": {"reference": {
                                 "type": "string",
                                 "description": "The flunder this one refers to."}}}},
                "x-kubernetes-group-version-kind": [
                    {"group": GROUP, "version": VERSION, "kind": "Flunder"}]}}}}


OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
BACKEND_OBJECT_META = "The wardle server's own, older ObjectMeta."


def _openapi_v2() -> dict[str, Any]:
    """The backend's Swagger 2.0 document: its group-version's path, one outside it, a
    definition named as the server's ObjectMeta with other content, one nothing uses."""
    flunder = {"$ref": "#/definitions/com.example.wardle.v1alpha1.Flunder"}
    get = {"operationId": "readWardleV1alpha1NamespacedFlunder",
           "parameters": [{"$ref": "#/parameters/name-flunder"}],
           "responses": {"200": {"description": "OK", "schema": flunder}}}
    return {
        "swagger": "2.0", "info": {"title": "wardle", "version": VERSION},
        "paths": {f"/apis/{GV}/namespaces/{{namespace}}/flunders/{{name}}": {"get": get},
                  f"/apis/{GROUP}/v1beta1/things": {"get": {
                      "responses": {"200": {"description": "OK", "schema": {
                          "$ref": "#/definitions/com.example.wardle.v1beta1.Thing"}}}}}},
        "parameters": {"name-flunder": {"name": "name", "in": "path", "required": True,
                                        "type": "string", "uniqueItems": True}},
        "definitions": {
            "com.example.wardle.v1alpha1.Flunder": {
                "type": "object", "description": FLUNDER_DESCRIPTION,
                "properties": {"metadata": {"$ref": f"#/definitions/{OBJECT_META}"}}},
            OBJECT_META: {"type": "object", "description": BACKEND_OBJECT_META},
            "com.example.wardle.v1alpha1.Unused": {"type": "object"},
            "com.example.wardle.v1beta1.Thing": {"type": "object"}}}


def _resource_list() -> dict[str, Any]:
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": GV, "resources": [
        {"name": "flunders", "singularName": "flunder", "namespaced": True, "kind": "Flunder",
         "verbs": ["get", "list", "watch"], "shortNames": ["fl"]},
        {"name": "flunders/status", "singularName": "", "namespaced": True,
         "kind": "Flunder", "verbs": ["get"]}]}


def _aggregated() -> dict[str, Any]:
    return {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2",
            "metadata": {}, "items": [{"metadata": {"name": GROUP}, "versions": [{
                "version": VERSION, "freshness": "Current", "resources": [{
                    "resource": "fischers", "singularResource": "fischer",
                    "responseKind": {"group": "", "version": "", "kind": "Fischer"},
                    "scope": "Cluster", "verbs": ["get", "list"]}]}]}]}


def _metrics_resource_list() -> dict[str, Any]:
    """metrics.k8s.io/v1beta1 as metrics-server lists it."""
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": METRICS_GV,
            "resources": [
                {"name": "nodes", "singularName": "", "namespaced": False,
                 "kind": "NodeMetrics", "verbs": ["get", "list"]},
                {"name": "pods", "singularName": "", "namespaced": True,
                 "kind": "PodMetrics", "verbs": ["get", "list"]}]}


def _pod_metrics() -> dict[str, Any]:
    return {"kind": "PodMetricsList", "apiVersion": METRICS_GV, "metadata": {}, "items": [{
        "metadata": {"name": "web", "namespace": "default",
                     "creationTimestamp": "2024-12-11T00:00:00Z"},
        "timestamp": "2024-12-11T00:00:00Z", "window": "10s",
        "containers": [{"name": "web", "usage": {"cpu": "25m", "memory": "64Mi"}}]}]}

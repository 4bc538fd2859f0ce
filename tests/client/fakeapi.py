"""A small Kubernetes-like API server for the client tests (aiohttp.web, in-process).

It serves canned discovery, an in-memory store for ConfigMaps, Namespaces and a custom
``widgets.example.com`` resource (with status and scale subresources), lists with
pagination and label selectors, watch streams with bookmarks and 410 ERROR events, and
fault injection (error answers with Retry-After, dropped connections). Every request is
recorded so tests can check what the client sent.
"""

from __future__ import annotations

import asyncio
import copy
import ssl
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import jsonpatch
import orjson
from aiohttp import web

GROUP = "example.com"

CORE_RESOURCES = {
    "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "v1",
    "resources": [
        {"name": "configmaps", "singularName": "configmap", "namespaced": True,
         "kind": "ConfigMap", "shortNames": ["cm"],
         "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update",
                   "watch"]},
        {"name": "namespaces", "singularName": "namespace", "namespaced": False,
         "kind": "Namespace", "shortNames": ["ns"],
         "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"]},
        {"name": "namespaces/status", "singularName": "", "namespaced": False,
         "kind": "Namespace", "verbs": ["get", "patch", "update"]},
    ],
}

WIDGET_RESOURCES = {
    "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{GROUP}/v1",
    "resources": [
        {"name": "widgets", "singularName": "widget", "namespaced": True, "kind": "Widget",
         "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update",
                   "watch"]},
        {"name": "widgets/status", "singularName": "", "namespaced": True, "kind": "Widget",
         "verbs": ["get", "patch", "update"]},
        {"name": "widgets/scale", "singularName": "", "namespaced": True, "group": "autoscaling",
         "version": "v1", "kind": "Scale", "verbs": ["get", "patch", "update"]},
    ],
}

KINDS = {"configmaps": ("v1", "ConfigMap", True), "namespaces": ("v1", "Namespace", False),
         "widgets": (f"{GROUP}/v1", "Widget", True)}


def status(code: int, reason: str, message: str, **details: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {},
                            "status": "Failure", "message": message, "reason": reason,
                            "code": code}
    if details:
        body["details"] = details
    return body


def json_response(body: Any, code: int = 200, headers: dict[str, str] | None = None
                  ) -> web.Response:
    return web.Response(body=orjson.dumps(body), status=code, headers=headers,
                        content_type="application/json")


@dataclass
class Fault:
    """Answer the next ``times`` matching requests with ``code`` (or drop the connection)."""

    method: str
    path: str
    code: int = 500
    times: int = 1
    retry_after: int | None = None
    drop: bool = False


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any
    user: str | None


@dataclass
class FakeApi:
    tokens: set[str] = field(default_factory=lambda: {"s3cret"})
    client_cns: set[str] = field(default_factory=lambda: {"alice"})
    widgets_installed: bool = True
    objects: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    history: list[tuple[int, str, str, dict[str, Any]]] = field(default_factory=list)
    rv: int = 100
    compacted: int = 0
    expire_continue: bool = False
    faults: list[Fault] = field(default_factory=list)
    requests: list[Recorded] = field(default_factory=list)
    watch_drop_after: int | None = None
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    watch_started: asyncio.Event = field(default_factory=asyncio.Event)

    # -- server plumbing -------------------------------------------------------------------

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self.handle)
        return app

    @asynccontextmanager
    async def serve(self, ssl_context: ssl.SSLContext | None) -> AsyncIterator[str]:
        runner = web.AppRunner(self.app(), handle_signals=False, access_log=None,
                               shutdown_timeout=0.1)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ssl_context)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        scheme = "https" if ssl_context else "http"
        try:
            yield f"{scheme}://127.0.0.1:{port}"
        finally:
            await runner.cleanup()

    def requests_to(self, method: str, path: str) -> list[Recorded]:
        return [r for r in self.requests if r.method == method and r.path == path]

    # -- store -----------------------------------------------------------------------------

    def put(self, resource: str, obj: dict[str, Any], event: str = "ADDED") -> dict[str, Any]:
        self.rv += 1
        api_version, kind, _ = KINDS[resource]
        obj = copy.deepcopy(obj)
        obj.update(apiVersion=api_version, kind=kind)
        meta = obj.setdefault("metadata", {})
        meta["resourceVersion"] = str(self.rv)
        meta.setdefault("uid", str(uuid.uuid4()))
        key = (resource, meta.get("namespace", ""), meta["name"])
        if event == "DELETED":
            self.objects.pop(key, None)
        else:
            self.objects[key] = obj
        self.history.append((self.rv, resource, event, copy.deepcopy(obj)))
        self.changed.set()
        self.changed = asyncio.Event()
        return obj

    # -- request handling ------------------------------------------------------------------

    async def handle(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        body = orjson.loads(raw) if raw else None
        user = self._authenticate(request)
        self.requests.append(Recorded(request.method, request.path, dict(request.query),
                                      dict(request.headers), copy.deepcopy(body), user))
        if user is None:
            return json_response(status(401, "Unauthorized", "Unauthorized"), 401)
        for fault in self.faults:
            if fault.times > 0 and fault.method == request.method \
                    and request.path == fault.path:
                fault.times -= 1
                if fault.drop:
                    assert request.transport is not None
                    request.transport.abort()
                    raise asyncio.CancelledError  # nothing more is written on this socket
                headers = {"Retry-After": str(fault.retry_after)} if fault.retry_after \
                    is not None else None
                reason = {429: "TooManyRequests", 503: "ServiceUnavailable", 422: "Invalid"}.get(
                    fault.code, "InternalError")
                return json_response(status(fault.code, reason, f"injected {fault.code}"),
                                     fault.code, headers)
        if request.path == "/api/v1":
            return json_response(CORE_RESOURCES)
        if request.path == f"/apis/{GROUP}/v1":
            if not self.widgets_installed:
                return json_response(status(404, "NotFound", "the server could not find the "
                                                             "requested resource"), 404)
            return json_response(WIDGET_RESOURCES)
        return await self._resource(request, body)

    def _authenticate(self, request: web.Request) -> str | None:
        header = request.headers.get("Authorization", "")
        if header.startswith("Bearer ") and header[7:] in self.tokens:
            return f"token:{header[7:]}"
        assert request.transport is not None
        peer = request.transport.get_extra_info("peercert")
        if peer:
            cn = next(v for rdn in peer["subject"] for k, v in rdn if k == "commonName")
            if cn in self.client_cns:
                return f"cert:{cn}"
        return None

    def _parse(self, path: str) -> tuple[str, str, str, str] | None:
        for prefix in ("/api/v1/", f"/apis/{GROUP}/v1/"):
            if path.startswith(prefix):
                segs = path[len(prefix):].split("/")
                break
        else:
            return None
        ns = ""
        if len(segs) >= 3 and segs[0] == "namespaces" and segs[2] in KINDS:
            ns, segs = segs[1], segs[2:]
        resource, name, sub = segs[0], *[*segs[1:3], "", ""][:2]
        if resource not in KINDS or (resource == "widgets" and not self.widgets_installed):
            return None
        return resource, ns, name, sub

    async def _resource(self, request: web.Request, body: Any) -> web.StreamResponse:
        parsed = self._parse(request.path)
        if parsed is None:
            return json_response(status(404, "NotFound", "the server could not find the "
                                                         "requested resource"), 404)
        resource, ns, name, sub = parsed
        q = request.query
        if request.method == "GET" and not name:
            if q.get("watch") in ("true", "1"):
                return await self._watch(request, resource, ns)
            return self._list(resource, ns, q)
        key = (resource, ns, name)
        current = self.objects.get(key)
        if request.method == "POST":
            name = body["metadata"].get("name") or body["metadata"]["generateName"] + "x1"
            body["metadata"].update(name=name, **({"namespace": ns} if ns else {}))
            if (resource, ns, name) in self.objects:
                return json_response(status(409, "AlreadyExists",
                                            f'{resource} "{name}" already exists',
                                            name=name, kind=resource), 409)
            return json_response(self.put(resource, body), 201)
        if request.method == "DELETE" and not name:
            gone = [o for (r, n, _), o in list(self.objects.items()) if r == resource and n == ns]
            for obj in gone:
                self.put(resource, obj, "DELETED")
            return json_response({"kind": f"{KINDS[resource][1]}List", "items": gone})
        if request.method == "PATCH":
            return self._patch(request, resource, ns, name, current, body, sub)
        if current is None:
            return json_response(status(404, "NotFound", f'{resource} "{name}" not found',
                                        name=name, kind=resource), 404)
        if request.method == "GET":
            return json_response(self._scale(current) if sub == "scale" else current)
        if request.method == "PUT":
            return self._update(resource, current, body, sub)
        if request.method == "DELETE":
            pre = (body or {}).get("preconditions") or {}
            meta = current["metadata"]
            for field_, value in pre.items():
                if meta.get(field_) != value:
                    return json_response(status(
                        409, "Conflict", f'Operation cannot be fulfilled on {resource} "{name}"'
                        f": Precondition failed: {field_}: {value}", name=name, kind=resource),
                        409)
            self.put(resource, current, "DELETED")
            return json_response({"kind": "Status", "apiVersion": "v1", "metadata": {},
                                  "status": "Success", "details": {"name": name}})
        return json_response(status(405, "MethodNotAllowed", "method not allowed"), 405)

    def _list(self, resource: str, ns: str, q: Any) -> web.Response:
        items = [o for (r, n, _), o in sorted(self.objects.items())
                 if r == resource and (not ns or n == ns) and _matches(o, q.get("labelSelector"))]
        meta: dict[str, Any] = {"resourceVersion": str(self.rv)}
        offset = 0
        if q.get("continue"):
            if self.expire_continue:
                return json_response(status(410, "Expired", "The provided continue parameter "
                                                            "is too old"), 410)
            offset = int(q["continue"])
        if q.get("limit"):
            limit = int(q["limit"])
            page = items[offset:offset + limit]
            if offset + limit < len(items):
                meta["continue"] = str(offset + limit)
                meta["remainingItemCount"] = len(items) - offset - limit
        else:
            page = items[offset:]
        stripped = [{k: v for k, v in o.items() if k not in ("apiVersion", "kind")} for o in page]
        return json_response({"kind": f"{KINDS[resource][1]}List", "apiVersion":
                              KINDS[resource][0], "metadata": meta, "items": stripped})

    def _update(self, resource: str, current: dict[str, Any], body: dict[str, Any], sub: str
                ) -> web.Response:
        name = current["metadata"]["name"]
        rv = body.get("metadata", {}).get("resourceVersion")
        if rv and rv != current["metadata"]["resourceVersion"]:
            return json_response(status(
                409, "Conflict", f'Operation cannot be fulfilled on {resource} "{name}": the '
                "object has been modified; please apply your changes to the latest version and "
                "try again", name=name, kind=resource), 409)
        new = copy.deepcopy(current)
        if sub == "status":
            new["status"] = body.get("status")
        elif sub == "scale":
            new.setdefault("spec", {})["replicas"] = body["spec"]["replicas"]
        else:
            new = {**body, "metadata": {**body["metadata"], "uid": current["metadata"]["uid"]}}
            if "status" in current:
                new["status"] = current["status"]
        stored = self.put(resource, new, "MODIFIED")
        return json_response(self._scale(stored) if sub == "scale" else stored)

    def _patch(self, request: web.Request, resource: str, ns: str, name: str,
               current: dict[str, Any] | None, body: Any, sub: str) -> web.Response:
        ctype = request.content_type
        if current is None:
            if ctype != "application/apply-patch+yaml":
                return json_response(status(404, "NotFound", f'{resource} "{name}" not found'),
                                     404)
            base: dict[str, Any] = {"metadata": {"name": name, **({"namespace": ns} if ns
                                                                   else {})}}
            return json_response(self.put(resource, _merge(base, body)), 201)
        target = self._scale(current) if sub == "scale" else current
        if ctype == "application/json-patch+json":
            patched = jsonpatch.apply_patch(target, body)
        else:
            patched = _merge(target, body)
        if sub == "scale":
            patched = {**current, "spec": {**current.get("spec", {}),
                                           "replicas": patched["spec"]["replicas"]}}
        elif sub == "status":
            patched = {**current, "status": patched.get("status")}
        stored = self.put(resource, patched, "MODIFIED")
        return json_response(self._scale(stored) if sub == "scale" else stored)

    @staticmethod
    def _scale(obj: dict[str, Any]) -> dict[str, Any]:
        meta = obj["metadata"]
        return {"kind": "Scale", "apiVersion": "autoscaling/v1",
                "metadata": {"name": meta["name"], "namespace": meta.get("namespace"),
                             "resourceVersion": meta["resourceVersion"]},
                "spec": {"replicas": obj.get("spec", {}).get("replicas", 0)},
                "status": {"replicas": obj.get("spec", {}).get("replicas", 0)}}

    async def _watch(self, request: web.Request, resource: str, ns: str) -> web.StreamResponse:
        q = request.query
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        await resp.prepare(request)
        self.watch_started.set()
        sent = 0

        async def send(kind: str, obj: dict[str, Any]) -> None:
            nonlocal sent
            if self.watch_drop_after is not None and sent >= self.watch_drop_after:
                assert request.transport is not None
                request.transport.abort()
                raise asyncio.CancelledError
            await resp.write(orjson.dumps({"type": kind, "object": obj}) + b"\n")
            sent += 1

        since = int(q["resourceVersion"]) if q.get("resourceVersion") else None
        if since is not None and since < self.compacted:
            await send("ERROR", status(410, "Expired", f"too old resource version: {since} "
                                                       f"({self.compacted})"))
            return resp
        if since is None:
            since = self.rv
            for (r, n, _), obj in sorted(self.objects.items()):
                if r == resource and (not ns or n == ns):
                    await send("ADDED", obj)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + float(q.get("timeoutSeconds", "5"))
        while True:
            changed, upto = self.changed, self.rv  # taken before scanning: nothing slips by
            for rv, r, kind, obj in list(self.history):
                if since < rv <= upto and r == resource and (not ns or obj["metadata"].get(
                        "namespace") == ns) and _matches(obj, q.get("labelSelector")):
                    await send(kind, obj)
            since = upto
            if q.get("allowWatchBookmarks") == "true":
                await send("BOOKMARK", {"kind": KINDS[resource][1], "apiVersion":
                                        KINDS[resource][0],
                                        "metadata": {"resourceVersion": str(upto)}})
            remaining = deadline - loop.time()
            if remaining <= 0:
                return resp
            try:
                await asyncio.wait_for(changed.wait(), remaining)
            except TimeoutError:
                return resp


def _matches(obj: dict[str, Any], selector: str | None) -> bool:
    if not selector:
        return True
    labels = obj.get("metadata", {}).get("labels") or {}
    return all(labels.get(k) == v for k, _, v in (t.partition("=") for t in selector.split(",")))


def _merge(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = _merge(out.get(k), v)
    return out

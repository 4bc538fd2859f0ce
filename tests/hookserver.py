"""A webhook server for tests: HTTPS on loopback, a function per path, every call kept.

A function gets the review's ``request`` and returns its ``response`` (without the uid), or
an aiohttp ``web.Response`` sent as it is (to answer what a webhook should not).
"""

from __future__ import annotations

import asyncio
import base64
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
from aiohttp import web

from setpoint.cluster.authentication.tls import ensure_certs

Obj = dict[str, Any]
Review = Callable[[Obj], Awaitable[Obj | web.Response] | Obj | web.Response]


class Hooks:
    """A webhook server on loopback: per path, a function from request to response."""

    def __init__(self, directory: Path) -> None:
        self.certs = ensure_certs(directory, ["127.0.0.1", "localhost", "hooks.default.svc"])
        self.directory = directory
        self.handlers: dict[str, Review] = {}
        self.calls: dict[str, list[Obj]] = {}
        self.port = 0
        self._runner: web.AppRunner | None = None

    @property
    def ca_bundle(self) -> str:
        return base64.b64encode(self.certs.ca_pem).decode()

    def url(self, path: str) -> str:
        return f"https://127.0.0.1:{self.port}{path}"

    def on(self, path: str, handler: Review) -> None:
        self.handlers[path] = handler
        self.calls[path] = []

    async def _serve(self, request: web.Request) -> web.Response:
        review = orjson.loads(await request.read())
        self.calls[request.path].append({"review": review, "query": dict(request.query)})
        response = self.handlers[request.path](review["request"])
        if not isinstance(response, dict | web.Response):
            response = await response
        if isinstance(response, web.Response):
            return response
        # the review comes back as it went (AdmissionReview or ConversionReview)
        body = {"apiVersion": review["apiVersion"], "kind": review["kind"],
                "response": {"uid": review["request"]["uid"], **response}}
        return web.Response(body=orjson.dumps(body), content_type="application/json")

    async def start(self) -> None:
        # a conversion review of a large list is megabytes (a real webhook sets no limit)
        app = web.Application(client_max_size=64 << 20)
        app.router.add_post("/{tail:.*}", self._serve)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0,
                           ssl_context=self.certs.ssl_context(self.directory))
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()


class ThreadedHooks:
    """``Hooks`` on an event loop of its own, for tests that block (kubectl)."""

    def __init__(self, directory: Path) -> None:
        self.hooks = Hooks(directory)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    def start(self) -> Hooks:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.hooks.start(), self._loop).result(10)
        return self.hooks

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.hooks.stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

"""An audit webhook receiver for tests: HTTPS on loopback, every EventList POSTed to it
kept, and a kubeconfig naming it (what ``--audit-webhook-config-file`` takes)."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import orjson
from aiohttp import web

from setpoint.cluster.authentication.tls import ensure_certs


class Receiver:
    """An audit webhook on loopback (HTTPS): the EventLists POSTed to it; the first
    ``failures`` calls answered 500."""

    def __init__(self, directory: Path, failures: int = 0) -> None:
        self.certs = ensure_certs(directory, ["127.0.0.1"])
        self.directory = directory
        self.failures = failures
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.port = 0
        self._runner: web.AppRunner | None = None

    async def _receive(self, request: web.Request) -> web.Response:
        self.bodies.append(orjson.loads(await request.read()))
        self.headers.append(dict(request.headers))
        if len(self.bodies) <= self.failures:
            return web.Response(status=500, text="not now")
        return web.Response(status=200, text="{}")

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/audit", self._receive)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0,
                           ssl_context=self.certs.ssl_context(self.directory))
        await site.start()
        self.port = self._runner.addresses[0][1]

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def kubeconfig(self, path: Path, token: str = "audit-token") -> Path:
        ca = base64.b64encode(self.certs.ca_pem).decode()
        path.write_text(f"""\
apiVersion: v1
kind: Config
clusters:
- name: receiver
  cluster:
    server: https://127.0.0.1:{self.port}/audit
    certificate-authority-data: {ca}
users:
- name: apiserver
  user:
    token: {token}
contexts:
- name: audit
  context: {{cluster: receiver, user: apiserver}}
current-context: audit
""")
        return path

    def events(self) -> list[dict[str, Any]]:
        return [item for body in self.bodies for item in body["items"]]

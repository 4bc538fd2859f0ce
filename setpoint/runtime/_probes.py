"""The manager's one HTTP port: ``/healthz``, ``/readyz`` and ``/metrics``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

from setpoint.runtime._listen import ListenError
from setpoint.runtime._metrics import CONTENT_TYPE, Metrics

Check = Callable[[], str | None]
"""A health check: None when healthy, else why not."""


class ProbeServer:
    """Serves the probes and the metrics until stopped."""

    def __init__(self, metrics: Metrics, *, healthz: Check, readyz: Check) -> None:
        self.metrics = metrics
        self._healthz = healthz
        self._readyz = readyz
        self._runner: web.AppRunner | None = None
        self.port: int | None = None

    def __repr__(self) -> str:
        return f"ProbeServer(port={self.port})"

    async def start(self, host: str, port: int) -> int:
        """Listen on ``host:port`` (0: a free port); returns the port."""
        app = web.Application()
        app.router.add_get("/healthz", self._probe(self._healthz))
        app.router.add_get("/readyz", self._probe(self._readyz))
        app.router.add_get("/metrics", self._metrics)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False,
                                    shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        try:
            await site.start()
        except OSError as exc:
            await self._runner.cleanup()
            self._runner = None
            raise ListenError(host, port, exc, what="/healthz, /readyz and /metrics",
                              option="--http-address") from exc
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        self.port = sockets[0].getsockname()[1] if sockets else port
        return self.port

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    @staticmethod
    def _probe(check: Check) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def handler(request: web.Request) -> web.Response:
            problem = check()
            if problem is None:
                return web.Response(text="ok")
            return web.Response(status=500, text=problem)
        return handler

    async def _metrics(self, request: web.Request) -> web.Response:
        return web.Response(body=self.metrics.exposition(),
                            headers={"Content-Type": CONTENT_TYPE})

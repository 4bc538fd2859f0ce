"""The manager's one HTTP port: ``/healthz``, ``/readyz`` and ``/metrics``.

The probes answer as controller-runtime's ``healthz`` handler does
(pkg/healthz/healthz.go): each endpoint runs its named checks in order; ``ok`` (200) when
all pass, and ``?verbose`` lists them (``[+]name ok`` lines, then ``healthz check
passed``); on a failure, always verbose with the reason withheld (``[-]name failed: reason
withheld``, then ``healthz check failed``, 500), since the endpoint is public.
``?exclude=name`` skips a check; ``/healthz/<name>`` runs one check and, failing, says why.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence

from aiohttp import web

from setpoint.runtime._listen import ListenError
from setpoint.runtime._metrics import CONTENT_TYPE, Metrics

log = logging.getLogger(__name__)

Check = Callable[[], str | None]
"""A health check: None when healthy, else why not."""

NamedChecks = Sequence[tuple[str, Check]]
"""An endpoint's checks, in the order they run; read at each request, so a check added
after the server started is served too."""

_TEXT_HEADERS = {"X-Content-Type-Options": "nosniff"}


class ProbeServer:
    """Serves the probes and the metrics until stopped."""

    def __init__(self, metrics: Metrics, *, healthz: NamedChecks,
                 readyz: NamedChecks) -> None:
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
        app.router.add_get("/healthz", self._endpoint(self._healthz))
        app.router.add_get("/healthz/{check}", self._single(self._healthz))
        app.router.add_get("/readyz", self._endpoint(self._readyz))
        app.router.add_get("/readyz/{check}", self._single(self._readyz))
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
        # the bound port, so that --http-address HOST:0 says where it went (controller-runtime
        # logs its metrics and probe servers' addresses the same way)
        shown = f"[{host}]" if ":" in host else host
        log.info("probe_server_started address=%s:%d paths=/healthz,/readyz,/metrics",
                 shown, self.port)
        return self.port

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    @staticmethod
    def _endpoint(checks: NamedChecks) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def handler(request: web.Request) -> web.Response:
            text, healthy = run_checks(checks, request.query.getall("exclude", []))
            if not healthy:
                return web.Response(status=500, text=text + "healthz check failed\n",
                                    headers=_TEXT_HEADERS)
            if "verbose" not in request.query:
                return web.Response(text="ok", headers=_TEXT_HEADERS)
            return web.Response(text=text + "healthz check passed\n", headers=_TEXT_HEADERS)
        return handler

    @staticmethod
    def _single(checks: NamedChecks) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def handler(request: web.Request) -> web.Response:
            wanted = request.match_info["check"]
            for name, check in checks:
                if name == wanted:
                    problem = check()
                    if problem is None:
                        return web.Response(text="ok", headers=_TEXT_HEADERS)
                    return web.Response(status=500, text=f"internal server error: {problem}\n",
                                        headers=_TEXT_HEADERS)
            return web.Response(status=404, text="404 page not found\n", headers=_TEXT_HEADERS)
        return handler

    async def _metrics(self, request: web.Request) -> web.Response:
        return web.Response(body=self.metrics.exposition(),
                            headers={"Content-Type": CONTENT_TYPE})


def run_checks(checks: NamedChecks, exclude: Sequence[str] = ()) -> tuple[str, bool]:
    """Run ``checks`` but the excluded ones: the verbose lines and whether all passed."""
    excluded = dict.fromkeys(exclude)
    lines: list[str] = []
    healthy = True
    for name, check in checks:
        if name in excluded:
            del excluded[name]
            lines.append(f"[+]{name} excluded: ok\n")
        elif check() is not None:
            lines.append(f"[-]{name} failed: reason withheld\n")
            healthy = False
        else:
            lines.append(f"[+]{name} ok\n")
    if excluded:
        names = ",".join(f'"{name}"' for name in sorted(excluded))
        lines.append(f"warn: some health checks cannot be excluded: no matches for {names}\n")
    return "".join(lines), healthy

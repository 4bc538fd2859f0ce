"""The counting proxy of the operator benchmark, in a process of its own.

    python bench/counting_proxy.py UPSTREAM_KUBECONFIG PROXY_KUBECONFIG

It forwards to the server of UPSTREAM_KUBECONFIG with :class:`setpoint.testing.ApiProxy`
(the testing kit's fault-injection proxy, with no faults set), writes PROXY_KUBECONFIG for
the operator, and prints ``ready <control-url>``. The control server answers
``GET /counts`` with the requests seen by verb and resource, and ``POST /reset`` clears
them. Every contender's requests pass through the same proxy, so they are counted the
same way whatever client they use, and the server is left untouched.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from collections import defaultdict
from pathlib import Path

from aiohttp import web

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from setpoint.client import ClusterConfig, load_kubeconfig
from setpoint.testing import ApiProxy
from setpoint.testing.requestinfo import request_info


class TimedProxy(ApiProxy):
    """The testing kit's proxy, timing each request that is not a watch."""

    def __init__(self, upstream: ClusterConfig) -> None:
        super().__init__(upstream)
        self.latency: defaultdict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
        """``verb resource`` -> [requests, seconds in all, the longest]."""

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        started = time.perf_counter()
        reply = await super()._handle(request)
        info = request_info(request.method, request.path, request.query)
        if not info.is_watch:
            took = time.perf_counter() - started
            entry = self.latency[f"{info.verb} {info.full_resource or info.path}"]
            entry[0] += 1
            entry[1] += took
            entry[2] = max(entry[2], took)
        return reply


async def main(upstream: Path, out: Path) -> None:
    proxy = TimedProxy(load_kubeconfig(upstream))
    await proxy.start()
    proxy.write_kubeconfig(out)

    async def counts(request: web.Request) -> web.Response:
        return web.json_response({**proxy.counts.as_dict(),
                                  "open_watches": [str(w) for w in proxy.open_watches],
                                  "latency": proxy.latency})

    async def reset(request: web.Request) -> web.Response:
        proxy.counts.reset()
        proxy.latency.clear()
        return web.json_response({})

    app = web.Application()
    app.router.add_get("/counts", counts)
    app.router.add_post("/reset", reset)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    print(f"ready http://127.0.0.1:{port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await runner.cleanup()
    await proxy.stop()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), Path(sys.argv[2])))

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
from pathlib import Path

from aiohttp import web

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from setpoint.client import load_kubeconfig
from setpoint.testing import ApiProxy


async def main(upstream: Path, out: Path) -> None:
    proxy = ApiProxy(load_kubeconfig(upstream))
    await proxy.start()
    proxy.write_kubeconfig(out)

    async def counts(request: web.Request) -> web.Response:
        return web.json_response({**proxy.counts.as_dict(),
                                  "open_watches": [str(w) for w in proxy.open_watches]})

    async def reset(request: web.Request) -> web.Response:
        proxy.counts.reset()
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

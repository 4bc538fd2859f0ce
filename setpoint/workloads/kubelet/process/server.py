"""Each node's kubelet HTTP endpoint: container logs and exec, on the node's loopback address.

A real kubelet serves ``/containerLogs/{namespace}/{pod}/{container}`` (query ``follow``,
``previous``, ``tailLines``, ``sinceSeconds``, ``timestamps``), ``/exec/...``,
``/attach/...`` and ``/portForward/...`` on port 10250 of its node and reports the port in
``status.daemonEndpoints.kubeletEndpoint.Port`` (pkg/kubelet/server/server.go). Here each
node listens on its ``InternalIP`` (a loopback address) on a port the system picks, so that
several clusters on one machine never collide, and the node reports that port.

``/exec`` answers a non-interactive command with its combined output as the body (``POST``
with ``command=`` query parameters, as the kubelet's path takes them) and upgrades to the
``v4.channel.k8s.io`` WebSocket protocol when asked (channel byte 1 stdout, 2 stderr, 3 the
final Status), which is what the API server proxies ``kubectl exec`` to.
``/portForward`` is reserved for the streaming work that follows (501 until then).
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import TYPE_CHECKING

from aiohttp import WSMsgType, web

from setpoint.workloads.kubelet.process.logs import LogOptions, read_log

if TYPE_CHECKING:
    from setpoint.workloads.kubelet.process.runtime import ProcessRuntime

log = logging.getLogger("setpoint.workloads.kubelet.server")

EXEC_PROTOCOLS = ("v4.channel.k8s.io", "channel.k8s.io")


def _flag(request: web.Request, name: str) -> bool:
    return request.query.get(name, "").lower() in ("1", "true", "yes")


def _number(request: web.Request, name: str) -> int | None:
    raw = request.query.get(name)
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError:
        raise web.HTTPBadRequest(text=f"invalid {name}: {raw!r}") from None


class KubeletServer:
    """The HTTP endpoint of one node's kubelet (see the module docstring)."""

    def __init__(self, runtime: ProcessRuntime, node: str, host: str) -> None:
        self.runtime, self.node, self.host = runtime, node, host
        self.port = 0
        app = web.Application()
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/containerLogs/{ns}/{pod}/{container}", self._logs)
        app.router.add_route("*", "/exec/{ns}/{pod}/{container}", self._exec)
        app.router.add_route("*", "/portForward/{ns}/{pod}", self._port_forward)
        self._runner = web.AppRunner(app, access_log=None)

    def __repr__(self) -> str:
        return f"KubeletServer(node={self.node}, at={self.host}:{self.port})"

    async def start(self) -> int:
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, 0)
        await site.start()
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        self.port = int(sockets[0].getsockname()[1]) if sockets else 0
        return self.port

    async def stop(self) -> None:
        await self._runner.cleanup()

    async def _healthz(self, request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _logs(self, request: web.Request) -> web.StreamResponse:
        ns, pod, name = (request.match_info[k] for k in ("ns", "pod", "container"))
        paths = self.runtime.log_paths(ns, pod, name)
        previous = _flag(request, "previous")
        if not paths or (previous and len(paths) < 2):
            which = "previous terminated container" if previous else "container"
            raise web.HTTPBadRequest(text=f'{which} "{name}" in pod "{pod}" not found')
        path = paths[-2] if previous else paths[-1]
        instances = self.runtime.find(ns, pod, name)
        current = instances[-1] if instances and not previous else None
        opts = LogOptions(follow=_flag(request, "follow") and not previous,
                          tail_lines=_number(request, "tailLines"),
                          since_seconds=_number(request, "sinceSeconds"),
                          timestamps=_flag(request, "timestamps"))
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await response.prepare(request)
        async for chunk in read_log(path, opts, current.running if current else None):
            await response.write(chunk)
        await response.write_eof()
        return response

    async def _exec(self, request: web.Request) -> web.StreamResponse:
        ns, pod, name = (request.match_info[k] for k in ("ns", "pod", "container"))
        command = request.query.getall("command", [])
        instances = [c for c in self.runtime.find(ns, pod, name) if c.finished_at is None]
        if not command or not instances:
            raise web.HTTPBadRequest(text="no command" if not command else
                                     f'container "{name}" in pod "{pod}" is not running')
        container = instances[-1]
        ws = web.WebSocketResponse(protocols=EXEC_PROTOCOLS)
        if not ws.can_prepare(request).ok:
            code, out = await self.runtime.exec_sync(container.id, command, 3600.0)
            return web.Response(body=out, headers={"X-Exit-Code": str(code)})
        await ws.prepare(request)
        proc = await self.runtime.exec_process(container.id, command,
                                               stdin=asyncio.subprocess.PIPE,
                                               stdout=asyncio.subprocess.PIPE,
                                               stderr=asyncio.subprocess.PIPE)

        async def pump(stream: asyncio.StreamReader | None, channel: int) -> None:
            while stream is not None and (chunk := await stream.read(32 * 1024)):
                await ws.send_bytes(bytes([channel]) + chunk)

        async def feed() -> None:
            async for msg in ws:
                if msg.type is WSMsgType.BINARY and msg.data[:1] == b"\x00" and proc.stdin:
                    proc.stdin.write(msg.data[1:])
                    await proc.stdin.drain()
                elif msg.type is WSMsgType.BINARY and msg.data[:1] == b"\xff" and proc.stdin:
                    proc.stdin.close()  # v5: the client closed stdin
        feeder = asyncio.get_running_loop().create_task(feed())
        await asyncio.gather(pump(proc.stdout, 1), pump(proc.stderr, 2))
        code = await proc.wait()
        feeder.cancel()
        status = {"metadata": {}, "status": "Success"} if code == 0 else {
            "metadata": {}, "status": "Failure", "reason": "NonZeroExitCode",
            "message": f"command terminated with non-zero exit code: error executing command "
                       f"{command}: exit status {code}",
            "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]}}
        await ws.send_bytes(b"\x03" + json.dumps(status).encode())
        await ws.close()
        return ws

    async def _port_forward(self, request: web.Request) -> web.Response:
        raise web.HTTPNotImplemented(text="port forwarding is not served by this kubelet yet")

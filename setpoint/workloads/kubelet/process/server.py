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
With ``Connection: Upgrade`` the streams of :mod:`.remotecommand` serve ``/exec`` and
``/attach`` (WebSocket ``v5``/``v4.channel.k8s.io`` or SPDY/3.1), and :mod:`.portforward`
serves ``/portForward`` (SPDY/3.1, or SPDY tunneled in WebSocket as kubectl 1.31+ sends it).
The API server reaches these through its upgrade-aware proxy (pods/exec, attach,
portforward), so kubectl meets them unchanged.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from aiohttp import WSMsgType, web

from setpoint.workloads.kubelet.process.logs import LogOptions, read_log
from setpoint.workloads.kubelet.process.portforward import (
    PROTOCOL,
    TUNNELING_PREFIX,
    PortForwarder,
)
from setpoint.workloads.kubelet.process.remotecommand import (
    SPDY_PROTOCOLS,
    WEBSOCKET_PROTOCOLS,
    Channels,
    SpdyChannels,
    StreamOptions,
    WebSocketChannels,
    run_attach,
    run_exec,
)
from setpoint.workloads.kubelet.process.spdy import ProtocolError, SpdySession, SpdyStream

if TYPE_CHECKING:
    from setpoint.workloads.kubelet.process.runtime import ProcessRuntime

log = logging.getLogger("setpoint.workloads.kubelet.server")

PROTOCOL_HEADER = "X-Stream-Protocol-Version"


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
        app.router.add_route("*", "/attach/{ns}/{pod}/{container}", self._attach)
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
        sandbox = self.runtime.sandbox_of(ns, pod)
        status = ((sandbox.config.pod or {}).get("status") or {}) if sandbox else {}
        refusal = container_log_refusal(status, pod, name, previous)
        if refusal is not None:
            raise web.HTTPBadRequest(text=refusal)
        if not paths or (previous and len(paths) < 2):
            which = "previous terminated container" if previous else "container"
            raise web.HTTPBadRequest(text=f'{which} "{name}" in pod "{pod}" not found')
        path = paths[-2] if previous else paths[-1]
        instances = self.runtime.find(ns, pod, name)
        current = instances[-1] if instances and not previous else None
        since: float | None = _number(request, "sinceSeconds")
        if since is None and request.query.get("sinceTime"):
            try:
                since_time = datetime.fromisoformat(request.query["sinceTime"].replace(
                    "Z", "+00:00"))
            except ValueError:
                raise web.HTTPBadRequest(text="invalid sinceTime") from None
            since = max(0.0, time.time() - since_time.timestamp()) or 1e-9
        opts = LogOptions(follow=_flag(request, "follow") and not previous,
                          tail_lines=_number(request, "tailLines"),
                          since_seconds=since, timestamps=_flag(request, "timestamps"))
        limit = _number(request, "limitBytes")
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await response.prepare(request)
        transport = request.transport

        def gone() -> bool:
            # a follower that hung up (kubectl interrupted): stop polling its log, as the
            # kubelet's ReadLogs ends with its request's context
            return transport is None or transport.is_closing()
        async for chunk in read_log(path, opts, current.running if current else None,
                                    gone=gone):
            if limit is not None:
                chunk, limit = chunk[:limit], limit - len(chunk)
            await response.write(chunk)
            if limit is not None and limit <= 0:
                break  # limitBytes: the kubelet stops once that much is written
        await response.write_eof()
        return response

    def _running(self, request: web.Request, verb: str) -> Any:
        """kubelet_pods.go GetExec/GetAttach: only a running container is found (the
        runtime's GetPods(false)); server.go answers the error with streaming.WriteError,
        a 500 carrying the message, which kubectl prints after "unable to upgrade
        connection: "."""
        ns, pod, name = (request.match_info[k] for k in ("ns", "pod", "container"))
        instances = [c for c in self.runtime.find(ns, pod, name) if c.finished_at is None]
        if not instances:
            text = (f'container not found ("{name}")' if verb == "exec"
                    else f"container {name} not found in pod {pod}_{ns}")
            raise web.HTTPInternalServerError(text=text)
        return instances[-1]

    async def _exec(self, request: web.Request) -> web.StreamResponse:
        command = request.query.getall("command", [])
        container = self._running(request, "exec")
        if not command:
            raise web.HTTPBadRequest(text="you must specify at least 1 command")
        if not _is_upgrade(request):
            # the plain answer this endpoint gave before the streams: output, exit code
            try:
                code, out = await self.runtime.exec_sync(container.id, command, 3600.0)
            except TimeoutError:
                code, out = 1, b""
            return web.Response(body=out, headers={"X-Exit-Code": str(code)})
        opts = StreamOptions.from_query(request.query)

        async def start(argv: list[str], **kwargs: Any) -> asyncio.subprocess.Process:
            return await self.runtime.exec_process(container.id, argv, **kwargs)

        return await self._remote_command(
            request, opts, lambda channels: run_exec(start, command, opts, channels))

    async def _attach(self, request: web.Request) -> web.StreamResponse:
        container = self._running(request, "attach")
        opts = StreamOptions.from_query(request.query)
        terminal = container.terminal
        return await self._remote_command(request, opts, lambda channels: run_attach(
            container.log_path, container.running, container.stdin, opts, channels,
            terminal.resize if terminal is not None else None))

    async def _remote_command(self, request: web.Request, opts: StreamOptions,
                              run: Callable[[Channels], Coroutine[Any, Any, None]],
                              ) -> web.StreamResponse:
        """Upgrade to WebSocket or SPDY (remotecommand's createStreams) and run."""
        if not (opts.stdin or opts.stdout or opts.stderr):
            raise web.HTTPBadRequest(text="you must specify at least 1 of stdin, stdout, "
                                          "stderr")
        ws = web.WebSocketResponse(protocols=WEBSOCKET_PROTOCOLS, heartbeat=None)
        if ws.can_prepare(request).ok:
            await ws.prepare(request)
            channels = WebSocketChannels(ws)
            await _until_gone(run(channels), channels.receive())
            return ws
        protocol = _negotiate(request, SPDY_PROTOCOLS)
        spdy_channels: SpdyChannels | None = None

        def on_stream(stream: SpdyStream) -> None:
            assert spdy_channels is not None
            spdy_channels.on_stream(stream)

        response, session = await _upgrade_spdy(request, protocol, on_stream)
        spdy_channels = SpdyChannels(session)
        spdy_channels.expected = opts.expected_spdy_streams()
        try:
            async with asyncio.timeout(STREAM_CREATION_TIMEOUT):
                await spdy_channels.ready.wait()
            await _until_gone(run(spdy_channels), session.closed.wait())
        except TimeoutError:
            log.info("exec/attach: the client opened too few streams in time")
        finally:
            request.transport.close() if request.transport else None
        return response

    async def _port_forward(self, request: web.Request) -> web.StreamResponse:
        ns, pod = request.match_info["ns"], request.match_info["pod"]
        sandbox = self.runtime.sandbox_of(ns, pod)
        if sandbox is None:
            raise web.HTTPNotFound(text=f'pod "{pod}" in namespace "{ns}" not found')
        forwarder = PortForwarder(sandbox.config.ip, sandbox.id, sandbox.config.pod_uid)
        tunneling = [TUNNELING_PREFIX + PROTOCOL]
        ws = web.WebSocketResponse(protocols=tunneling, heartbeat=None)
        if ws.can_prepare(request).ok:
            # kubectl >= 1.31: the SPDY session inside binary WebSocket messages
            await ws.prepare(request)
            outgoing: asyncio.Queue[bytes] = asyncio.Queue()
            session = SpdySession(outgoing.put_nowait, forwarder.on_stream)

            async def send() -> None:
                while True:
                    await ws.send_bytes(await outgoing.get())

            sender = asyncio.get_running_loop().create_task(send())
            try:
                async for msg in ws:
                    if msg.type is WSMsgType.BINARY:
                        session.feed(msg.data)
            except ProtocolError as exc:
                log.info("port-forward: %s", exc)
            finally:
                session.feed_eof()
                forwarder.close()
                sender.cancel()
            return ws
        protocol = _negotiate(request, (PROTOCOL,))
        response, session = await _upgrade_spdy(request, protocol, forwarder.on_stream)
        try:
            await session.closed.wait()
        finally:
            forwarder.close()
            request.transport.close() if request.transport else None
        return response


def container_log_refusal(status: Mapping[str, Any], pod: str, name: str,
                          previous: bool) -> str | None:
    """Why the kubelet serves no log for the container, from the pod's status as the
    kubelet holds it (kubelet_pods.go validateContainerLogStatus), or None."""
    kinds = ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses")
    found = next((s for kind in kinds for s in status.get(kind) or ()
                  if s.get("name") == name), None)
    subject = f'container "{name}" in pod "{pod}"'
    if found is None:
        return f"{subject} is not available"
    state, last = found.get("state") or {}, (found.get("lastState") or {}).get("terminated")
    last_id = (last or {}).get("containerID")
    if previous:
        return None if last_id else f"previous terminated {subject} not found"
    if "running" in state:
        return None
    if "terminated" in state:
        return None if (state["terminated"] or {}).get("containerID") or last_id \
            else f"{subject} is terminated"
    if last is not None:
        return None if last_id else f"{subject} is terminated"
    if "waiting" in state:
        reason = (state["waiting"] or {}).get("reason") or ""
        why = {"ErrImagePull": "image can't be pulled",
               "ImagePullBackOff": "trying and failing to pull image"}.get(reason, reason)
        return f"{subject} is waiting to start: {why}"
    return f"{subject} is waiting to start - no logs yet"


STREAM_CREATION_TIMEOUT = 30.0  # the kubelet's streaming server default


async def _until_gone(session: Coroutine[Any, Any, None],
                      client_gone: Coroutine[Any, Any, Any]) -> None:
    """Run ``session`` until it ends or the client leaves, whichever comes first: an
    attach (or a command) has no reason to outlive the one who asked for it."""
    loop = asyncio.get_running_loop()
    work: asyncio.Task[None] = loop.create_task(session)
    gone: asyncio.Task[Any] = loop.create_task(client_gone)
    try:
        await asyncio.wait((work, gone), return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (work, gone):
            task.cancel()
        await asyncio.gather(work, gone, return_exceptions=True)


def _is_upgrade(request: web.Request) -> bool:
    return "upgrade" in request.headers.get("Connection", "").lower()


def _negotiate(request: web.Request, supported: tuple[str, ...]) -> str:
    """httpstream.Handshake: the first protocol the client offers that we serve."""
    if request.headers.get("Upgrade", "").lower() != "spdy/3.1":
        raise web.HTTPBadRequest(text="unable to upgrade: missing upgrade headers in request")
    offered = [p.strip() for v in request.headers.getall(PROTOCOL_HEADER, [])
               for p in v.split(",") if p.strip()]
    if not offered:
        raise web.HTTPBadRequest(text=f"unable to upgrade: {PROTOCOL_HEADER} is required")
    for protocol in offered:
        if protocol in supported:
            return protocol
    raise web.HTTPForbidden(
        text=f"unable to upgrade: unable to negotiate protocol: client supports "
             f"[{' '.join(offered)}], server accepts [{' '.join(supported)}]",
        headers={"X-Accepted-Stream-Protocol-Versions": ", ".join(supported)})


class _SpdyFeeder:
    """aiohttp's payload-parser seat (as its WebSocket reader uses it) for a SPDY session."""

    def __init__(self, session: SpdySession) -> None:
        self.session = session

    def feed_data(self, data: bytes) -> tuple[bool, bytes]:
        try:
            self.session.feed(data)
        except ProtocolError as exc:
            log.info("SPDY: %s", exc)
            self.session.feed_eof()
            return True, b""
        return False, b""

    def feed_eof(self) -> None:
        self.session.feed_eof()


async def _upgrade_spdy(request: web.Request, protocol: str,
                        on_stream: Callable[[SpdyStream], None],
                        ) -> tuple[web.StreamResponse, SpdySession]:
    """Answer 101 Switching Protocols to SPDY/3.1 and take the connection's bytes."""
    transport = request.transport
    if transport is None or request.protocol is None:
        raise web.HTTPBadRequest(text="connection closed")
    session = SpdySession(transport.write, on_stream)
    # the parser goes in before the answer: the client's first frame follows the 101
    request.protocol.set_parser(_SpdyFeeder(session))  # type: ignore[arg-type]
    response = web.StreamResponse(status=101, headers={
        "Connection": "Upgrade", "Upgrade": "SPDY/3.1", PROTOCOL_HEADER: protocol})
    await response.prepare(request)
    return response, session

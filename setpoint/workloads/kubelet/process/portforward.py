"""``portForward`` streams (k8s.io/kubelet pkg/cri/streaming/portforward/httpstream.go).

The client opens, for every connection it forwards, two SPDY streams with the same
``requestID`` and ``port`` headers: ``streamType: error`` and ``streamType: data``. Once
both are there the kubelet dials the pod's port, copies bytes both ways (a FIN from either
side half-closes the other), writes any dial error on the error stream, and closes both
streams when the pod's side is done. kubectl 1.31 and later send the same SPDY session
inside WebSocket messages (subprotocol ``SPDY/3.1+portforward.k8s.io``, client-go's
tools/portforward/tunneling_dialer.go); this module sees only the streams either way.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os

from setpoint.workloads.kubelet.process.spdy import SpdyStream

log = logging.getLogger("setpoint.workloads.kubelet.portforward")

PROTOCOL = "portforward.k8s.io"
TUNNELING_PREFIX = "SPDY/3.1+"


class PortForwarder:
    """Pairs the streams of one session and forwards each pair to ``host``."""

    def __init__(self, host: str, pod: str, uid: str) -> None:
        self.host, self.pod, self.uid = host, pod, uid
        self._pairs: dict[str, dict[str, SpdyStream]] = {}
        self.tasks: set[asyncio.Task[None]] = set()

    def __repr__(self) -> str:
        return f"PortForwarder(pod={self.pod}, host={self.host})"

    def on_stream(self, stream: SpdyStream) -> None:
        kind = stream.headers.get("streamtype", "")
        request = stream.headers.get("requestid", "")
        if kind not in ("error", "data"):
            stream.close()
            return
        pair = self._pairs.setdefault(request, {})
        pair[kind] = stream
        if len(pair) == 2:
            del self._pairs[request]
            task = asyncio.get_running_loop().create_task(self._forward(pair["data"],
                                                                        pair["error"]))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    async def _forward(self, data: SpdyStream, error: SpdyStream) -> None:
        raw = data.headers.get("port", "")
        try:
            port = int(raw)
            if not 0 < port < 65536:
                raise ValueError
        except ValueError:
            error.write(f'invalid port "{raw}"'.encode())
            error.close()
            data.close()
            return
        try:
            reader, writer = await asyncio.open_connection(self.host, port)
        except OSError as exc:
            error.write(forward_error(port, self.pod, self.host, exc).encode())
            error.close()
            data.close()
            return

        async def upstream() -> None:
            with contextlib.suppress(OSError):
                while chunk := await data.read():
                    writer.write(chunk)
                    await writer.drain()
                if writer.can_write_eof():
                    writer.write_eof()

        sender = asyncio.get_running_loop().create_task(upstream())
        try:
            with contextlib.suppress(OSError):
                while chunk := await reader.read(32 * 1024):
                    data.write(chunk)
        finally:
            data.close()
            error.close()
            sender.cancel()
            writer.close()

    def close(self) -> None:
        for task in list(self.tasks):
            task.cancel()


def forward_error(port: int, sandbox_id: str, host: str, exc: OSError) -> str:
    """What kubectl is told when nothing listens: the streaming server's wrapping
    (k8s.io/kubelet pkg/cri/streaming/portforward/httpstream.go: ``error forwarding port
    %d to pod %s, uid %v: %v`` with the sandbox's ID and, under CRI, an empty uid) of
    containerd's error (internal/cri/server/sandbox_portforward_linux.go: the dial of
    ``localhost:<port>`` inside the sandbox's network namespace, IPv4 then IPv6). A pod
    here shares the host's network namespace (containerd names it ``host``) and its
    loopback address stands for its localhost; the IPv6 attempt is not made, its error is
    worded like the IPv4 one."""
    reason = (os.strerror(exc.errno) if exc.errno else str(exc)).lower()
    return (f"error forwarding port {port} to pod {sandbox_id}, uid : failed to execute "
            f'portforward in network namespace "host": failed to connect to '
            f'localhost:{port} inside namespace "{sandbox_id}", IPv4: dial tcp4 '
            f"{host}:{port}: connect: {reason} IPv6 dial tcp6 [::1]:{port}: connect: "
            f"{reason} ")

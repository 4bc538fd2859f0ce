"""``exec`` and ``attach`` streams (k8s.io/kubelet pkg/cri/streaming/remotecommand).

A session carries the container's stdin, stdout, stderr, terminal resizes and, at the end,
the Status of the command, over one of two transports:

- WebSocket (``v5.channel.k8s.io``, ``v4.channel.k8s.io``): each binary message starts with
  its channel (0 stdin, 1 stdout, 2 stderr, 3 error, 4 resize; v5 adds 255, "close this
  channel", with the channel as its payload: kubectl's end of stdin).
- SPDY/3.1 (``X-Stream-Protocol-Version: v4.channel.k8s.io``): the client opens one stream
  per channel, named by its ``streamType`` header (error, stdin, stdout, stderr, resize).

Both end as the kubelet's ``ServeExec`` does: stdout and stderr closed, then the v4 Status
(``Success``, or ``Failure``/``NonZeroExitCode`` with the exit code as a cause) on the error
channel, then the connection closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import signal
import struct
import termios
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import WSMsgType, web

from setpoint.workloads.kubelet.process.logs import follow_records
from setpoint.workloads.kubelet.process.spdy import SpdySession, SpdyStream

STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255
WEBSOCKET_PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")
SPDY_PROTOCOLS = ("v4.channel.k8s.io",)
STREAM_TYPES = {"stdin": STDIN, "stdout": STDOUT, "stderr": STDERR, "error": ERROR,
                "resize": RESIZE}


@dataclass(frozen=True)
class StreamOptions:
    """What the client asked for (the kubelet's query: input, output, error, tty)."""

    stdin: bool
    stdout: bool
    stderr: bool
    tty: bool

    @classmethod
    def from_query(cls, query: Any) -> StreamOptions:
        def flag(name: str) -> bool:
            return str(query.get(name, "")).lower() in ("1", "true")
        tty = flag("tty")
        return cls(flag("input"), flag("output"), flag("error") and not tty, tty)

    def expected_spdy_streams(self) -> int:
        return 1 + self.stdin + self.stdout + self.stderr + self.tty


class Channels:
    """The transport-neutral face of one session: stdin and resizes in, output out."""

    def __init__(self) -> None:
        self.stdin: asyncio.Queue[bytes] = asyncio.Queue()  # b"" is end of input
        self.resize: asyncio.Queue[tuple[int, int]] = asyncio.Queue()

    async def write(self, channel: int, data: bytes) -> None:
        raise NotImplementedError

    async def close_output(self) -> None:
        """No more stdout or stderr."""

    async def finish(self, status: dict[str, Any]) -> None:
        raise NotImplementedError


class WebSocketChannels(Channels):
    def __init__(self, ws: web.WebSocketResponse) -> None:
        super().__init__()
        self.ws = ws
        self.v5 = ws.ws_protocol == "v5.channel.k8s.io"

    async def receive(self) -> None:
        """Read the client's messages until it closes; its stdin ends then at the latest."""
        async for msg in self.ws:
            if msg.type is not WSMsgType.BINARY or not msg.data:
                continue
            channel, data = msg.data[0], msg.data[1:]
            if channel == STDIN:
                if data:
                    self.stdin.put_nowait(data)
            elif channel == RESIZE:
                _queue_resize(self.resize, data)
            elif channel == CLOSE and self.v5 and data[:1] == bytes([STDIN]):
                self.stdin.put_nowait(b"")
        self.stdin.put_nowait(b"")

    async def write(self, channel: int, data: bytes) -> None:
        if not self.ws.closed:
            await self.ws.send_bytes(bytes([channel]) + data)

    async def finish(self, status: dict[str, Any]) -> None:
        await self.write(ERROR, json.dumps(status).encode())
        await self.ws.close()


class SpdyChannels(Channels):
    def __init__(self, session: SpdySession) -> None:
        super().__init__()
        self.session = session
        self.streams: dict[int, SpdyStream] = {}
        self.ready = asyncio.Event()
        self.expected = 0

    def on_stream(self, stream: SpdyStream) -> None:
        channel = STREAM_TYPES.get(stream.headers.get("streamtype", ""))
        if channel is None:
            stream.close()
            return
        self.streams[channel] = stream
        if channel in (STDIN, RESIZE):
            asyncio.get_running_loop().create_task(self._read(channel, stream))
        if len(self.streams) >= self.expected:
            self.ready.set()

    async def _read(self, channel: int, stream: SpdyStream) -> None:
        buffer = b""
        while data := await stream.read():
            if channel == STDIN:
                self.stdin.put_nowait(data)
                continue
            buffer += data  # resizes are newline-separated JSON (json.Encoder)
            *whole, buffer = buffer.split(b"\n")
            for line in whole:
                _queue_resize(self.resize, line)
        if channel == STDIN:
            self.stdin.put_nowait(b"")

    async def write(self, channel: int, data: bytes) -> None:
        stream = self.streams.get(channel)
        if stream is not None:
            stream.write(data)

    async def close_output(self) -> None:
        for channel in (STDOUT, STDERR):
            if (stream := self.streams.get(channel)) is not None:
                stream.close()

    async def finish(self, status: dict[str, Any]) -> None:
        await self.close_output()
        if (stream := self.streams.get(ERROR)) is not None:
            stream.write(json.dumps(status).encode())
            stream.close()
        self.session.go_away()


def _queue_resize(queue: asyncio.Queue[tuple[int, int]], data: bytes) -> None:
    with contextlib.suppress(ValueError, TypeError, AttributeError):
        size = json.loads(data)
        queue.put_nowait((int(size.get("Width", 0)), int(size.get("Height", 0))))


def exit_status(code: int, command: list[str]) -> dict[str, Any]:
    """The v4 Status of a finished command (remotecommand's ServeExec)."""
    if code == 0:
        return {"metadata": {}, "status": "Success"}
    return {"metadata": {}, "status": "Failure", "reason": "NonZeroExitCode",
            "message": f"command terminated with non-zero exit code: error executing command "
                       f"{command}: exit status {code}",
            "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]}}


def internal_error(message: str) -> dict[str, Any]:
    return {"metadata": {}, "status": "Failure", "message": message, "reason": "InternalError",
            "details": {"causes": [{"message": message}]}, "code": 500}


StartProcess = Callable[..., Awaitable[asyncio.subprocess.Process]]


async def run_exec(start: StartProcess, command: list[str], opts: StreamOptions,
                   channels: Channels) -> None:
    """Run ``command`` with the session's streams; a tty session gets a pseudo-terminal
    whose size follows the client's resizes."""
    loop = asyncio.get_running_loop()
    pipe, null = asyncio.subprocess.PIPE, asyncio.subprocess.DEVNULL
    master = -1
    try:
        if opts.tty:
            master, slave = os.openpty()
            try:
                proc = await start(command, stdin=slave, stdout=slave, stderr=slave, tty=slave)
            finally:
                os.close(slave)
        else:
            proc = await start(command, stdin=pipe if opts.stdin else null,
                               stdout=pipe if opts.stdout else null,
                               stderr=pipe if opts.stderr else null)
    except (LookupError, OSError) as exc:
        if master >= 0:
            os.close(master)
        await channels.finish(internal_error(f"error executing command in container: {exc}"))
        return

    async def pump(reader: asyncio.StreamReader | None, channel: int) -> None:
        with contextlib.suppress(OSError):
            while reader is not None and (chunk := await reader.read(32 * 1024)):
                await channels.write(channel, chunk)

    async def feed() -> None:
        while data := await channels.stdin.get():
            if master >= 0:
                os.write(master, data)
            elif proc.stdin is not None:
                proc.stdin.write(data)
                with contextlib.suppress(ConnectionError):
                    await proc.stdin.drain()
        if proc.stdin is not None:
            proc.stdin.close()
        elif master >= 0:
            with contextlib.suppress(OSError):
                os.write(master, b"\x04")  # end of input on a terminal: ^D

    async def resize() -> None:
        while True:
            width, height = await channels.resize.get()
            if master >= 0:
                fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", height, width, 0,
                                                                    0))

    helpers = [loop.create_task(feed()), loop.create_task(resize())]
    try:
        if master >= 0:
            reader = asyncio.StreamReader()
            pty = os.fdopen(master, "rb", buffering=0)
            master_transport, _ = await loop.connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(reader), pty)
            await asyncio.gather(pump(reader, STDOUT), proc.wait())
            master_transport.close()
        else:
            await asyncio.gather(pump(proc.stdout, STDOUT), pump(proc.stderr, STDERR))
        code = await proc.wait()
    finally:
        for helper in helpers:
            helper.cancel()
        if proc.returncode is None:  # the client left: so does its command
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
    code = 128 - code if code < 0 else code
    await channels.finish(exit_status(code, command))


async def run_attach(log_path: Any, running: asyncio.Event, stdin: asyncio.StreamWriter | None,
                     opts: StreamOptions, channels: Channels,
                     resize: Callable[[int, int], None] | None = None) -> None:
    """Attach to a running container: what it writes from now on (read from its log, by
    stream) and, when it keeps its stdin open (``stdin: true``), the client's input; the
    client's resizes reach the container's terminal (``tty: true``) through ``resize``."""
    async def feed() -> None:
        while data := await channels.stdin.get():
            if stdin is not None and not stdin.is_closing():
                stdin.write(data)
                with contextlib.suppress(ConnectionError):
                    await stdin.drain()

    async def follow_size() -> None:
        while True:
            width, height = await channels.resize.get()
            if resize is not None:
                resize(width, height)

    loop = asyncio.get_running_loop()
    feeder = loop.create_task(feed())
    sizer = loop.create_task(follow_size())
    try:
        async for stream, data in follow_records(log_path, running):
            if stream == "stdout" and opts.stdout:
                await channels.write(STDOUT, data)
            elif stream == "stderr" and (opts.stderr or opts.tty):
                await channels.write(STDERR if opts.stderr else STDOUT, data)
    finally:
        feeder.cancel()
        sizer.cancel()
    await channels.finish(exit_status(0, []))

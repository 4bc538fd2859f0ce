"""The server side of SPDY/3.1 framing, as much as kubectl's streams use of it.

kubectl (client-go's ``httpstream/spdy``, over moby/spdystream) speaks SPDY/3.1 for exec,
attach and port-forward when it does not use WebSockets (kubectl before 1.30, or as its
fallback), and port-forward since 1.31 tunnels the same SPDY bytes inside WebSocket
messages. No maintained Python library implements SPDY, so this module holds the minimal
framing, following the SPDY/3.1 draft
(https://www.chromium.org/spdy/spdy-protocol/spdy-protocol-draft3-1/):

- section 2.2: a control frame is ``1 | version(15) | type(16) | flags(8) | length(24)``;
  a data frame is ``0 | stream id(31) | flags(8) | length(24)``; flag 0x01 is FIN.
- section 2.6: SYN_STREAM (1), SYN_REPLY (2), RST_STREAM (3), SETTINGS (4), PING (6),
  GOAWAY (7), HEADERS (8), WINDOW_UPDATE (9).
- section 2.6.10: header blocks are a count then length-prefixed names and values, all
  compressed by one zlib stream per direction primed with the dictionary of 2.6.10.1.

Flow control (section 2.6.8) is not enforced: spdystream neither sends nor honours
WINDOW_UPDATE frames, so neither does this side.
"""

from __future__ import annotations

import asyncio
import logging
import struct
import zlib
from collections.abc import Callable

log = logging.getLogger("setpoint.workloads.kubelet.spdy")

VERSION = 3
SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE = (
    1, 2, 3, 4, 6, 7, 8, 9)
FLAG_FIN = 0x01
RST_CANCEL = 5
MAX_DATA = (1 << 24) - 1

_WORDS = [
    "options", "head", "post", "put", "delete", "trace", "accept", "accept-charset",
    "accept-encoding", "accept-language", "accept-ranges", "age", "allow", "authorization",
    "cache-control", "connection", "content-base", "content-encoding", "content-language",
    "content-length", "content-location", "content-md5", "content-range", "content-type",
    "date", "etag", "expect", "expires", "from", "host", "if-match", "if-modified-since",
    "if-none-match", "if-range", "if-unmodified-since", "last-modified", "location",
    "max-forwards", "pragma", "proxy-authenticate", "proxy-authorization", "range", "referer",
    "retry-after", "server", "te", "trailer", "transfer-encoding", "upgrade", "user-agent",
    "vary", "via", "warning", "www-authenticate", "method", "get", "status", "200 OK",
    "version", "HTTP/1.1", "url", "public", "set-cookie", "keep-alive", "origin",
]
_TAIL = (
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502"
    "504505203 Non-Authoritative Information204 No Content301 Moved Permanently"
    "400 Bad Request401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error"
    "501 Not Implemented503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct "
    "Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,"
    "image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,text/javascript,"
    "publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0."
)
# section 2.6.10.1: each word with its 32-bit length, then the tail as is (1423 bytes)
DICTIONARY = b"".join(struct.pack("!I", len(w)) + w.encode() for w in _WORDS) + _TAIL.encode()
assert len(DICTIONARY) == 1423


class ProtocolError(Exception):
    """The peer sent bytes that are not SPDY/3."""


class SpdyStream:
    """One stream the client opened: its headers, what it sent (until FIN), and writes."""

    def __init__(self, session: SpdySession, stream_id: int, headers: dict[str, str]) -> None:
        self.session, self.id, self.headers = session, stream_id, headers
        self._incoming: asyncio.Queue[bytes] = asyncio.Queue()
        self.remote_closed = False
        self.local_closed = False

    def __repr__(self) -> str:
        return f"SpdyStream(id={self.id}, type={self.headers.get('streamtype', '')})"

    async def read(self) -> bytes:
        """The next bytes the client sent; b"" once it half-closed (FIN) or reset."""
        if self.remote_closed and self._incoming.empty():
            return b""
        return await self._incoming.get()

    def _receive(self, data: bytes, fin: bool) -> None:
        if self.remote_closed:
            return
        if data:
            self._incoming.put_nowait(data)
        if fin:
            self.remote_closed = True
            self._incoming.put_nowait(b"")

    def write(self, data: bytes) -> None:
        if not self.local_closed:
            for start in range(0, len(data), MAX_DATA):
                self.session.send_data(self.id, data[start:start + MAX_DATA], False)

    def close(self) -> None:
        """Half-close: an empty data frame with FIN (spdystream's Stream.Close)."""
        if not self.local_closed:
            self.local_closed = True
            self.session.send_data(self.id, b"", True)


class SpdySession:
    """A server's SPDY session over any byte transport: ``feed`` what arrives, frames go
    to ``write``; ``on_stream`` learns of each stream the client opens."""

    def __init__(self, write: Callable[[bytes], None],
                 on_stream: Callable[[SpdyStream], None]) -> None:
        self._write, self._on_stream = write, on_stream
        self._buffer = bytearray()
        self._inflate = zlib.decompressobj(zdict=DICTIONARY)
        self._deflate = zlib.compressobj(zdict=DICTIONARY)
        self.streams: dict[int, SpdyStream] = {}
        self.closed = asyncio.Event()

    def __repr__(self) -> str:
        return f"SpdySession(streams={sorted(self.streams)})"

    # -- reading ---------------------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        """Take bytes from the transport and act on every whole frame among them."""
        self._buffer += data
        while len(self._buffer) >= 8:
            first, flags_length = struct.unpack_from("!II", self._buffer)
            length = flags_length & 0xFFFFFF
            if len(self._buffer) < 8 + length:
                return
            payload = bytes(self._buffer[8:8 + length])
            del self._buffer[:8 + length]
            flags = flags_length >> 24
            if first & 0x80000000:
                version, kind = (first >> 16) & 0x7FFF, first & 0xFFFF
                if version != VERSION:
                    raise ProtocolError(f"SPDY version {version} is not 3")
                self._control(kind, flags, payload)
            else:
                stream = self.streams.get(first & 0x7FFFFFFF)
                if stream is not None:
                    stream._receive(payload, bool(flags & FLAG_FIN))

    def feed_eof(self) -> None:
        """The transport closed: every stream ends."""
        for stream in self.streams.values():
            stream._receive(b"", True)
        self.closed.set()

    def _control(self, kind: int, flags: int, payload: bytes) -> None:
        if kind == SYN_STREAM:
            stream_id = struct.unpack_from("!I", payload)[0] & 0x7FFFFFFF
            headers = self._headers(payload[10:])
            stream = SpdyStream(self, stream_id, headers)
            self.streams[stream_id] = stream
            self._send_control(SYN_REPLY, 0, struct.pack("!I", stream_id)
                               + self._header_block({}))
            if flags & FLAG_FIN:
                stream._receive(b"", True)
            self._on_stream(stream)
        elif kind == RST_STREAM:
            stream_id = struct.unpack_from("!I", payload)[0] & 0x7FFFFFFF
            reset = self.streams.get(stream_id)
            if reset is not None:
                reset.local_closed = True
                reset._receive(b"", True)
        elif kind == PING:
            self._send_control(PING, 0, payload)  # section 2.6.5: echo the client's id
        elif kind == GOAWAY:
            self.feed_eof()
        elif kind == HEADERS:
            self._headers(payload[4:])  # keeps the shared zlib stream in step
        # SETTINGS and WINDOW_UPDATE change nothing this side does

    def _headers(self, block: bytes) -> dict[str, str]:
        """Section 2.6.10: a compressed name/value block (names are lower case)."""
        try:
            raw = self._inflate.decompress(block)
        except zlib.error as exc:
            raise ProtocolError(f"header block: {exc}") from None
        headers: dict[str, str] = {}
        (count,), at = struct.unpack_from("!I", raw), 4
        for _ in range(count):
            (size,) = struct.unpack_from("!I", raw, at)
            name = raw[at + 4:at + 4 + size].decode("latin-1")
            at += 4 + size
            (size,) = struct.unpack_from("!I", raw, at)
            value = raw[at + 4:at + 4 + size].decode("latin-1")
            at += 4 + size
            headers[name] = value.split("\x00", 1)[0]
        return headers

    # -- writing ---------------------------------------------------------------------------

    def _header_block(self, headers: dict[str, str]) -> bytes:
        raw = struct.pack("!I", len(headers)) + b"".join(
            struct.pack("!I", len(n)) + n.encode() + struct.pack("!I", len(v)) + v.encode()
            for n, v in headers.items())
        return self._deflate.compress(raw) + self._deflate.flush(zlib.Z_SYNC_FLUSH)

    def _send_control(self, kind: int, flags: int, payload: bytes) -> None:
        self._write(struct.pack("!HHI", 0x8000 | VERSION, kind, flags << 24 | len(payload))
                    + payload)

    def send_data(self, stream_id: int, data: bytes, fin: bool) -> None:
        self._write(struct.pack("!II", stream_id & 0x7FFFFFFF,
                                (FLAG_FIN if fin else 0) << 24 | len(data)) + data)

    def go_away(self) -> None:
        last = max(self.streams, default=0)
        self._send_control(GOAWAY, 0, struct.pack("!II", last, 0))

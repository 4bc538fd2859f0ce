"""One keep-alive HTTPS connection that sends a request as an ``httpx.Client`` would.

The fuzz tests send tens of thousands of requests; through httpx each one costs its client
about three times what it costs the server to answer it (request and header objects,
cookies, URL merging, the connection pool), and the client shares the server's process and
so its interpreter lock. ``http.client`` sends the same bytes at a third of that cost: the
request target is the one httpx computes (its URL parser percent-encodes and removes dot
segments), and the headers are the client's own defaults (Accept, Accept-Encoding,
User-Agent, the bearer token), so what reaches the server does not change.
"""

from __future__ import annotations

import contextlib
import gzip
import http.client
import select
import ssl
import zlib
from dataclasses import dataclass

import httpx

# httpx's encode_request: no body on these is still a ``Content-Length: 0``
BODY_METHODS = ("POST", "PUT", "PATCH")


@dataclass
class Answer:
    status: int
    content_type: str
    body: bytes  # decoded as httpx decodes Content-Encoding; empty when not read


class KeepAliveClient:
    """Requests over one connection, reopened only when the server closed it."""

    def __init__(self, client: httpx.Client, context: ssl.SSLContext,
                 timeout: float = 30.0) -> None:
        base = client.base_url
        assert base.raw_path == b"/", base  # the merge below is httpx's for this base only
        self._base = base
        self._host = base.host
        self._port = base.port
        self._authority = f"{base.host}:{base.port}" if base.port else base.host
        self._context = context
        self._timeout = timeout
        self._headers = list(client.headers.items())
        self._conn: http.client.HTTPSConnection | None = None

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _connection(self) -> http.client.HTTPSConnection:
        conn = self._conn
        # httpcore's check before reusing a connection: readable while idle is closed by
        # the server (or it sent what no request asked for), so open another one
        if conn is not None and conn.sock is not None \
                and select.select([conn.sock], [], [], 0)[0]:
            conn.close()
        if conn is None:
            conn = self._conn = http.client.HTTPSConnection(
                self._host, self._port, context=self._context, timeout=self._timeout)
        return conn

    def head(self, method: str, url: str, body: bytes | None,
             headers: dict[str, str]) -> tuple[str, str, list[tuple[str, str]]]:
        """The method, request target and headers httpx would send for this request."""
        method = method.upper()  # httpx.Request upper-cases the method
        parsed = httpx.URL(url)
        assert parsed.is_relative_url, url
        # httpx.Client._merge_url: the path joined to the base URL's, whose parsing then
        # removes dot segments (a relative URL's own parsing keeps them)
        target = self._base.copy_with(
            raw_path=self._base.raw_path + parsed.raw_path.lstrip(b"/")).raw_path
        fields = [("Host", self._authority)]
        if body:
            fields.append(("Content-Length", str(len(body))))
        elif method in BODY_METHODS:
            fields.append(("Content-Length", "0"))
        given = {name.lower() for name in headers}
        fields += [(name, value) for name, value in self._headers
                   if name.lower() not in given]
        fields += list(headers.items())
        return method, target.decode("ascii"), fields

    def send(self, method: str, url: str, body: bytes | None, headers: dict[str, str],
             read: bool = True) -> Answer:
        """Send one request; ``read=False`` leaves a 200's body unread (a watch's stream) and
        closes the connection, as closing an unread httpx response does."""
        method, target, fields = self.head(method, url, body, headers)
        conn = self._connection()
        conn.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
        for name, value in fields:
            conn.putheader(name, value)
        # the server may answer before it read the body: httpcore reads the answer too
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            conn.endheaders(body or None)
        response = conn.getresponse()
        ctype = response.getheader("content-type", "")
        if not read and response.status == 200:
            self.close()
            return Answer(response.status, ctype, b"")
        raw = response.read()
        encoding = (response.getheader("content-encoding") or "").strip().lower()
        if response.will_close:
            self.close()
        return Answer(response.status, ctype, decode_content(raw, encoding))


def decode_content(raw: bytes, encoding: str) -> bytes:
    """httpx's decoders for the encodings its Accept-Encoding offers."""
    if encoding == "gzip":
        return gzip.decompress(raw)
    if encoding == "deflate":
        try:
            return zlib.decompress(raw)
        except zlib.error:
            return zlib.decompress(raw, -zlib.MAX_WBITS)
    assert encoding in ("", "identity"), encoding
    return raw

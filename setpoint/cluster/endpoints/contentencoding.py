"""Response compression (the APIResponseCompression feature, beta and on in 1.32).

Two writers of kube-apiserver gzip an answer, each by its own rules:

- k8s.io/apiserver pkg/endpoints/handlers/responsewriters/writers.go ``SerializeObject``,
  through which every API object is written (a GET, a LIST, a write's answer, a Table, a
  Status error, discovery): its ``deferredResponseWriter`` gzips at level 1
  (``defaultGzipContentEncodingLevel``) when ``negotiateContentEncoding`` found the token
  ``gzip`` in Accept-Encoding and the first write, the whole encoded object, is larger than
  ``defaultGzipThresholdBytes`` (128 KiB); only then are ``Content-Encoding: gzip`` and
  ``Vary: Accept-Encoding`` set. A watch (handlers/watch.go ``WatchServer.HandleHTTP``
  writes its frames to the connection itself), a log or a proxied answer is never gzipped.
- kube-openapi pkg/handler ``RegisterOpenAPIVersionedService`` wraps ``/openapi/v2`` in
  NYTimes/gziphandler v1.1.1 ``GzipHandler``: ``Vary: Accept-Encoding`` on every answer,
  and gzip at the default level (6) of a body of at least 1400 bytes (``DefaultMinSize``)
  when Accept-Encoding gives ``gzip`` a quality above 0 (``acceptsGzip``). ``/openapi/v3``
  (pkg/handler3) is not wrapped.
- ``/metrics`` (component-base/metrics/legacyregistry ``HandlerWithReset``, HandlerOpts
  left zero so ``DisableCompression`` is false) is written by prometheus/client_golang
  v1.19.1 promhttp ``HandlerForTransactional``: gzip at the default level whenever
  ``gzipAccepted`` finds a token ``gzip`` or ``gzip;...`` in Accept-Encoding, whatever the
  size and the quality; ``Content-Encoding: gzip`` and no ``Vary``.

The server's streamed LIST (collections.py) is gzipped as it is written, never held whole:
its parts are held only until they pass the threshold, which decides as Go's single write of
the whole list does.
"""

from __future__ import annotations

import asyncio
import gzip
import zlib
from collections.abc import AsyncGenerator, AsyncIterator

from setpoint.cluster.endpoints.http import Request, Response, StreamResponse

GZIP_THRESHOLD_BYTES = 128 * 1024
"""responsewriters ``defaultGzipThresholdBytes``: larger answers are gzipped."""
GZIP_LEVEL = 1
"""responsewriters ``defaultGzipContentEncodingLevel`` (kubernetes issue 112296)."""
OPENAPI_GZIP_MIN_BYTES = 1400
"""gziphandler ``DefaultMinSize``."""
OPENAPI_GZIP_LEVEL = 6
"""compress/gzip ``DefaultCompression``, which compress/flate takes as level 6."""
PROMHTTP_GZIP_LEVEL = 6
"""promhttp's ``gzipPool`` makes ``gzip.NewWriter``: ``DefaultCompression`` too."""

_PIECE = 1 << 20
"""A whole body is compressed this much at a time, other requests running in between."""


def negotiate_content_encoding(accept_encoding: str) -> str:
    """responsewriters ``negotiateContentEncoding``: ``"gzip"`` when a comma-separated token
    of Accept-Encoding is exactly ``gzip`` once trimmed (so ``gzip;q=1`` or ``GZIP`` is not,
    and ``gzip;q=0`` is not refused either way), else ``""``."""
    for token in accept_encoding.split(","):
        if token.strip(" \t\r\n\v\f") == "gzip":
            return "gzip"
    return ""


def accepts_gzip(accept_encoding: str) -> bool:
    """gziphandler ``acceptsGzip``: the quality ``parseEncodings`` gives ``gzip`` (codings
    in lower case, ``q=`` clamped to 0..1, a coding whose ``q`` does not parse dropped, the
    last mention winning) is above 0."""
    qualities: dict[str, float] = {}
    for coding_text in accept_encoding.split(","):
        coding, quality, ok = "", 1.0, True
        for n, part in enumerate(coding_text.split(";")):
            part = part.strip(" \t\r\n\v\f")
            quality = 1.0  # parseCoding resets it for every part (DefaultQValue)
            if n == 0:
                coding = part.lower()
            elif part.startswith("q="):
                quality, ok = _parse_float(part[2:])
                quality = min(max(quality, 0.0), 1.0)
        if coding and ok:
            qualities[coding] = quality
    return qualities.get("gzip", 0.0) > 0.0


def gzip_accepted(accept_encoding: str) -> bool:
    """promhttp ``gzipAccepted``: a comma-separated token, trimmed, is ``gzip`` or starts
    with ``gzip;`` (so ``gzip;q=0`` is taken as an offer, and ``GZIP`` is not)."""
    for token in accept_encoding.split(","):
        token = token.strip(" \t\r\n\v\f")
        if token == "gzip" or token.startswith("gzip;"):
            return True
    return False


def _parse_float(text: str) -> tuple[float, bool]:
    """strconv.ParseFloat's value (0 on a syntax error) and whether it parsed."""
    try:
        return float(text), text.strip() == text and "_" not in text
    except ValueError:
        return 0.0, False


async def serialized(response: Response, request: Request) -> Response:
    """``response`` (an API object) as SerializeObject's ``deferredResponseWriter`` writes
    it for ``request``."""
    if isinstance(response, StreamResponse):
        if not negotiate_content_encoding(request.headers.get("accept-encoding", "")):
            return response
        return await _deferred_stream(response)
    if len(response.body) <= GZIP_THRESHOLD_BYTES \
            or not negotiate_content_encoding(request.headers.get("accept-encoding", "")):
        return response
    response.body = await _gzipped(response.body, GZIP_LEVEL)
    _mark_gzipped(response)
    return response


def openapi_v2(response: Response, request: Request) -> Response:
    """``response`` (an ``/openapi/v2`` answer) through gziphandler's ``GzipHandler``."""
    response.headers.insert(0, ("vary", "Accept-Encoding"))  # Add, before the handler's
    if len(response.body) >= OPENAPI_GZIP_MIN_BYTES \
            and accepts_gzip(request.headers.get("accept-encoding", "")):
        response.body = _openapi_gzipped(response.body)
        response.set_header("Content-Encoding", "gzip")
    return response


def promhttp(response: Response, request: Request) -> Response:
    """``response`` (the ``/metrics`` text, a few kilobytes) as promhttp writes it."""
    if gzip_accepted(request.headers.get("accept-encoding", "")):
        response.body = gzip.compress(response.body, PROMHTTP_GZIP_LEVEL)
        response.set_header("Content-Encoding", "gzip")
    return response


_openapi_kept: list[tuple[bytes, bytes]] = []
"""The last documents gzipped (JSON and protobuf), by the very bytes they were."""


def _openapi_gzipped(body: bytes) -> bytes:
    """``body`` at gziphandler's level, the last documents' kept: the same few megabytes
    would otherwise be compressed again for every client (the bytes differ from Go's, which
    no client sees once they are decompressed)."""
    for kept, gzipped in _openapi_kept:
        if kept is body:
            return gzipped
    compressor = zlib.compressobj(OPENAPI_GZIP_LEVEL, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    gzipped = compressor.compress(body) + compressor.flush()
    _openapi_kept[:] = [*_openapi_kept[-1:], (body, gzipped)]
    return gzipped


def _mark_gzipped(response: Response) -> None:
    response.set_header("Content-Encoding", "gzip")
    response.add_header("Vary", "Accept-Encoding")


async def _gzipped(body: bytes, level: int) -> bytes:
    """``body`` in gzip, a piece at a time with the loop free in between."""
    compressor = zlib.compressobj(level, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    if len(body) <= _PIECE:
        return compressor.compress(body) + compressor.flush()
    view = memoryview(body)
    out = []
    for start in range(0, len(body), _PIECE):
        if start:
            await asyncio.sleep(0)
        out.append(compressor.compress(view[start:start + _PIECE]))
    out.append(compressor.flush())
    return b"".join(out)


async def _deferred_stream(response: StreamResponse) -> Response:
    """A streamed answer whose parts, held until they pass the threshold, are then gzipped
    as they come; one that ends first is written whole, as it is."""
    chunks = response.chunks
    held: list[bytes] = []
    size = 0
    iterator = aiter(chunks)
    while size <= GZIP_THRESHOLD_BYTES:
        try:
            part = await anext(iterator)
        except StopAsyncIteration:
            whole = Response(b"".join(held), response.status, serialized=True)
            whole.headers = response.headers
            return whole
        held.append(part)
        size += len(part)
    response.chunks = _gzip_stream(held, iterator, chunks)
    _mark_gzipped(response)
    return response


async def _gzip_stream(held: list[bytes], rest: AsyncIterator[bytes],
                       source: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    compressor = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    try:
        for part in held:
            if out := compressor.compress(part):
                yield out
        held.clear()
        async for part in rest:
            if out := compressor.compress(part):
                yield out
        yield compressor.flush()
    finally:
        if isinstance(source, AsyncGenerator):
            await source.aclose()  # its clean-up runs now, as StreamResponse does

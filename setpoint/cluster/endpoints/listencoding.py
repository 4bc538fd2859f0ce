"""A LIST answered without holding the event loop: its items presented and encoded in chunks.

Every request shares one event loop, so a list of many objects presented and encoded in one
go would hold back every other request, health checks included, for as long as it takes
(kube-apiserver serves each request on its own goroutine). The page of stored objects is
taken at once (one revision, one consistent page, as the stored JSON of each object, which
is never changed in place); decoding, presenting each object at the served version and
encoding it, which cost the most, run a chunk at a time with the loop free in between, so
that only a chunk's objects are ever decoded at once. Objects served as stored in JSON are
not decoded at all: their stored JSON is spliced in (``chunk_json``).

One mechanism for every representation of a list: JSON or YAML, the full objects, their
metadata only (``PartialObjectMetadataList``) or a Table's rows. A list encodes as its other
fields with the list (``items``, a Table's ``rows``) spliced in, chunk by chunk: in JSON the
list's elements are joined with commas, in YAML a block sequence is the concatenation of the
sequences of its chunks.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

from setpoint.machinery.objects import Obj

LIST_CHUNK_ITEMS = 500
LIST_CHUNK_BYTES = 1 << 20
"""A chunk of objects spliced in as stored JSON ends after this many bytes: what a streamed
LIST holds encoded at once, while its client reads, whatever the size of its objects."""

YAML_CHUNK_ITEMS = 25
"""A chunk of a YAML list: PyYAML's emitter is Python, about twenty times JSON's cost per
object (a chunk of 500 ConfigMaps held the loop 0.3 s), so a chunk of this many holds it
about as long as a JSON chunk does. Other requests run only between chunks, one loop turn
each: a /readyz on a new TLS connection needs about ten turns, which at 500 objects a chunk
took seconds, and on a starved machine the request timeout."""

_ENCODER_NEWLINE = b"\n"  # json.NewEncoder(w).Encode's, after the list (responses.encode)
_JSON_LIST_END = b"]}" + _ENCODER_NEWLINE

T = TypeVar("T")


async def chunks(items: list[T], size: int = LIST_CHUNK_ITEMS) -> AsyncIterator[list[T]]:
    """``items`` ``size`` at a time, other requests running between chunks."""
    for start in range(0, len(items), size):
        if start:
            await asyncio.sleep(0)  # other requests run between chunks
        yield items[start:start + size]


async def stored_chunks(raws: list[bytes]) -> AsyncIterator[list[bytes]]:
    """Stored JSON objects a chunk at a time, a chunk ending at :data:`LIST_CHUNK_ITEMS`
    objects or after :data:`LIST_CHUNK_BYTES` bytes, other requests running between."""
    start = 0
    while start < len(raws):
        if start:
            await asyncio.sleep(0)
        end, size = start, 0
        while end < len(raws) and end - start < LIST_CHUNK_ITEMS and size < LIST_CHUNK_BYTES:
            size += len(raws[end])
            end += 1
        yield raws[start:end]
        start = end


async def in_chunks(items: list[Any], convert: Callable[[list[Any]], list[T]]) -> list[T]:
    """``convert`` applied to ``items`` a chunk at a time, the loop free in between (a Table's
    rows, for instance)."""
    out: list[T] = []
    async for chunk in chunks(items):
        out.extend(convert(chunk))
    return out


async def encode_list(listed: Obj, view: Callable[[Any], Any], dumps: Callable[[Any], bytes],
                      *, yaml: bool = False, key: str = "items",
                      chunk_json: Callable[[list[Any]], bytes] | None = None) -> bytes:
    """``listed`` encoded by ``dumps`` (JSON, or block-style YAML when ``yaml``), with ``view``
    applied to each element of its list ``key`` a chunk at a time; in JSON, ``chunk_json``
    (when given) encodes a chunk's elements, comma-separated, instead. ``dumps`` encodes a
    part, and the JSON answer ends with Encoder.Encode's newline as any other does."""
    if not listed[key]:
        empty = dumps({k: v if k != key else [] for k, v in listed.items()})
        return empty if yaml else empty + _ENCODER_NEWLINE
    if yaml:
        return await _encode_yaml(listed, view, dumps, key)
    return b"".join([part async for part in json_parts(listed, view, dumps, key, chunk_json)])


async def json_parts(listed: Obj, view: Callable[[Any], Any], dumps: Callable[[Any], bytes],
                     key: str = "items", chunk_json: Callable[[list[Any]], bytes] | None = None,
                     ) -> AsyncIterator[bytes]:
    """``listed`` (its list ``key`` not empty) in JSON, a chunk of its elements at a time: the
    parts :func:`encode_list` joins, or a streamed answer writes one by one, so that no more
    than a chunk's encoding need be held at once."""
    head = dumps({k: v for k, v in listed.items() if k != key})
    opening = head[:-1] + (f',"{key}":[' if len(head) > 2 else f'"{key}":[').encode()
    parts = chunks(listed[key]) if chunk_json is None else stored_chunks(listed[key])
    async for chunk in parts:
        part = (chunk_json(chunk) if chunk_json is not None
                else dumps([view(obj) for obj in chunk])[1:-1])
        yield opening + part if opening else b"," + part
        opening = b""
    yield _JSON_LIST_END


async def _encode_yaml(listed: Obj, view: Callable[[Obj], Any], dumps: Callable[[Any], bytes],
                       key: str) -> bytes:
    """The fields before ``key``, then ``key`` and its sequence in chunks, then the fields
    after it: the document the whole mapping dumps to, its keys in goyaml.v2's order."""
    from setpoint.cluster.serializer.yamlencode import sorted_keys

    names = sorted_keys(listed)
    at = names.index(key)
    before = {k: listed[k] for k in names[:at]}
    after = {k: listed[k] for k in names[at + 1:]}
    parts = [dumps(before) if before else b"", f"{key}:\n".encode()]
    async for chunk in chunks(listed[key], YAML_CHUNK_ITEMS):
        parts.append(dumps([view(obj) for obj in chunk]))
    parts.append(dumps(after) if after else b"")
    return b"".join(parts)

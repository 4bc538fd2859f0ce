"""A LIST answered without holding the event loop: its items presented and encoded in chunks.

Every request shares one event loop, so a list of many objects presented and encoded in one
go would hold back every other request, health checks included, for as long as it takes
(kube-apiserver serves each request on its own goroutine). The page of stored objects is
taken at once (one revision, one consistent page); presenting each object at the served
version and encoding it, which cost the most, run a chunk at a time with the loop free in
between. Stored objects are never mutated, so the page stays what it was while others write.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

import orjson

from setpoint.machinery.objects import Obj

LIST_CHUNK_ITEMS = 500

T = TypeVar("T")


async def encode_list(listed: Obj, view: Callable[[Obj], Obj]) -> bytes:
    """The JSON of ``listed`` with ``view`` applied to each of its items (``items`` last)."""
    items = listed["items"]
    head = orjson.dumps({k: v for k, v in listed.items() if k != "items"})
    parts = [head[:-1], b',"items":[' if len(head) > 2 else b'"items":[']
    for start in range(0, len(items), LIST_CHUNK_ITEMS):
        if start:
            parts.append(b",")
            await asyncio.sleep(0)  # other requests run between chunks
        chunk = [view(obj) for obj in items[start:start + LIST_CHUNK_ITEMS]]
        parts.append(orjson.dumps(chunk)[1:-1])
    parts.append(b"]}")
    return b"".join(parts)


async def in_chunks(items: list[Obj], convert: Callable[[list[Obj]], list[T]]) -> list[T]:
    """``convert`` applied to ``items`` a chunk at a time, the loop free in between (a Table's
    rows, for instance)."""
    out: list[T] = []
    for start in range(0, len(items), LIST_CHUNK_ITEMS):
        if start:
            await asyncio.sleep(0)  # other requests run between chunks
        out.extend(convert(items[start:start + LIST_CHUNK_ITEMS]))
    return out

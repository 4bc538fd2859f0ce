"""A list-then-watch mirror of one collection, for benchmarks that wait on what they see.

The benchmark's clock must stop when the server shows a state, not when a poll happens to
look: a :class:`Mirror` lists a collection, then watches it from the list's resourceVersion
(resuming from the last one seen when the server ends a watch) and hands every change to a
callback, which decides when the wait is over.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

import aiohttp
import orjson

Obj = dict[str, Any]
OnEvent = Callable[[str, Obj], None]


class WatchFailed(RuntimeError):
    """The watch ended with an ERROR event (e.g. 410 Expired) or an HTTP error."""


class Mirror:
    """The objects of ``path`` (a collection URL such as ``/api/v1/namespaces/b/pods``),
    kept current by a watch; ``on_event(type, obj)`` hears every change, starting with
    one ``ADDED`` per listed object."""

    def __init__(self, session: aiohttp.ClientSession, path: str, on_event: OnEvent) -> None:
        self.session = session
        self.path = path
        self.on_event = on_event
        self.objects: dict[str, Obj] = {}
        self.events = 0
        self.resource_version = ""
        self._task: asyncio.Task[None] | None = None

    def __repr__(self) -> str:
        return f"Mirror({self.path!r}, objects={len(self.objects)}, events={self.events})"

    async def start(self) -> Mirror:
        """List, replay the list as ``ADDED`` events, then watch in the background."""
        async with self.session.get(self.path) as r:
            if r.status != 200:
                raise WatchFailed(f"list {self.path}: {r.status} {await r.text()}")
            listed = orjson.loads(await r.read())
        self.resource_version = listed["metadata"]["resourceVersion"]
        for obj in listed.get("items") or ():
            self._apply("ADDED", obj)
        self._task = asyncio.create_task(self._watch(), name=f"watch {self.path}")
        return self

    async def wait(self, done: asyncio.Event, timeout: float) -> None:
        """Return once ``done`` is set; raise if the watch failed first or on timeout."""
        assert self._task is not None, "start() first"
        waiter = asyncio.create_task(done.wait())
        try:
            finished, _ = await asyncio.wait({waiter, self._task}, timeout=timeout,
                                             return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()
        if not done.is_set():
            if self._task in finished:
                self._task.result()  # raises the watch's failure
                raise WatchFailed(f"watch of {self.path} ended")
            raise TimeoutError(f"not done after {timeout:.0f}s ({self!r})")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def _apply(self, kind: str, obj: Obj) -> None:
        name = obj["metadata"]["name"]
        if kind == "DELETED":
            self.objects.pop(name, None)
        else:
            self.objects[name] = obj
        self.events += 1
        self.on_event(kind, obj)

    async def _watch(self) -> None:
        # the server ends a watch after timeoutSeconds; resume from the last version seen
        while True:
            url = (f"{self.path}?watch=true&allowWatchBookmarks=true&timeoutSeconds=1800"
                   f"&resourceVersion={self.resource_version}")
            async with self.session.get(url, timeout=aiohttp.ClientTimeout(total=None)) as r:
                if r.status != 200:
                    raise WatchFailed(f"watch {self.path}: {r.status} {await r.text()}")
                async for line in r.content:
                    if not line.strip():
                        continue
                    event = orjson.loads(line)
                    kind, obj = event["type"], event["object"]
                    if kind == "ERROR":
                        raise WatchFailed(f"watch {self.path}: {obj.get('message')}")
                    self.resource_version = obj["metadata"]["resourceVersion"]
                    if kind != "BOOKMARK":
                        self._apply(kind, obj)

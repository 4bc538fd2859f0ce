"""Filling a cache with the kinds a stack is made of: once, or kept current by informers.

A one-shot command (``setpoint graph``) lists each kind exactly once, all in parallel: the
built-in kinds and the CRDs together, then the custom kinds the CRDs serve (and the kinds
their ``resource/composition`` names). A long-running one (``setpoint metrics --serve``)
runs an informer per kind instead, and one more for every CRD that appears, so queries
against it never call the API server.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable
from typing import Any

from setpoint.client import ApiError, Client, Kind, UnauthorizedError, UnknownResourceError
from setpoint.platform.kinds import CRD, KindInfo, builtin_kinds, custom_kinds
from setpoint.platform.settle import gather_settled
from setpoint.resources.relationships import parse_composition
from setpoint.runtime import Cache, Informer

log = logging.getLogger(__name__)


def _composition_kinds(crds: Iterable[dict[str, Any]], known: set[str]) -> list[str]:
    names: list[str] = []
    for crd in crds:
        annotations = (crd.get("metadata") or {}).get("annotations") or {}
        names += [k for k in parse_composition(annotations) if k not in known]
    return names


async def _list_into(client: Client, cache: Cache, kind: Kind) -> None:
    store = cache.store_for(kind, create=True)
    try:
        listed = await client.list(kind)
    except UnauthorizedError:
        raise  # rejected credentials list nothing: not "no objects of this kind"
    except ApiError as exc:
        # a kind this server does not serve (or we may not list) is a kind with no objects
        log.info("graph_list_skipped kind=%s code=%s", kind.kind, exc.code)
        return
    for item in listed.items:
        metadata = item.get("metadata")
        if isinstance(metadata, dict):
            metadata.pop("managedFields", None)
    store.replace(listed.items)


async def load_cache(client: Client, cache: Cache | None = None) -> Cache:
    """A cache holding every object of the kinds a stack can contain, each kind listed once."""
    cache = cache if cache is not None else Cache()
    builtins = builtin_kinds()
    await gather_settled(*(_list_into(client, cache, k.ref) for k in builtins))
    crds = [dict(c) for c in cache.store_for(CRD)]
    custom = custom_kinds(crds)
    known = {k.kind for k in builtins} | {k.kind for k in custom}
    missing = _composition_kinds(crds, known)
    if missing:
        log.info("graph_composition_unknown kinds=%s", ",".join(sorted(set(missing))))
    await gather_settled(*(_list_into(client, cache, k.ref) for k in custom))
    return cache


class Watch:
    """Informers for every kind a stack can contain, over one cache (until ``stop``)."""

    def __init__(self, client: Client, cache: Cache | None = None) -> None:
        self.client = client
        self.cache = cache if cache is not None else Cache()
        self.informers: dict[tuple[str, str], Informer] = {}
        self._tasks: set[asyncio.Task[Any]] = set()

    async def _start(self, kind: KindInfo) -> Informer | None:
        key = (kind.api_version, kind.kind)
        if key in self.informers:
            return None
        try:
            await self.client.resolve(kind.ref)
        except (ApiError, UnknownResourceError):
            return None  # not served here: nothing to watch
        if key in self.informers:
            return None
        informer = Informer(self.client, kind.ref,
                            store=self.cache.store_for(kind.ref, create=True))
        self.informers[key] = informer
        self._spawn(informer.run())
        return informer

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def on_add(self, obj: Any) -> None:
        for kind in custom_kinds([obj]):
            if (kind.api_version, kind.kind) not in self.informers:
                self._spawn(self._start(kind))

    def on_update(self, old: Any, new: Any) -> None:
        self.on_add(new)

    def on_delete(self, obj: Any) -> None:
        """A deleted CRD's objects go with it; its informer then holds none."""

    async def start(self) -> None:
        """Start every informer and wait until their first lists are in."""
        started = await gather_settled(*(self._start(k) for k in builtin_kinds()))
        for informer in started:
            if informer is not None and informer.kind.kind == CRD.kind:
                informer.add_handler(self)
        await self.wait_synced()

    async def wait_synced(self) -> None:
        """Until every informer has listed (or been refused: it has nothing to show)."""
        async def one(informer: Informer) -> None:
            waits = [asyncio.ensure_future(informer.wait_synced()),
                     asyncio.ensure_future(informer.refused.wait())]
            _, pending = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            for task in pending:
                task.cancel()
        await gather_settled(*(one(i) for i in list(self.informers.values())))

    async def stop(self) -> None:
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

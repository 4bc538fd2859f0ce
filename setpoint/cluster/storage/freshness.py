"""Reads that must wait for a revision: the watch cache's ``waitUntilFreshAndBlock``.

A GET with a resourceVersion, a LIST the watch cache serves and a watch that sends initial
events must see at least the revision they name (k8s.io/apiserver/pkg/storage/cacher/
watch_cache.go). When the store has not reached it, the request waits up to ``blockTimeout``
(3 s) for a write that does, then fails with ``NewTooLargeResourceVersionError``. The wait is
an asyncio future resolved by the store's event listener: nothing blocks the event loop and a
waiter costs nothing until a write reaches its revision or its time runs out.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools

from setpoint.cluster.storage.store import Event, Store

# watch_cache.go blockTimeout: how long a read waits for a revision not yet reached
BLOCK_TIMEOUT_S = 3.0


class Freshness:
    """Waiters for revisions of one store, woken by its writes."""

    def __init__(self, store: Store) -> None:
        self._store = store
        # (revision, tie-breaker, future): the lowest revision first
        self._waiters: list[tuple[int, int, asyncio.Future[None]]] = []
        self._order = itertools.count()
        # the wait; a test harness that sends many such reads on purpose may shorten it
        self.block_timeout = BLOCK_TIMEOUT_S
        store.add_listener(self._on_event)

    @property
    def waiting(self) -> int:
        """Requests waiting for a revision now (the watch cache's ``waitingUntilFresh``)."""
        return len(self._waiters)

    async def wait_until_fresh(self, revision: int) -> bool:
        """Whether the store reached ``revision``, waiting up to ``block_timeout`` for it."""
        if self._store.revision >= revision:
            return True
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (revision, next(self._order), fut)
        heapq.heappush(self._waiters, entry)
        try:
            await asyncio.wait_for(fut, self.block_timeout)
        except TimeoutError:
            pass
        finally:
            if not fut.done() or fut.cancelled():  # timed out or the request went away
                self._forget(entry)
        return self._store.revision >= revision

    def _forget(self, entry: tuple[int, int, asyncio.Future[None]]) -> None:
        try:
            self._waiters.remove(entry)
        except ValueError:
            return
        heapq.heapify(self._waiters)

    def _on_event(self, event: Event) -> None:
        waiters = self._waiters
        while waiters and waiters[0][0] <= event.revision:
            _, _, fut = heapq.heappop(waiters)
            if not fut.done():
                fut.set_result(None)

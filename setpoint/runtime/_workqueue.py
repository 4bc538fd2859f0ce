"""The workqueue between "what changed" (informers) and "what to do" (reconcile workers).

Modelled on client-go's ``workqueue``:

- an item (a reconcile request) is queued at most once: adding it again while it waits is
  a no-op, which is what turns a burst of events into a single reconcile;
- an item is handed to one worker at a time: added while a worker processes it, it is
  marked *dirty* and queued again only when that worker calls :meth:`WorkQueue.done`;
- :meth:`WorkQueue.add_after` delays an item (keeping the earliest time when asked twice),
  :meth:`WorkQueue.add_rate_limited` delays it by what the rate limiter says (per-item
  exponential backoff and an overall token bucket), :meth:`WorkQueue.forget` resets it;
- :meth:`WorkQueue.shutdown` stops the queue; :meth:`WorkQueue.shutdown_with_drain` also
  waits for the items workers hold. Items still waiting are dropped, on purpose: a
  controller rebuilds its queue from the cache when it starts again (level-triggered).

Everything runs on one event loop; nothing here is thread-safe, and nothing needs to be.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable, Hashable
from typing import Generic, Protocol, TypeVar

from setpoint.runtime._ratelimit import RateLimiter, default_controller_rate_limiter

K = TypeVar("K", bound=Hashable)


class ShutDown(Exception):
    """The queue was shut down: the worker asking for an item should stop."""


class QueueMetrics(Protocol):
    """What a queue reports (``workqueue_*`` metrics); see :mod:`setpoint.runtime._metrics`."""

    def added(self) -> None: ...
    def depth(self, depth: int) -> None: ...
    def got(self, queued_for: float) -> None: ...
    def finished(self, worked_for: float) -> None: ...
    def retried(self) -> None: ...


class _NoMetrics:
    def added(self) -> None:
        pass

    def depth(self, depth: int) -> None:
        pass

    def got(self, queued_for: float) -> None:
        pass

    def finished(self, worked_for: float) -> None:
        pass

    def retried(self) -> None:
        pass


class WorkQueue(Generic[K]):
    """A deduplicating, rate-limited, delaying queue of hashable items."""

    def __init__(
        self, name: str = "", *, rate_limiter: RateLimiter | None = None,
        metrics: QueueMetrics | None = None, clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = name
        self.rate_limiter = rate_limiter or default_controller_rate_limiter()
        self._metrics: QueueMetrics = metrics or _NoMetrics()
        self._clock = clock
        self._queue: deque[K] = deque()
        self._dirty: set[K] = set()
        self._processing: dict[K, float] = {}   # item -> when a worker took it
        self._queued_at: dict[K, float] = {}
        self._waiting: dict[K, tuple[float, asyncio.TimerHandle]] = {}
        self._getters: deque[asyncio.Future[None]] = deque()
        self._idle: asyncio.Event | None = None
        self._shutting_down = False

    def __repr__(self) -> str:
        return (f"WorkQueue({self.name!r}, queued={len(self._queue)}, "
                f"processing={len(self._processing)}, waiting={len(self._waiting)})")

    def __len__(self) -> int:
        """Items ready to be handed out (not counting delayed or in-progress ones)."""
        return len(self._queue)

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    @property
    def processing(self) -> int:
        """Items that workers hold right now."""
        return len(self._processing)

    @property
    def waiting(self) -> int:
        """Items scheduled for later by :meth:`add_after` or :meth:`add_rate_limited`."""
        return len(self._waiting)

    def unfinished_work(self) -> tuple[float, float]:
        """Seconds workers have spent on the items they hold, summed and the longest (the
        ``workqueue_unfinished_work_seconds`` and ``_longest_running_processor_seconds``
        of client-go's ``updateUnfinishedWork``)."""
        if not self._processing:
            return 0.0, 0.0
        now = self._clock()
        ages = [now - started for started in self._processing.values()]
        return sum(ages), max(ages)

    # -- adding ----------------------------------------------------------------------------

    def add(self, item: K) -> None:
        """Queue ``item`` unless it is already queued; if a worker holds it, queue it again
        once that worker is done."""
        if self._shutting_down or item in self._dirty:
            return
        self._metrics.added()
        self._dirty.add(item)
        self._queued_at[item] = self._clock()
        if item in self._processing:
            return
        self._queue.append(item)
        self._metrics.depth(len(self._queue))
        self._wake_one()

    def add_after(self, item: K, delay: float) -> None:
        """Queue ``item`` after ``delay`` seconds; asked again, the earliest time wins.
        Counted in ``workqueue_retries_total``, as client-go's delaying queue counts every
        ``AddAfter`` (a ``requeue_after`` too, not only a rate-limited retry)."""
        if self._shutting_down:
            return
        self._metrics.retried()
        if delay <= 0:
            self._cancel_wait(item)
            self.add(item)
            return
        loop = asyncio.get_running_loop()
        ready_at = loop.time() + delay
        current = self._waiting.get(item)
        if current is not None:
            if current[0] <= ready_at:
                return
            current[1].cancel()
        handle = loop.call_at(ready_at, self._ready, item)
        self._waiting[item] = (ready_at, handle)

    def add_rate_limited(self, item: K) -> float:
        """Queue ``item`` after the rate limiter's delay (a retry: counts one failure);
        returns the delay."""
        delay = self.rate_limiter.when(item)
        self.add_after(item, delay)
        return delay

    def forget(self, item: K) -> None:
        """``item`` succeeded: reset its backoff."""
        self.rate_limiter.forget(item)

    def num_requeues(self, item: K) -> int:
        """How many times ``item`` was retried since it was last forgotten."""
        return self.rate_limiter.retries(item)

    def _ready(self, item: K) -> None:
        self._waiting.pop(item, None)
        self.add(item)

    def _cancel_wait(self, item: K) -> None:
        current = self._waiting.pop(item, None)
        if current is not None:
            current[1].cancel()

    # -- taking ----------------------------------------------------------------------------

    async def get(self) -> K:
        """The next item, waiting for one; raises :class:`ShutDown` once the queue is shut
        down. The caller must call :meth:`done` with it when finished."""
        while not self._queue:
            if self._shutting_down:
                raise ShutDown(self.name)
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._getters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                # pass a wake-up we swallowed on to the next getter
                if waiter.done() and not waiter.cancelled():
                    self._wake_one()
                raise
        item = self._queue.popleft()
        now = self._clock()
        self._metrics.depth(len(self._queue))
        self._metrics.got(now - self._queued_at.pop(item, now))
        self._processing[item] = now
        self._dirty.discard(item)
        return item

    def done(self, item: K) -> None:
        """A worker finished ``item``; if it was added meanwhile, it is queued again."""
        started = self._processing.pop(item, None)
        if started is not None:
            self._metrics.finished(self._clock() - started)
        if item in self._dirty and not self._shutting_down:
            self._queue.append(item)
            self._metrics.depth(len(self._queue))
            self._wake_one()
        if not self._processing and self._idle is not None:
            self._idle.set()

    def _wake_one(self) -> None:
        while self._getters:
            waiter = self._getters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    # -- stopping --------------------------------------------------------------------------

    def shutdown(self) -> None:
        """Stop the queue: adds are ignored, waiting and delayed items dropped, and every
        worker blocked in :meth:`get` gets :class:`ShutDown`."""
        self._shutting_down = True
        for _, handle in self._waiting.values():
            handle.cancel()
        self._waiting.clear()
        self._queue.clear()
        self._dirty.clear()
        self._queued_at.clear()
        self._metrics.depth(0)
        while self._getters:
            waiter = self._getters.popleft()
            if not waiter.done():
                waiter.set_result(None)

    async def shutdown_with_drain(self, timeout: float | None = None) -> bool:
        """:meth:`shutdown`, then wait until workers are done with the items they hold.
        Returns False when ``timeout`` passed first."""
        self.shutdown()
        if not self._processing:
            return True
        self._idle = asyncio.Event()
        try:
            await asyncio.wait_for(self._idle.wait(), timeout)
        except TimeoutError:
            return False
        return True

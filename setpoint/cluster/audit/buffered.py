"""The audit modes (k8s.io/apiserver pkg/server/options/audit.go
``AuditBatchOptions.wrapBackend``) and the buffered backend of ``batch``
(plugin/pkg/audit/buffered/buffered.go).

``blocking`` calls the backend on the request's path and ignores its failures
(``ignoreErrorsBackend``); ``blocking-strict`` calls it there and a failure at
RequestReceived fails the request (filters/audit.go); ``batch`` queues the events (at most
``buffer_size``; more are dropped: "audit buffer queue blocked") and hands them on in
batches of up to ``max_batch_size``, at the latest ``max_batch_wait`` after the batch
began, at most ``throttle_qps`` batches a second (a token bucket of ``throttle_burst``)
when throttled; asynchronously (each batch on its own task) when the delegate is a webhook."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections import deque
from typing import TYPE_CHECKING

from setpoint.cluster.audit.backend import Backend, Event, Result
from setpoint.cluster.audit.metrics import plugin_error

if TYPE_CHECKING:
    from setpoint.cluster.audit.options import BatchConfig, BatchOptions

PLUGIN_NAME = "buffered"


def wrap_mode(delegate: Backend, options: BatchOptions) -> Backend:
    """``wrapBackend``."""
    if options.mode == "blocking-strict":
        return delegate
    if options.mode == "blocking":
        return IgnoreErrors(delegate)
    return Buffered(delegate, options.config)


async def _true(result: Result) -> bool:
    if inspect.isawaitable(result):
        await result
    return True


class IgnoreErrors:
    """``ignoreErrorsBackend``: the delegate's failures are its own (it logs them)."""

    def __init__(self, delegate: Backend) -> None:
        self.delegate = delegate

    def __repr__(self) -> str:
        return f"ignoreErrors<{self.delegate!r}>"

    def process_events(self, events: list[Event]) -> Result:
        result = self.delegate.process_events(events)
        return _true(result) if inspect.isawaitable(result) else True

    async def shutdown(self) -> None:
        await self.delegate.shutdown()


class _TokenBucket:
    """client-go flowcontrol's token bucket: ``qps`` tokens a second, ``burst`` at most."""

    def __init__(self, qps: float, burst: int) -> None:
        self.qps, self.burst = qps, burst
        self.tokens = float(burst)
        self.at = time.monotonic()

    def wait_s(self) -> float:
        """Take a token; how long to wait for it (``Accept``)."""
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.qps)
        self.at = now
        self.tokens -= 1
        return 0.0 if self.tokens >= 0 else -self.tokens / self.qps


class Buffered:
    """``bufferedBackend``."""

    def __init__(self, delegate: Backend, config: BatchConfig) -> None:
        self.delegate = delegate
        self.config = config
        self._buffer: deque[Event] = deque()
        self._throttle = _TokenBucket(config.throttle_qps, config.throttle_burst) \
            if config.throttle_enable else None
        self._timer: asyncio.TimerHandle | None = None
        self._drainer: asyncio.Task[None] | None = None
        self._sending: set[asyncio.Task[bool]] = set()
        self._stopped = False

    def __repr__(self) -> str:
        return f"buffered<{self.delegate!r}>"

    def process_events(self, events: list[Event]) -> bool:
        """``ProcessEvents``: queued (the events are snapshots already: no copy); those
        that do not fit are dropped and said so. Always True, as Go's."""
        for i, event in enumerate(events):
            if self._stopped:
                plugin_error(PLUGIN_NAME, "audit backend shut down", events[i:])
                return True
            if len(self._buffer) >= self.config.buffer_size:
                plugin_error(PLUGIN_NAME, "audit buffer queue blocked", events[i:])
                return True
            self._buffer.append(event)
        self._schedule()
        return True

    def _schedule(self) -> None:
        if self._drainer is not None or not self._buffer:
            return
        if len(self._buffer) >= self.config.max_batch_size or self.config.max_batch_size <= 1:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self._drainer = asyncio.get_running_loop().create_task(self._drain())
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(
                self.config.max_batch_wait, self._waited)

    def _waited(self) -> None:
        self._timer = None
        if self._drainer is None and self._buffer:
            self._drainer = asyncio.get_running_loop().create_task(self._drain(whole=True))

    async def _drain(self, whole: bool = False) -> None:
        """``processIncomingEvents``: full batches (and, once the wait is over or the
        backend stops, the last partial one) handed on in order."""
        try:
            while self._buffer and (whole or len(self._buffer) >= self.config.max_batch_size
                                    or self.config.max_batch_size <= 1 or self._stopped):
                size = min(len(self._buffer), self.config.max_batch_size)
                batch = [self._buffer.popleft() for _ in range(size)]
                await self._process(batch)
        finally:
            self._drainer = None
        self._schedule()

    async def _process(self, batch: list[Event]) -> None:
        """``processEvents``: throttled, then the delegate called (on a task of its own
        when it is asynchronous)."""
        if self._throttle is not None and not self._stopped:
            wait = self._throttle.wait_s()
            if wait > 0:
                await asyncio.sleep(wait)
        result = self.delegate.process_events(batch)
        if inspect.isawaitable(result):
            if self.config.async_delegate:
                task = asyncio.ensure_future(result)
                self._sending.add(task)
                task.add_done_callback(self._sending.discard)
            else:
                await result

    async def shutdown(self) -> None:
        """``Shutdown``: what is queued handed on, every batch sent, then the delegate."""
        self._stopped = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._drainer is not None:
            await self._drainer
        while self._buffer:
            size = min(len(self._buffer), self.config.max_batch_size)
            await self._process([self._buffer.popleft() for _ in range(size)])
        if self._sending:
            await asyncio.gather(*self._sending, return_exceptions=True)
        await self.delegate.shutdown()

"""The ``events.k8s.io/v1`` recorder (client-go ``tools/events``), which the kube-scheduler
writes its events with (``Scheduled``, ``FailedScheduling``). Operators and the other
components record core/v1 Events with :class:`~setpoint.runtime._events.EventRecorder`,
as client-go's ``tools/record`` and controller-runtime do.

Recording never blocks a reconcile: :meth:`EventRecorder.event` queues the event and a
background task writes it. As client-go's ``tools/events`` does, repeats are aggregated
into a series instead of new objects: the first occurrence creates an Event, the second
patches ``series`` (count 2, ``lastObservedTime``), later ones only count in memory and are
written by a periodic flush; a series idle for 6 minutes is finished and forgotten. An
event repeats an earlier one when its type, reason, action and its regarding and related
references (their resourceVersion included) are the same, whatever its note (``getKey``). New
events are rate-limited per regarding object by a token bucket (burst 25, one token per 5
minutes, client-go's spam filter), so a hot loop cannot flood the API server.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from setpoint.client import Client, Kind, PatchType
from setpoint.machinery.metatime import micro_time
from setpoint.runtime._events import NORMAL, WARNING, TypedEvents, object_reference
from setpoint.runtime._logs import format_fields
from setpoint.runtime._retries import error_text

log = logging.getLogger(__name__)

EVENT = Kind("events.k8s.io/v1", "Event")
MAX_NOTE_BYTES = 1024


def _truncate(note: str) -> str:
    data = note.encode()
    if len(data) <= MAX_NOTE_BYTES:
        return note
    return data[:MAX_NOTE_BYTES - 3].decode(errors="ignore") + "..."


@dataclass
class _Series:
    name: str
    namespace: str
    count: int = 1
    last_observed: float = 0.0
    written_count: int = 1
    created: bool = False


@dataclass
class _Bucket:
    tokens: float
    updated: float


@dataclass
class _Pending:
    key: tuple[Any, ...]
    body: dict[str, Any] = field(repr=False)


class SeriesEventRecorder(TypedEvents):
    """Records events.k8s.io/v1 events about objects on behalf of one controller instance."""

    def __init__(
        self, client: Client, *, reporting_controller: str,
        reporting_instance: str | None = None, burst: int = 25, refill_every: float = 300.0,
        flush_interval: float = 30.0, series_idle: float = 360.0, max_pending: int = 1000,
        senders: int = 4, clock: Callable[[], float] = time.time,
    ) -> None:
        self.client = client
        self.reporting_controller = reporting_controller
        self.reporting_instance = reporting_instance or \
            f"{reporting_controller}-{socket.gethostname()}"
        self.burst, self.refill_every = burst, refill_every
        self.flush_interval, self.series_idle = flush_interval, series_idle
        # a few writes in flight: one at a time falls behind a busy controller's events
        self.senders = max(1, senders)
        self._clock = clock
        # both in the order of their last use, so that a flush finds the idle ones at the
        # front instead of reading every series and bucket of the last minutes
        self._series: dict[tuple[Any, ...], _Series] = {}
        self._buckets: dict[str, _Bucket] = {}
        self._unwritten: dict[tuple[Any, ...], None] = {}
        """Series counted since their count was last written (the next flush writes them)."""
        self._queue: asyncio.Queue[_Pending] = asyncio.Queue(max_pending)
        self._tasks: list[asyncio.Task[None]] = []
        self.dropped = 0
        """Events not recorded (rate-limited or queue full)."""

    def __repr__(self) -> str:
        return (f"SeriesEventRecorder({self.reporting_controller!r}, "
                f"instance={self.reporting_instance!r}, series={len(self._series)})")

    # -- recording -------------------------------------------------------------------------

    def event(self, regarding: object, type_: str, reason: str, note: str, *,
              action: str | None = None, related: object | None = None) -> None:
        """Queue an event about ``regarding`` (dict or typed object). ``action`` is what
        was done (defaults to ``reason``)."""
        if type_ not in (NORMAL, WARNING):
            raise ValueError("event type must be Normal or Warning")
        ref = object_reference(regarding)
        related_ref = object_reference(related) if related is not None else None
        note = _truncate(note)
        action = action or reason
        # getKey (tools/events/event_broadcaster.go): type, action, reason, the recorder's
        # controller and instance (this recorder's own) and the whole regarding and related
        # references, their resourceVersion included; not the note: the same object at the
        # same version with another note counts on the first event's series
        key = (_reference_key(ref), type_, reason, action,
               _reference_key(related_ref) if related_ref else None)
        now = self._clock()
        series = self._series.pop(key, None)
        if series is not None:
            self._series[key] = series  # now the most recently observed
            series.count += 1
            series.last_observed = now
            if series.created:
                self._unwritten[key] = None
                if series.count == 2:
                    self._enqueue(_Pending(key, {}))
            return
        subject = ref.get("uid") or (ref.get("kind"), ref.get("namespace"), ref.get("name"))
        if not self._take_token(str(subject), now):
            self.dropped += 1
            log.debug("event_rate_limited regarding=%s reason=%s", ref.get("name"), reason)
            return
        namespace = ref.get("namespace") or "default"
        name = f"{ref.get('name', 'event')}.{time.time_ns():x}"
        body: dict[str, Any] = {
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "eventTime": micro_time(now), "reportingController": self.reporting_controller,
            "reportingInstance": self.reporting_instance, "action": action, "reason": reason,
            "type": type_, "note": note, "regarding": ref,
        }
        if related_ref:
            body["related"] = related_ref
        self._series[key] = _Series(name, namespace, last_observed=now)
        self._enqueue(_Pending(key, body))

    def _enqueue(self, pending: _Pending) -> None:
        try:
            self._queue.put_nowait(pending)
        except asyncio.QueueFull:
            self.dropped += 1

    def _take_token(self, subject: str, now: float) -> bool:
        bucket = self._buckets.pop(subject, None)
        if bucket is None:
            bucket = _Bucket(float(self.burst), now)
        self._buckets[subject] = bucket  # now the most recently used
        bucket.tokens = min(float(self.burst),
                            bucket.tokens + (now - bucket.updated) / self.refill_every)
        bucket.updated = now
        if bucket.tokens < 1.0:
            return False
        bucket.tokens -= 1.0
        return True

    # -- writing ---------------------------------------------------------------------------

    async def start(self) -> None:
        """Start writing queued events in the background."""
        if not self._tasks:
            self._tasks = [asyncio.create_task(self._send_loop(), name=f"event-sender-{i}")
                           for i in range(self.senders)]
            self._tasks.append(asyncio.create_task(self._flush_loop(), name="event-flush"))

    async def stop(self, timeout: float = 5.0) -> None:
        """Write what is queued and the pending series counts (within ``timeout``), then
        stop."""
        try:
            await asyncio.wait_for(self._drain(), timeout)
        except TimeoutError:
            if self._queue.qsize():  # a crash stop has no time: say so only if events are lost
                log.warning("event_recorder_stop_timeout pending=%d", self._queue.qsize())
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []

    async def _drain(self) -> None:
        async def drain_one() -> None:
            while not self._queue.empty():
                await self._send(self._queue.get_nowait())

        await asyncio.gather(*(drain_one() for _ in range(self.senders)))
        await self.flush()

    async def _send_loop(self) -> None:
        while True:
            pending = await self._queue.get()
            await self._send(pending)

    async def _flush_loop(self) -> None:
        while True:
            await asyncio.sleep(self.flush_interval)
            await self.flush()

    async def _send(self, pending: _Pending) -> None:
        series = self._series.get(pending.key)
        try:
            if pending.body:
                await self.client.create(pending.body)
                if series is not None:
                    series.created = True
                    if series.count > 1:
                        await self._patch_series(series)
            elif series is not None:
                await self._patch_series(series)
        except Exception as exc:
            if series is not None and series.created and series.count > series.written_count:
                self._unwritten[pending.key] = None  # the next flush writes the count
            log.warning("event_write_failed reason=%s %s",
                        pending.body.get("reason") if pending.body else "series",
                        format_fields({"error": error_text(exc)}))

    async def _patch_series(self, series: _Series) -> None:
        count = series.count
        await self.client.patch(
            EVENT, series.name,
            {"series": {"count": count, "lastObservedTime": micro_time(series.last_observed)}},
            patch_type=PatchType.MERGE, namespace=series.namespace,
        )
        series.written_count = count

    async def flush(self) -> None:
        """Write series counts that changed since last written; forget idle series.

        It costs what changed or went idle since the last flush, not every series and
        bucket kept: a busy controller keeps tens of thousands for their idle time."""
        now = self._clock()
        unwritten, self._unwritten = self._unwritten, {}
        for key in unwritten:
            series = self._series.get(key)
            if series is None or not series.created or series.count <= series.written_count:
                continue
            try:
                await self._patch_series(series)
            except Exception as exc:
                self._unwritten[key] = None  # tried again at the next flush
                log.warning("event_series_write_failed name=%s %s", series.name,
                            format_fields({"error": error_text(exc)}))
        while self._series:
            key, series = next(iter(self._series.items()))
            if now - series.last_observed <= self.series_idle:
                break
            del self._series[key]
            self._unwritten.pop(key, None)
        for subject, bucket in list(_idle_front(self._buckets, now, self.refill_every)):
            if bucket.tokens >= self.burst - 1:
                del self._buckets[subject]


def _reference_key(ref: dict[str, Any]) -> tuple[Any, ...]:
    """An ``ObjectReference`` compared as Go compares the struct: every field."""
    return (ref.get("uid"), ref.get("resourceVersion"), ref.get("kind"), ref.get("namespace"),
            ref.get("name"), ref.get("apiVersion"), ref.get("fieldPath"))


def _idle_front(buckets: dict[str, _Bucket], now: float,
                idle: float) -> list[tuple[str, _Bucket]]:
    """The buckets unused for more than ``idle`` seconds: the front of ``buckets``, which
    is kept in the order of their last use."""
    out = []
    for subject, bucket in buckets.items():
        if now - bucket.updated <= idle:
            break
        out.append((subject, bucket))
    return out

"""The ``events.k8s.io/v1`` recorder (client-go ``tools/events``), which the kube-scheduler
writes its events with (``Scheduled``, ``FailedScheduling``). Operators and the other
components record core/v1 Events with :class:`~setpoint.runtime._events.EventRecorder`,
as client-go's ``tools/record`` and controller-runtime do.

Recording never blocks a reconcile: :meth:`SeriesEventRecorder.event` queues the event and
a background task writes it. Repeats are aggregated into a series as client-go v0.32.0's
``eventBroadcasterImpl`` (tools/events/event_broadcaster.go) does:

- ``recordToSink``: the first occurrence is cached and created; the second gives the
  cached event a series (count 2, ``lastObservedTime``) and is written at once as a
  strategic-merge PATCH of ``series``; later ones only count in memory;
- ``refreshExistingEventSeries``, every 30 minutes (``refreshTime``): every cached series
  is written again (its count, and the event's TTL renewed);
- ``finishSeries``, every 6 minutes (``finishTime``): a series last observed more than 6
  minutes ago is written (its final count) and forgotten, a single event made more than 6
  minutes ago is forgotten;
- ``recordEvent``: a series whose Event was deleted meanwhile (the PATCH finds nothing) is
  created again, with its series.

An event repeats an earlier one when its type, reason, action and its regarding and related
references (their resourceVersion included) are the same, whatever its note (``getKey``).
There is no per-object rate limit: that is the older ``tools/record`` correlator's spam
filter, which ``tools/events`` does not have.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from setpoint.client import Client, Kind, PatchType
from setpoint.client.errors import AlreadyExistsError, ApiError, NotFoundError
from setpoint.machinery.metatime import micro_time
from setpoint.runtime._events import NORMAL, WARNING, TypedEvents, object_reference
from setpoint.runtime._logs import format_fields
from setpoint.runtime._retries import error_text

log = logging.getLogger(__name__)

EVENT = Kind("events.k8s.io/v1", "Event")
MAX_NOTE_BYTES = 1024
FINISH_TIME = 6 * 60.0
"""``finishTime``: how long a series stays idle before it is finished, and how often the
recorder looks for such series."""
REFRESH_TIME = 30 * 60.0
"""``refreshTime``: how often every series' count is written."""


def _truncate(note: str) -> str:
    data = note.encode()
    if len(data) <= MAX_NOTE_BYTES:
        return note
    return data[:MAX_NOTE_BYTES - 3].decode(errors="ignore") + "..."


@dataclass
class _Series:
    """A cached event (``eventCache``'s value): a series once it has repeated."""

    body: dict[str, Any] = field(repr=False)
    count: int = 1
    last_observed: float = 0.0
    created: bool = False
    second: dict[str, Any] | None = None
    """The series as the second occurrence made it (``recordToSink`` writes a copy: later
    occurrences counted before the write do not change what it writes)."""

    def written(self) -> dict[str, Any]:
        return {"count": self.count, "lastObservedTime": micro_time(self.last_observed)}

    @property
    def name(self) -> str:
        return str(self.body["metadata"]["name"])

    @property
    def namespace(self) -> str:
        return str(self.body["metadata"]["namespace"])


@dataclass
class _Pending:
    key: tuple[Any, ...]
    body: dict[str, Any] = field(repr=False)


class SeriesEventRecorder(TypedEvents):
    """Records events.k8s.io/v1 events about objects on behalf of one controller instance.

    ``clock`` and ``sleep`` are the recorder's time: the refresh and finish loops wait
    with ``sleep`` and judge idleness by ``clock``."""

    def __init__(
        self, client: Client, *, reporting_controller: str,
        reporting_instance: str | None = None, refresh_interval: float = REFRESH_TIME,
        series_idle: float = FINISH_TIME, max_pending: int = 1000, senders: int = 4,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.client = client
        self.reporting_controller = reporting_controller
        self.reporting_instance = reporting_instance or \
            f"{reporting_controller}-{socket.gethostname()}"
        self.refresh_interval, self.series_idle = refresh_interval, series_idle
        # a few writes in flight: one at a time falls behind a busy controller's events
        self.senders = max(1, senders)
        self._clock, self._sleep = clock, sleep
        # in the order of their last observation, so that finishing finds the idle ones at
        # the front instead of reading every event of the last minutes
        self._cache: dict[tuple[Any, ...], _Series] = {}
        self._series: dict[tuple[Any, ...], None] = {}
        """The cached events that repeated (what a refresh writes)."""
        self._queue: asyncio.Queue[_Pending] = asyncio.Queue(max_pending)
        self._tasks: list[asyncio.Task[None]] = []
        self.dropped = 0
        """Events not recorded (the queue was full)."""

    def __repr__(self) -> str:
        return (f"SeriesEventRecorder({self.reporting_controller!r}, "
                f"instance={self.reporting_instance!r}, cached={len(self._cache)})")

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
        series = self._cache.pop(key, None)
        if series is not None:
            self._cache[key] = series  # now the most recently observed
            series.count += 1
            series.last_observed = now
            if series.count == 2:
                # recordToSink: the second occurrence is written at once; later ones wait
                # for refreshExistingEventSeries or finishSeries
                self._series[key] = None
                series.second = series.written()
                if series.created:  # else its create's sender writes the series after it
                    self._enqueue(_Pending(key, {}))
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
        self._cache[key] = _Series(body, last_observed=now)
        self._enqueue(_Pending(key, body))

    def _enqueue(self, pending: _Pending) -> None:
        try:
            self._queue.put_nowait(pending)
        except asyncio.QueueFull:
            self.dropped += 1

    # -- writing ---------------------------------------------------------------------------

    async def start(self) -> None:
        """Start writing queued events, refreshing and finishing series in the background
        (``StartRecordingToSinkWithContext``)."""
        if not self._tasks:
            self._tasks = [asyncio.create_task(self._send_loop(), name=f"event-sender-{i}")
                           for i in range(self.senders)]
            self._tasks.append(asyncio.create_task(
                self._every(self.refresh_interval, self.refresh), name="event-series-refresh"))
            self._tasks.append(asyncio.create_task(
                self._every(self.series_idle, self.finish), name="event-series-finish"))

    async def stop(self, timeout: float = 5.0) -> None:
        """Write what is queued (within ``timeout``), then stop. Counts not yet written are
        lost, as they are when client-go's broadcaster shuts down."""
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

    async def _send_loop(self) -> None:
        while True:
            pending = await self._queue.get()
            await self._send(pending)

    async def _every(self, period: float, work: Callable[[], Awaitable[None]]) -> None:
        """``wait.UntilWithContext``: ``work`` at once, then ``period`` after each end."""
        while True:
            await work()
            await self._sleep(period)

    async def _send(self, pending: _Pending) -> None:
        series = self._cache.get(pending.key)
        try:
            if pending.body:
                await self.client.create(pending.body)
                if series is not None:
                    series.created = True
                    if series.second:  # it repeated while its create was in flight
                        await self._record_series(series, series.second)
            elif series is not None and series.second:
                await self._record_series(series, series.second)
        except Exception as exc:
            log.warning("event_write_failed reason=%s %s",
                        pending.body.get("reason") if pending.body else "series",
                        format_fields({"error": error_text(exc)}))

    async def _record_series(self, series: _Series, written: dict[str, Any]) -> None:
        """``recordEvent`` for a series: PATCH its ``series``; create the Event, series
        included, if it was deleted meanwhile."""
        try:
            await self.client.patch(EVENT, series.name, {"series": written},
                                    patch_type=PatchType.STRATEGIC, namespace=series.namespace)
        except NotFoundError:
            await self.client.create({**series.body, "series": written})

    async def _write(self, series: _Series) -> bool:
        """Write a series' count; False when it should be tried again (``recordEvent``'s
        retry: not a refusal by the server, except an AlreadyExists of a series' create)."""
        try:
            await self._record_series(series, series.written())
        except AlreadyExistsError:
            return False
        except ApiError as exc:
            log.warning("event_series_rejected name=%s %s", series.name,
                        format_fields({"error": error_text(exc)}))
        except Exception as exc:
            log.warning("event_series_write_failed name=%s %s", series.name,
                        format_fields({"error": error_text(exc)}))
            return False
        return True

    async def refresh(self) -> None:
        """``refreshExistingEventSeries``: write every cached series' count.

        It reads the series, not every event cached for its idle time: a busy controller
        keeps tens of thousands of single events."""
        for key in list(self._series):
            series = self._cache.get(key)
            if series is not None and series.created:
                await self._write(series)

    async def finish(self) -> None:
        """``finishSeries``: write and forget each series observed last more than
        ``series_idle`` ago, forget each single event made that long ago.

        It costs the events that went idle, not every event kept: they are in the order of
        their last observation."""
        cutoff = self._clock() - self.series_idle
        idle = []
        for key, series in self._cache.items():
            if series.last_observed >= cutoff:
                break
            idle.append((key, series))
        for key, series in idle:
            if series.count > 1 and not (series.created and await self._write(series)):
                continue  # tried again at the next finish
            if self._cache.get(key) is series and series.last_observed < cutoff:
                del self._cache[key]
                self._series.pop(key, None)


def _reference_key(ref: dict[str, Any]) -> tuple[Any, ...]:
    """An ``ObjectReference`` compared as Go compares the struct: every field."""
    return (ref.get("uid"), ref.get("resourceVersion"), ref.get("kind"), ref.get("namespace"),
            ref.get("name"), ref.get("apiVersion"), ref.get("fieldPath"))

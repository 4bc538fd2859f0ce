"""The event recorder: core/v1 Events, what ``kubectl describe`` shows under *Events:*.

It behaves as client-go's ``tools/record`` broadcaster, which controller-runtime's
``mgr.GetEventRecorderFor`` (pkg/internal/recorder) and the kube-controller-manager's and
kubelet's recorders are (k8s.io/client-go/tools/record/event.go):

- :meth:`EventRecorder.event` makes the Event (``involvedObject``, ``source.component``,
  ``reportingComponent``, ``firstTimestamp`` = ``lastTimestamp``, ``count: 1``, named
  ``<object>.<hex Unix nanoseconds>`` in the object's namespace) and queues it without
  waiting: the queues hold 1000 events together and drop the newest when full, as
  client-go's ``watch.NewLongQueueBroadcaster(maxQueuedEvents, DropIfChannelFull)``
  (its sink's channel of 1000, ``ActionOrDrop`` on the incoming one) does. Recording
  never blocks or fails a reconcile;
- background senders pass each event through the :class:`EventCorrelator` (aggregation,
  counting of repeats, spam filter) and write it: a new event is created, a repeat is a
  strategic-merge PATCH of ``count``, ``lastTimestamp`` and ``message`` (created again
  if it was deleted meanwhile); an error the server answered is logged and the event
  given up, a transport error retried up to 12 times ``recordToSink``'s way.

Events of one object are written by one sender, in order, so a repeat's patch never
overtakes its create. :class:`~setpoint.runtime._series_events.SeriesEventRecorder` is the
``events.k8s.io/v1`` form (client-go ``tools/events``), which the kube-scheduler writes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Callable
from typing import Any

from setpoint.client import Client, Kind, PatchType
from setpoint.client.errors import ApiError
from setpoint.machinery.metatime import meta_time
from setpoint.runtime._eventcorrelator import (
    Correlated,
    EventCorrelator,
    ObjectKey,
    object_key_of,
)
from setpoint.runtime._logs import format_fields
from setpoint.runtime._objects import as_dict, meta
from setpoint.runtime._retries import error_text

log = logging.getLogger(__name__)

EVENT = Kind("v1", "Event")
NORMAL, WARNING = "Normal", "Warning"
MAX_QUEUED_EVENTS = 1000
MAX_TRIES_PER_EVENT = 12
SLEEP_DURATION = 10.0


_Queued = tuple[ObjectKey, dict[str, Any]]
"""An event waiting for its sender, with its source and object (the correlator's keys'
head and the sender's partition)."""


def object_reference(obj: object) -> dict[str, Any]:
    """The ``ObjectReference`` an event points at (``ref.GetReference``)."""
    body = as_dict(obj)
    m = meta(body)
    ref: dict[str, Any] = {}
    for key, value in (("apiVersion", body.get("apiVersion")), ("kind", body.get("kind")),
                       ("namespace", m.get("namespace")), ("name", m.get("name")),
                       ("uid", m.get("uid")), ("resourceVersion", m.get("resourceVersion"))):
        if value:
            ref[key] = value
    return ref


class TypedEvents:
    """What both recorders (core/v1 here, events.k8s.io/v1 in ``_series_events.py``) offer:
    an event of each type, recorded through their ``event``."""

    def event(self, regarding: object, type_: str, reason: str, note: str, *,
              action: str | None = None, related: object | None = None) -> None:
        raise NotImplementedError

    def normal(self, regarding: object, reason: str, note: str, *,
               action: str | None = None, related: object | None = None) -> None:
        """Record a ``Normal`` event (something went as planned)."""
        self.event(regarding, NORMAL, reason, note, action=action, related=related)

    def warning(self, regarding: object, reason: str, note: str, *,
                action: str | None = None, related: object | None = None) -> None:
        """Record a ``Warning`` event (something needs a person's attention)."""
        self.event(regarding, WARNING, reason, note, action=action, related=related)


class EventRecorder(TypedEvents):
    """Records core/v1 Events about objects on behalf of one component
    (``reporting_controller``, the event's ``source.component``).

    ``reporting_instance`` is ``source.host`` and ``reportingInstance`` (a kubelet's node
    name); controller-runtime leaves it empty, and so does this by default.
    ``flush_interval`` and ``series_idle`` are the series form's and unused here."""

    def __init__(
        self, client: Client, *, reporting_controller: str,
        reporting_instance: str | None = None, burst: int = 25, refill_every: float = 300.0,
        flush_interval: float = 30.0, series_idle: float = 360.0,
        max_pending: int = MAX_QUEUED_EVENTS, senders: int = 4,
        clock: Callable[[], float] = time.time, retry_sleep: float = SLEEP_DURATION,
    ) -> None:
        del flush_interval, series_idle
        self.client = client
        self.reporting_controller = reporting_controller
        self.reporting_instance = reporting_instance or ""
        self.correlator = EventCorrelator(clock=clock, burst=burst, qps=1.0 / refill_every)
        self.retry_sleep = retry_sleep
        self._clock = clock
        self._last_nanos = 0
        # one queue per sender, an object's events always to the same one; the bound is on
        # them together (client-go's one channel of 1000): a share per sender would drop an
        # event while the others' queues have room, earlier than Go
        self.senders = max(1, senders)
        self.max_pending = max(1, max_pending)
        self._queues: list[asyncio.Queue[_Queued]] = [
            asyncio.Queue() for _ in range(self.senders)]
        self._queued = 0
        """Events queued and not yet taken by a sender, over all the queues."""
        self._overflowing = False
        self._tasks: list[asyncio.Task[None]] = []
        self._stopping = asyncio.Event()
        self.dropped = 0
        """Events not written: the queue was full, the spam filter or the server refused
        them, or the retries ran out."""

    def __repr__(self) -> str:
        return (f"EventRecorder({self.reporting_controller!r}, "
                f"queued={sum(q.qsize() for q in self._queues)}, {self.correlator!r})")

    # -- recording -------------------------------------------------------------------------

    def event(self, regarding: object, type_: str, reason: str, note: str, *,
              action: str | None = None, related: object | None = None,
              field_path: str | None = None) -> None:
        """Queue an event about ``regarding`` (dict or typed object): its ``message`` is
        ``note``. ``action`` and ``related`` are set only when given (client-go's
        recorder sets neither); ``field_path`` is the reference's ``fieldPath``
        (``spec.containers{app}``)."""
        if type_ not in (NORMAL, WARNING):
            # util.ValidateEventType: logged and not recorded, the caller goes on
            self.dropped += 1
            log.error("event_type_unsupported type=%s reason=%s", type_, reason)
            return
        ref = object_reference(regarding)
        if field_path:
            ref["fieldPath"] = field_path
        now = self._clock()
        stamp = meta_time(now)
        event: dict[str, Any] = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": self._name_for(str(ref.get("name") or ""), now),
                         "namespace": ref.get("namespace") or "default"},
            "involvedObject": ref, "reason": reason, "message": note,
            "source": {"component": self.reporting_controller,
                       **({"host": self.reporting_instance} if self.reporting_instance
                          else {})},
            "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1, "type": type_,
            "reportingComponent": self.reporting_controller,
            "reportingInstance": self.reporting_instance,
        }
        if action:
            event["action"] = action
        if related is not None:
            event["related"] = object_reference(related)
        if self._queued >= self.max_pending:
            # the newest is dropped, as the broadcaster's distribute does when its sink's
            # channel is full (there silently: said here once per overflow, until the
            # queues are half empty again, the rest at debug: a line per drop cost the
            # workloads' process more than the events it spared)
            self.dropped += 1
            log.log(logging.DEBUG if self._overflowing else logging.ERROR,
                    "event_dropped reason=%s %s", reason, format_fields(
                        {"object": ref.get("name"), "error": "too many queued events"}))
            self._overflowing = True
            return
        if self._queued < self.max_pending // 2:
            self._overflowing = False
        self._queued += 1
        # an object's events go to one sender, in order (the process's own string hash:
        # stable while it runs, which is all the partition needs); the key, made once,
        # is also the correlator's
        key = object_key_of(ref, self.reporting_controller, self.reporting_instance)
        self._queues[hash(key) % self.senders].put_nowait((key, event))

    def _name_for(self, name: str, now: float) -> str:
        """``<object>.<hex Unix nanoseconds>``, increasing so that two events of one
        instant do not share a name."""
        nanos = max(int(now * 1e9), self._last_nanos + 1)
        self._last_nanos = nanos
        return f"{name}.{nanos:x}"

    # -- writing ---------------------------------------------------------------------------

    async def start(self) -> None:
        """Start writing queued events in the background."""
        if not self._tasks:
            self._stopping.clear()
            self._tasks = [asyncio.create_task(self._send_loop(q), name=f"event-sender-{i}")
                           for i, q in enumerate(self._queues)]

    async def stop(self, timeout: float = 5.0) -> None:
        """Write what is queued (each event tried once, as a shut-down broadcaster does)
        within ``timeout``, then stop."""
        self._stopping.set()
        try:
            await asyncio.wait_for(self.flush(), timeout)
        except TimeoutError:
            left = sum(q.qsize() for q in self._queues)
            if left:  # a crash stop has no time: say so only if events are lost
                log.warning("event_recorder_stop_timeout pending=%d", left)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []

    async def flush(self) -> None:
        """Write every event queued now: wait for the senders to, or write them here
        when the recorder is not started."""
        if self._tasks:
            # the senders' own order: writing here too could send a repeat's patch
            # before its create
            await asyncio.gather(*(q.join() for q in self._queues))
            return

        async def drain(queue: asyncio.Queue[_Queued]) -> None:
            while not queue.empty():
                key, event = queue.get_nowait()
                self._queued -= 1
                await self._record(event, key)
                queue.task_done()

        await asyncio.gather(*(drain(q) for q in self._queues))

    async def _send_loop(self, queue: asyncio.Queue[_Queued]) -> None:
        while True:
            key, event = await queue.get()
            self._queued -= 1
            try:
                await self._record(event, key)
            finally:
                queue.task_done()

    async def _record(self, event: dict[str, Any], key: ObjectKey | None = None) -> None:
        """``recordToSink``: correlate, then write, retrying what did not reach the
        server."""
        result = self.correlator.correlate(event, self._name_for, key)
        if result.skip:
            self.dropped += 1
            log.debug("event_spam_filtered reason=%s", event.get("reason"))
            return
        tries = 0
        while not await self._write(result):
            tries += 1
            if tries >= MAX_TRIES_PER_EVENT or self._stopping.is_set():
                self.dropped += 1
                log.error("event_write_gave_up reason=%s tries=%d",
                          event.get("reason"), tries)
                return
            # the first sleep randomized so that clients do not retry in step
            delay = self.retry_sleep * (random.random() if tries == 1 else 1.0)
            with contextlib.suppress(TimeoutError):  # a stop ends the wait
                await asyncio.wait_for(self._stopping.wait(), delay)

    async def _write(self, result: Correlated) -> bool:
        """``recordEvent``: True when written or given up, False to retry."""
        event = result.event
        namespace = event["metadata"]["namespace"]
        try:
            written = None
            if result.patch is not None and int(event.get("count") or 1) > 1:
                try:
                    written = await self.client.patch(
                        EVENT, event["metadata"]["name"], result.patch,
                        patch_type=PatchType.STRATEGIC, namespace=namespace)
                except ApiError as exc:
                    if exc.code != 404:
                        raise
            if written is None:  # new, or the repeated event was deleted meanwhile
                body = event
                if "resourceVersion" in event["metadata"]:  # a repeat's, created again
                    body = {**event, "metadata": {
                        k: v for k, v in event["metadata"].items() if k != "resourceVersion"}}
                written = await self.client.create(body)
        except ApiError as exc:
            # the server refused it: the same request would be refused again
            self.dropped += 1
            level = logging.DEBUG if exc.code == 409 or _namespace_terminating(exc) \
                else logging.ERROR
            log.log(level, "event_rejected reason=%s %s", event.get("reason"),
                    format_fields({"error": error_text(exc)}))
            return True
        except Exception as exc:
            log.error("event_write_failed reason=%s %s", event.get("reason"),
                      format_fields({"error": error_text(exc)}))
            return False
        self.correlator.update_state(as_dict(written), result.key)
        return True


def _namespace_terminating(exc: ApiError) -> bool:
    """The ``NamespaceTerminating`` cause: events about objects of a namespace being
    deleted, expected and not worth an error."""
    return any(c.get("type") == "NamespaceTerminating" for c in
               ((exc.status.get("details") or {}).get("causes") or []))

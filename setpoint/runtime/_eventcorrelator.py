"""client-go's ``EventCorrelator`` (k8s.io/client-go/tools/record/events_cache.go).

Every core/v1 Event a recorder writes passes through it, in this order:

1. the aggregator: more than 10 events of one source, object, type and reason that differ
   only by message within 10 minutes become one event whose message is
   ``(combined from similar events): <the last message>``;
2. the logger: an event seen before (same source, object, type, reason and message) is not
   a new Event but the earlier one with ``count`` incremented and ``lastTimestamp``
   updated, written as a strategic-merge patch;
3. the spam filter: a token bucket per source, object and type (burst 25, one token every 5
   minutes) drops what a hot loop records beyond it, repeats included.

Each keeps at most 4096 entries, the least recently used forgotten first (client-go's
``lru.Cache``), so what it remembers does not grow with the objects a controller sees.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from setpoint.machinery.metatime import meta_time

MAX_LRU_CACHE_ENTRIES = 4096
AGGREGATE_MAX_EVENTS = 10
AGGREGATE_INTERVAL_SECONDS = 600.0
SPAM_BURST = 25
SPAM_QPS = 1.0 / 300.0
COMBINED_PREFIX = "(combined from similar events): "

Event = dict[str, Any]
K = TypeVar("K")
V = TypeVar("V")


class _LRU(Generic[K, V]):
    """groupcache's ``lru.Cache``: the oldest entry goes when a new one would overflow."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[K, V] = OrderedDict()

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: K) -> V | None:
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def add(self, key: K, value: V) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        if len(self._items) > self.size:
            self._items.popitem(last=False)


def _ref(event: Event) -> dict[str, Any]:
    return event.get("involvedObject") or {}


ObjectKey = tuple[str, ...]
"""Source and object of an event: ``getSpamKey``, and the head of the other two keys."""


def object_key_of(ref: dict[str, Any], component: str, host: str) -> ObjectKey:
    """The object key from the parts a recorder has at hand (made once per event: the
    recorder's partition, the aggregator, the logger and the spam filter all start with
    it)."""
    return (component, host, str(ref.get("kind") or ""), str(ref.get("namespace") or ""),
            str(ref.get("name") or ""), str(ref.get("uid") or ""),
            str(ref.get("apiVersion") or ""))


def _object_key(event: Event) -> ObjectKey:
    source = event.get("source") or {}
    return object_key_of(_ref(event), str(source.get("component") or ""),
                         str(source.get("host") or ""))


def _event_key(event: Event, object_key: ObjectKey) -> tuple[str, ...]:
    return (*object_key, str(_ref(event).get("fieldPath") or ""), str(event.get("type")),
            str(event.get("reason")), str(event.get("message")))


def event_key(event: Event) -> tuple[str, ...]:
    """``getEventKey``: source, the whole object reference, type, reason and message."""
    return _event_key(event, _object_key(event))


def spam_key(event: Event) -> tuple[str, ...]:
    """``getSpamKey``: source, object and type (v0.32.0 added the type: a flood of Normal
    events does not silence an object's Warnings)."""
    return _spam_key(event, _object_key(event))


def _spam_key(event: Event, object_key: ObjectKey) -> tuple[str, ...]:
    return (*object_key, str(event.get("type") or ""))


def _aggregate_key(event: Event, object_key: ObjectKey) -> tuple[str, ...]:
    return (*object_key, str(event.get("type")), str(event.get("reason")),
            str(event.get("reportingComponent") or ""),
            str(event.get("reportingInstance") or ""))


def aggregate_keys(event: Event) -> tuple[tuple[str, ...], str]:
    """``EventAggregatorByReasonFunc``: the group (all but the message) and the message."""
    return _aggregate_key(event, _object_key(event)), str(event.get("message"))


@dataclass(slots=True)
class _AggregateRecord:
    local_keys: set[str] = field(default_factory=set)
    last_timestamp: float = 0.0


@dataclass(slots=True)
class _EventLog:
    count: int
    first_timestamp: str
    name: str
    resource_version: str


@dataclass(slots=True)
class _TokenBucket:
    """flowcontrol's token bucket rate limiter, refilled by elapsed time."""

    tokens: float
    updated: float


@dataclass(slots=True)
class Correlated:
    """``EventCorrelateResult``: the event to write and, for a repeat, its patch; ``key``
    is the event's ``getEventKey``, which :meth:`EventCorrelator.update_state` files the
    server's answer under."""

    event: Event
    key: tuple[str, ...]
    patch: dict[str, Any] | None = None
    skip: bool = False


class EventCorrelator:
    """Filters, aggregates and counts events before they are written."""

    def __init__(self, *, clock: Callable[[], float], cache_size: int = MAX_LRU_CACHE_ENTRIES,
                 burst: int = SPAM_BURST, qps: float = SPAM_QPS,
                 max_events: int = AGGREGATE_MAX_EVENTS,
                 max_interval: float = AGGREGATE_INTERVAL_SECONDS) -> None:
        self._clock = clock
        self.burst, self.qps = burst, qps
        self.max_events, self.max_interval = max_events, max_interval
        self._aggregates: _LRU[tuple[str, ...], _AggregateRecord] = _LRU(cache_size)
        self._logs: _LRU[tuple[str, ...], _EventLog] = _LRU(cache_size)
        self._buckets: _LRU[tuple[str, ...], _TokenBucket] = _LRU(cache_size)

    def __repr__(self) -> str:
        return (f"EventCorrelator(aggregates={len(self._aggregates)}, "
                f"logs={len(self._logs)}, buckets={len(self._buckets)})")

    def correlate(self, event: Event, name_for: Callable[[str, float], str],
                  object_key: ObjectKey | None = None) -> Correlated:
        """``EventCorrelate``: aggregate, then observe, then filter. ``name_for`` names a
        new combined event after its object at a time; ``object_key`` is the event's
        source and object when the caller has made it already."""
        if object_key is None:
            object_key = _object_key(event)
        now = self._clock()
        aggregated, key = self._aggregate(event, object_key, name_for, now)
        observed, patch = self._observe(aggregated, key)
        # the key the answer is filed under (``UpdateState``'s getEventKey of it): the
        # logger's own for a plain event; a combined event's message is its own
        own_key = key if aggregated is event else _event_key(observed, object_key)
        if self._filtered(_spam_key(observed, object_key), now):
            return Correlated(observed, own_key, skip=True)
        return Correlated(observed, own_key, patch)

    def update_state(self, event: Event, key: tuple[str, ...] | None = None) -> None:
        """``UpdateState``: remember the server's name, resourceVersion and count.
        ``key`` is the event's ``getEventKey`` when known (the :class:`Correlated`'s: the
        server answers the source, object, type, reason and message it was sent)."""
        m = event["metadata"]
        self._logs.add(event_key(event) if key is None else key, _EventLog(
            int(event.get("count") or 0), str(event.get("firstTimestamp") or ""),
            str(m["name"]), str(m.get("resourceVersion") or "")))

    def _aggregate(self, event: Event, object_key: ObjectKey,
                   name_for: Callable[[str, float], str],
                   now: float) -> tuple[Event, tuple[str, ...]]:
        aggregate_key = _aggregate_key(event, object_key)
        local_key = str(event.get("message"))
        record = self._aggregates.get(aggregate_key)
        if record is None or now - record.last_timestamp > self.max_interval:
            record = _AggregateRecord()
            self._aggregates.add(aggregate_key, record)
        record.local_keys.add(local_key)
        record.last_timestamp = now
        if len(record.local_keys) < self.max_events:
            return event, _event_key(event, object_key)
        record.local_keys.pop()  # (sets.String.PopAny: the set stays below the maximum)
        ref = _ref(event)
        stamp = meta_time(now)
        combined: Event = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name_for(str(ref.get("name") or ""), now),
                         "namespace": event["metadata"]["namespace"]},
            "involvedObject": ref, "reason": event.get("reason"),
            "message": COMBINED_PREFIX + str(event.get("message")),
            "source": event.get("source"), "firstTimestamp": stamp, "lastTimestamp": stamp,
            "count": 1, "type": event.get("type"),
        }
        # the cache key is the group's, so later combined events count on this one
        return combined, aggregate_key

    def _observe(self, event: Event,
                 key: tuple[str, ...]) -> tuple[Event, dict[str, Any] | None]:
        last = self._logs.get(key)
        if last is None or last.count <= 0:
            # new: the event as made, which nothing else holds (the recorder's own dict)
            m = event["metadata"]
            self._logs.add(key, _EventLog(int(event.get("count") or 1),
                                          str(event.get("firstTimestamp") or ""),
                                          m["name"], str(m.get("resourceVersion") or "")))
            return event, None
        event = {**event, "metadata": dict(event["metadata"])}
        event["metadata"]["name"] = last.name
        if last.resource_version:
            event["metadata"]["resourceVersion"] = last.resource_version
        event["firstTimestamp"] = last.first_timestamp
        event["count"] = last.count + 1
        # CreateTwoWayMergePatch from the event with count 0, lastTimestamp at the
        # epoch and no message to the event: what changes with each repeat
        patch = {"count": event["count"], "lastTimestamp": event["lastTimestamp"]}
        if event.get("message"):
            patch["message"] = event["message"]
        self._logs.add(key, _EventLog(int(event["count"]), str(event["firstTimestamp"] or ""),
                                      event["metadata"]["name"],
                                      str(event["metadata"].get("resourceVersion") or "")))
        return event, patch

    def _filtered(self, key: tuple[str, ...], now: float) -> bool:
        """``EventSourceObjectSpamFilter.Filter``: True when the bucket is empty."""
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = _TokenBucket(float(self.burst), now)
            self._buckets.add(key, bucket)
        bucket.tokens = min(float(self.burst), bucket.tokens + (now - bucket.updated) * self.qps)
        bucket.updated = now
        if bucket.tokens < 1.0:
            return True
        bucket.tokens -= 1.0
        return False

"""The store: current objects by resource, one global revision, and a bounded event history.

Everything runs on the event loop thread and no method awaits, so each write is atomic
without locks. Stored dicts are never mutated after they are stored: readers may hand them
out (serialize them) without copying.

Each resource keeps its keys sorted as etcd orders them (``<namespace>/<name>``, bytewise),
updated on create and delete, so that a page of a list starts by bisection and costs what it
returns. The event history is bounded by count, bytes and age, as etcd's compaction bounds
the revisions a watch or a continued list may start from.
"""

from __future__ import annotations

import asyncio
import bisect
import builtins
import heapq
import logging
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from setpoint.cluster.storage.sqlite import SqliteBackend, StorageFailure
from setpoint.machinery import errors
from setpoint.machinery.errors import StatusError

log = logging.getLogger(__name__)

Key = tuple[str, str]  # (namespace, name)

DEFAULT_HISTORY = 100_000
# the bytes (as JSON) of the objects the history holds: past versions of large objects would
# otherwise stay in memory for as long as their events do
DEFAULT_HISTORY_BYTES = 64 * 1024 * 1024
# kube-apiserver compacts etcd every 5 minutes (--etcd-compaction-interval): older revisions
# are gone for watches and continued lists (410)
DEFAULT_HISTORY_AGE_S = 300.0
# A watcher that falls this many events behind is closed, as the apiserver's watch cache
# closes watchers whose buffer fills: the client resumes from its last resourceVersion.
WATCHER_BACKLOG = 50_000


# etcd refuses a request larger than --max-request-bytes (1.5 MiB by default, server/embed/
# config.go DefaultMaxRequestBytes; etcdserver/v3_server.go: ErrRequestTooLarge), and
# kube-apiserver's etcd client refuses to send one beyond its default MaxCallSendMsgSize
# (2 MiB, client/v3 options.go; storagebackend/factory/etcd3.go sets none). A write is one
# request carrying the object's key and its encoding (etcd3/store.go OptimisticPut).
MAX_REQUEST_BYTES = 1572864
MAX_CALL_SEND_MSG_SIZE = 2 * 1024 * 1024


def request_too_large(size: int) -> StatusError | None:
    """What kube-apiserver answers a write whose etcd request is ``size`` bytes, or None when
    etcd takes it: etcd3/store.go returns etcd's error as it is, no ``StorageError``, so it
    reaches the client as a 500 with reason Unknown (omitted) and the error's text
    (responsewriters/status.go convertStorageErrorOrNot; kubernetes/kubernetes#112152)."""
    if size > MAX_CALL_SEND_MSG_SIZE:
        return StatusError(500, "", "rpc error: code = ResourceExhausted desc = trying to "
                           f"send message larger than max ({size} vs. {MAX_CALL_SEND_MSG_SIZE})")
    if size > MAX_REQUEST_BYTES:
        return StatusError(500, "", "etcdserver: request is too large")
    return None


def storage_error(exc: StorageFailure) -> StatusError:
    """How kube-apiserver answers a write its storage refused: the backend's error is no
    ``StorageError`` the registry interprets (k8s.io/apiserver/pkg/storage/errors/storage.go
    passes it through), so responsewriters' ``convertStorageErrorOrNot`` (status.go) makes it
    a 500 Failure with reason Unknown (omitted) and the error's text as message, as etcd's
    "etcdserver: mvcc: database space exceeded" reaches clients."""
    return StatusError(500, "", f"storage: write failed: {exc}")


@dataclass(frozen=True, slots=True)
class Event:
    """A change of one object. ``prev`` is the object before the change (None on create)."""

    revision: int
    type: str  # ADDED, MODIFIED, DELETED
    resource: str
    namespace: str
    name: str
    obj: dict[str, Any]
    prev: dict[str, Any] | None


class Watcher:
    """A subscriber to one resource's events; reads them as an async iterator."""

    def __init__(self, store: Store, resource: str, namespace: str | None) -> None:
        self._store = store
        self.resource = resource
        self.namespace = namespace
        self._queue: deque[Event] = deque()
        self._wakeup = asyncio.Event()
        self.closed = False

    def push(self, event: Event) -> None:
        if len(self._queue) >= WATCHER_BACKLOG:
            self.close()
            return
        self._queue.append(event)
        self._wakeup.set()

    async def next_batch(self, timeout: float | None = None) -> list[Event]:
        """Wait for events and return all that are queued; [] on timeout or close (a closed
        watcher that fell behind returns nothing more: its client must resume)."""
        if not self._queue and not self.closed:
            self._wakeup.clear()
            try:
                await asyncio.wait_for(self._wakeup.wait(), timeout)
            except TimeoutError:
                return []
        if self.closed:
            self._queue.clear()
            return []
        batch = list(self._queue)
        self._queue.clear()
        return batch

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._store._unsubscribe(self)
            self._wakeup.set()


class Store:
    """Objects of every resource, keyed by (namespace, name), with a global revision."""

    def __init__(self, path: Path | None = None, history: int = DEFAULT_HISTORY) -> None:
        self._objects: dict[str, dict[Key, dict[str, Any]]] = {}
        self._sorted: dict[str, list[str]] = {}  # "<ns>/<name>" in etcd's order
        self._history: deque[Event] = deque()
        self._history_sizes: deque[tuple[int, float]] = deque()  # (bytes, time) per event
        self._history_bytes = 0
        self.max_history = history
        self.max_history_bytes = DEFAULT_HISTORY_BYTES
        self.max_history_age_s = DEFAULT_HISTORY_AGE_S
        self.keys_scanned = 0  # keys read by list scans: what a page of a list costs
        self._watchers: dict[str, set[Watcher]] = {}
        self._listeners: list[Callable[[Event], None]] = []
        self.revision = 0
        self._compacted = 0
        self._backend = SqliteBackend(path) if path is not None else None
        if self._backend is not None:
            revision, rows = self._backend.load()
            for resource, ns, name, obj in rows:
                self._objects.setdefault(resource, {})[(ns, name)] = obj
            for resource, objs in self._objects.items():
                self._sorted[resource] = sorted(f"{ns}/{name}" for ns, name in objs)
            self.revision = revision
            self._compacted = revision

    # -- reads -------------------------------------------------------------------------
    def get(self, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        objs = self._objects.get(resource)
        return objs.get((namespace, name)) if objs else None

    def keys(self, resource: str) -> list[Key]:
        """All keys of a resource in storage order (etcd's: "<namespace>/<name>" as bytes)."""
        return [_split(k) for k in self._sorted.get(resource, [])]

    def list(self, resource: str, namespace: str | None = None) -> list[dict[str, Any]]:
        """The objects of a resource (in one namespace) in etcd's key order."""
        scan = self.scan(resource, "" if namespace is None else f"{namespace}/", "", None)
        return [obj for _, obj in scan] if scan is not None else []

    def scan(self, resource: str, prefix: str, after: str, revision: int | None) -> Scan | None:
        """The keys that start with ``prefix`` and sort after ``after`` (all when ""), in
        order, as they were at ``revision`` (now when None); None when it is compacted.

        Starting costs a bisection plus the events since ``revision``; each step one key.
        """
        then: dict[str, dict[str, Any] | None] = {}  # keys changed since: value at revision
        if revision is not None and revision < self.revision:
            if revision < self.compacted_revision:
                return None
            for ev in reversed(self._history):  # newest first: the oldest change wins
                if ev.revision <= revision:
                    break
                if ev.resource == resource:
                    then[f"{ev.namespace}/{ev.name}"] = ev.prev
        return Scan(self, resource, prefix, max(prefix, after + "\x00") if after else prefix,
                    then)

    def count(self, resource: str) -> int:
        return len(self._objects.get(resource, ()))

    def resources(self) -> Iterable[str]:
        return list(self._objects)

    @property
    def history_bytes(self) -> int:
        """The JSON bytes of the objects the event history holds."""
        return self._history_bytes

    @property
    def compacted_revision(self) -> int:
        """The newest revision whose events are no longer in the history."""
        self._trim(time.monotonic())
        return self._compacted

    def compact(self) -> None:
        """Forget the event history up to now (as etcd's periodic compaction does)."""
        self._history.clear()
        self._history_sizes.clear()
        self._history_bytes = 0
        self._compacted = self.revision

    def _trim(self, now: float) -> None:
        """Drop the oldest events beyond the count, bytes or age the history may hold."""
        history, sizes = self._history, self._history_sizes
        oldest = now - self.max_history_age_s
        while history and (len(history) > self.max_history
                           or self._history_bytes > self.max_history_bytes
                           or sizes[0][1] < oldest):
            self._compacted = history.popleft().revision
            self._history_bytes -= sizes.popleft()[0]

    def snapshot(self, resource: str, revision: int) -> dict[Key, dict[str, Any]] | None:
        """The objects of ``resource`` as they were at ``revision``; None if compacted."""
        if revision < self.compacted_revision:
            return None
        current = dict(self._objects.get(resource, {}))
        for ev in reversed(self._history):
            if ev.revision <= revision:
                break
            if ev.resource != resource:
                continue
            key = (ev.namespace, ev.name)
            if ev.prev is None:
                current.pop(key, None)
            else:
                current[key] = ev.prev
        return current

    def events_since(self, resource: str, revision: int) -> builtins.list[Event] | None:
        """Events of ``resource`` after ``revision``; None if the history no longer has them."""
        if revision < self.compacted_revision:
            return None
        out: builtins.list[Event] = []
        for ev in reversed(self._history):
            if ev.revision <= revision:
                break
            if ev.resource == resource:
                out.append(ev)
        out.reverse()
        return out

    # -- writes ------------------------------------------------------------------------
    def put(self, resource: str, obj: dict[str, Any]) -> dict[str, Any]:
        """Create or replace ``obj``; stamps the new resourceVersion into its metadata.

        An object that cannot be encoded is refused before anything changes: stored, it would
        fail every later GET, LIST and WATCH of its resource (etcd3's store encodes before it
        writes, and answers an encoding failure with an internal error). So is one whose
        encoding etcd would refuse as too large (:func:`request_too_large`).

        The database commits first: when it refuses (a full disk), memory, the revision and
        the watchers are untouched and the write fails as a storage error (see
        :func:`storage_error`), so nothing is served that a restart would take back."""
        try:
            size = len(orjson.dumps(obj))
        except TypeError as exc:
            raise errors.internal(f"unable to encode {resource[1:] or resource} "
                                  f"{obj['metadata'].get('name')!r}: {exc}") from None
        ns, name = obj["metadata"].get("namespace", ""), obj["metadata"]["name"]
        too_large = request_too_large(size + len(f"/registry/{resource.lstrip('/')}/{ns}/{name}"))
        if too_large is not None:
            raise too_large
        meta = dict(obj["metadata"])  # never stamp a dict another stored object shares
        obj["metadata"] = meta
        revision = self.revision + 1
        meta["resourceVersion"] = str(revision)
        self._persist(resource, ns, name, obj, revision)
        self.revision = revision
        objs = self._objects.setdefault(resource, {})
        prev = objs.get((ns, name))
        if prev is None:
            bisect.insort(self._sorted.setdefault(resource, []), f"{ns}/{name}")
        objs[(ns, name)] = obj
        self._emit(Event(revision, "ADDED" if prev is None else "MODIFIED",
                         resource, ns, name, obj, prev), size)
        return obj

    def delete(self, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        """Remove an object; the DELETED event carries a new resourceVersion. As with
        :meth:`put`, nothing changes unless the database commits."""
        objs = self._objects.get(resource)
        prev = objs.get((namespace, name)) if objs else None
        if objs is None or prev is None:
            return None
        revision = self.revision + 1
        self._persist(resource, namespace, name, None, revision)
        self.revision = revision
        del objs[(namespace, name)]
        index = self._sorted[resource]
        del index[bisect.bisect_left(index, f"{namespace}/{name}")]
        gone = {**prev, "metadata": {**prev["metadata"], "resourceVersion": str(revision)}}
        self._emit(Event(revision, "DELETED", resource, namespace, name, gone, prev))
        return gone

    def drop_resource(self, resource: str) -> None:
        """Forget every object of a resource without events (a CRD's storage removed)."""
        for ns, name in list(self._objects.get(resource, {})):
            self.delete(resource, ns, name)
        self._objects.pop(resource, None)
        self._sorted.pop(resource, None)

    def _persist(self, resource: str, ns: str, name: str, obj: dict[str, Any] | None,
                 revision: int) -> None:
        if self._backend is None:
            return
        try:
            self._backend.put(resource, ns, name, obj, revision)
        except StorageFailure as exc:
            log.error("storage_write_failed resource=%s namespace=%s name=%s error=%s",
                      resource, ns, name, exc)
            raise storage_error(exc) from exc

    def _emit(self, event: Event, size: int | None = None) -> None:
        """Record and deliver ``event``; ``size`` is its object's JSON length, if known."""
        self._history.append(event)
        if size is None:  # what this event keeps alive once its object is replaced
            size = len(orjson.dumps(event.obj))
        now = time.monotonic()
        self._history_sizes.append((size, now))
        self._history_bytes += size
        self._trim(now)
        for w in tuple(self._watchers.get(event.resource, ())):  # push may close (remove) one
            if w.namespace is None or w.namespace == event.namespace:
                w.push(event)
        for listener in self._listeners:
            listener(event)

    # -- watch -------------------------------------------------------------------------
    def watch(self, resource: str, namespace: str | None = None) -> Watcher:
        w = Watcher(self, resource, namespace)
        self._watchers.setdefault(resource, set()).add(w)
        return w

    def _unsubscribe(self, w: Watcher) -> None:
        ws = self._watchers.get(w.resource)
        if ws is not None:
            ws.discard(w)

    def add_listener(self, listener: Callable[[Event], None]) -> None:
        """Call ``listener`` synchronously for every event (used by in-server controllers)."""
        self._listeners.append(listener)

    def close(self) -> None:
        for ws in list(self._watchers.values()):
            for w in list(ws):
                w.close()
        if self._backend is not None:
            self._backend.close()


class Scan:
    """``(key, object)`` pairs of one resource in key order from a start key, at a revision
    given by ``then`` (the value at that revision of each key changed since)."""

    def __init__(self, store: Store, resource: str, prefix: str, start: str,
                 then: dict[str, dict[str, Any] | None]) -> None:
        self._store = store
        self._index = store._sorted.get(resource, [])
        self._objs = store._objects.get(resource, {})
        self._prefix, self._start, self._then = prefix, start, then

    def _in_range(self, key: str, start: str) -> bool:
        return key >= start and key.startswith(self._prefix)

    def __iter__(self) -> Iterator[tuple[str, dict[str, Any]]]:
        index, objs, then = self._index, self._objs, self._then
        # keys deleted since the revision are no longer in the index: merged back in order
        gone = sorted(k for k, v in then.items()
                      if v is not None and self._in_range(k, self._start)
                      and _split(k) not in objs)
        keys = heapq.merge(_range(index, bisect.bisect_left(index, self._start), self._prefix),
                           gone)
        for key in keys:
            self._store.keys_scanned += 1
            if key in then:
                obj = then[key]
                if obj is None:
                    continue  # created since the revision
            else:
                obj = objs[_split(key)]
            yield key, obj

    def count_after(self, key: str) -> int:
        """How many keys of the range sort after ``key``, by bisection."""
        index, prefix = self._index, self._prefix
        start = key + "\x00"
        end = (bisect.bisect_left(index, prefix[:-1] + chr(ord(prefix[-1]) + 1)) if prefix
               else len(index))
        count = max(0, end - bisect.bisect_left(index, start))
        for k, v in self._then.items():
            if self._in_range(k, start):
                present = _split(k) in self._objs
                count += (v is not None) - present
        return count


def _split(key: str) -> Key:
    ns, _, name = key.partition("/")
    return ns, name


def _range(index: list[str], lo: int, prefix: str) -> Iterator[str]:
    """The keys of ``index`` from position ``lo`` while they start with ``prefix``."""
    for i in range(lo, len(index)):
        key = index[i]
        if not key.startswith(prefix):
            return
        yield key

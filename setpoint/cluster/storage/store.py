"""The store: current objects by resource, one global revision, and a bounded event history.

Everything runs on the event loop thread and no method awaits, so each write is atomic
without locks. Objects are kept as their encoded JSON (what SQLite stores, a fraction of the
memory of the decoded dicts) and decoded on read: every reader gets its own dict. A LIST
that serves objects as stored hands out the bytes themselves (``Scan``, scan.py).

Each resource keeps its keys sorted as etcd orders them (``<namespace>/<name>``, bytewise)
in a ``SortedList``, updated on create and delete in logarithmic time, so that a page of a
list, a namespace's included, starts by bisection and costs what it returns. The event
history is bounded by count, bytes and age, as etcd's compaction bounds the revisions a
watch or a continued list may start from.
"""

from __future__ import annotations

import asyncio
import builtins
import logging
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import orjson
from sortedcontainers import SortedList

from setpoint.cluster.storage.labelindex import LabelIndex, Pair
from setpoint.cluster.storage.scan import Raw, Scan
from setpoint.cluster.storage.sqlite import SqliteBackend, StorageFailure
from setpoint.machinery import errors, gojson
from setpoint.machinery.errors import StatusError
from setpoint.machinery.gojson import go_text

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



# how many of the objects read or written last ``Store.resource_version`` answers without
# decoding (a write reads its object, then asks within the same request; a delete splices
# its resourceVersion into the stored JSON)
READ_VERSIONS_KEPT = 16


class Event:
    """A change of one object. ``prev`` is the object before the change (None on create).

    The objects are decoded from their stored JSON when first asked for, once per event;
    ``raw`` is the object's stored JSON itself, which a watch serving the object as stored
    sends as it is instead of encoding the object again for each watcher."""

    __slots__ = ("_obj", "_prev", "name", "namespace", "raw", "resource", "revision", "type")

    def __init__(self, revision: int, type: str, resource: str, namespace: str, name: str,
                 obj: dict[str, Any] | Raw, prev: dict[str, Any] | Raw | None,
                 raw: Raw | None = None) -> None:
        self.revision = revision
        self.type = type  # ADDED, MODIFIED, DELETED
        self.resource = resource
        self.namespace = namespace
        self.name = name
        self._obj = obj
        self._prev = prev
        self.raw = obj if raw is None and isinstance(obj, bytes) else raw

    @property
    def obj(self) -> dict[str, Any]:
        if isinstance(self._obj, bytes):
            self._obj = _decode(self._obj)
        return self._obj

    @property
    def prev(self) -> dict[str, Any] | None:
        if isinstance(self._prev, bytes):
            self._prev = _decode(self._prev)
        return self._prev

    def __repr__(self) -> str:
        return (f"Event({self.revision}, {self.type}, {self.resource}, "
                f"{self.namespace}/{self.name})")


# One event in the history, compact: (revision, type, resource, namespace, name, object,
# object before, JSON bytes it keeps, time). Past versions are kept as bytes only.
_Record = tuple[int, str, str, str, str, Raw, Raw | None, int, float]


def _encode(obj: dict[str, Any]) -> Raw:
    """``obj`` as JSON, in a buffer of its own size: orjson hands back its working buffer,
    4 KiB or more whatever the object's size, which kept for every object would be most of
    the store's memory. Written as Go writes it (``gojson``): etcd holds a custom resource
    as encoding/json wrote it, and the stored bytes are served as they are."""
    return memoryview(go_text(orjson.dumps(obj))).tobytes()


def _carries(obj: dict[str, Any], labels: tuple[Pair, ...]) -> bool:
    have = obj["metadata"].get("labels") or {}
    return all(have.get(key) == value for key, value in labels)


def _decode(raw: Raw) -> dict[str, Any]:
    obj: dict[str, Any] = orjson.loads(raw)
    return obj


# How many turns of the event loop a woken watcher lets pass before it takes its events, so
# that the writes of those turns go out together (the apiserver's watch handler likewise
# flushes only once its channel is empty: endpoints/handlers/watch.go ServeHTTP)
COALESCE_TURNS = 2


def _wake(waiter: asyncio.Future[None]) -> None:
    """A waiting watcher's timer: its wait is over, with or without events."""
    if not waiter.done():
        waiter.set_result(None)


class Watcher:
    """A subscriber to one resource's events; reads them as an async iterator.

    Its reader waits on one future of its own, woken by the first event pushed or by a
    timer: ``asyncio.wait_for`` around an ``asyncio.Event`` made a task and three futures
    for every wait, and a watch waits once per event it sends."""

    def __init__(self, store: Store, resource: str, namespace: str | None) -> None:
        self._store = store
        self.resource = resource
        self.namespace = namespace
        self._queue: deque[Event] = deque()
        self._waiter: asyncio.Future[None] | None = None  # the reader's, while it waits
        self._closed: asyncio.Event | None = None  # made when first awaited
        self.closed = False

    def push(self, event: Event) -> None:
        if len(self._queue) >= WATCHER_BACKLOG:
            self.close()
            return
        self._queue.append(event)
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def next_batch(self, timeout: float | None = None) -> list[Event]:
        """Wait for events and return all that are queued; [] on timeout or close (a closed
        watcher that fell behind returns nothing more: its client must resume)."""
        if not self._queue and not self.closed:
            loop = asyncio.get_running_loop()
            waiter = self._waiter = loop.create_future()
            timer = None if timeout is None else loop.call_later(timeout, _wake, waiter)
            try:
                await waiter
            finally:
                self._waiter = None
                if timer is not None:
                    timer.cancel()
            for _ in range(COALESCE_TURNS):
                # the writes of the next loop turns join this batch: one chunk (one TLS
                # record, one send) for what would otherwise be sent one event at a time
                await asyncio.sleep(0)
        if self.closed:
            self._queue.clear()
            return []
        batch = list(self._queue)
        self._queue.clear()
        return batch

    async def wait_closed(self) -> None:
        """Return once the watcher is closed: its watch ended, or it fell behind."""
        if self._closed is None:
            self._closed = asyncio.Event()
        if not self.closed:
            await self._closed.wait()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._store._unsubscribe(self)
            self._wake()
            if self._closed is not None:
                self._closed.set()


class Store:
    """Objects of every resource, keyed by (namespace, name), with a global revision."""

    def __init__(self, path: Path | None = None, history: int = DEFAULT_HISTORY) -> None:
        self._objects: dict[str, dict[str, Raw]] = {}  # by "<ns>/<name>"
        self._sorted: dict[str, SortedList[str]] = {}  # "<ns>/<name>" in etcd's order
        self._by_label: dict[str, LabelIndex] = {}  # of resources listed by label so far
        self._history: deque[_Record] = deque()
        self._history_bytes = 0
        self.max_history = history
        self.max_history_bytes = DEFAULT_HISTORY_BYTES
        self.max_history_age_s = DEFAULT_HISTORY_AGE_S
        self.keys_scanned = 0  # keys read by list scans: what a page of a list costs
        self._watchers: dict[str, set[Watcher]] = {}
        # (listener, the resources it follows or None for all), in the order added; and per
        # resource the listeners of its events, worked out at its first event
        self._listeners: list[tuple[Callable[[Event], None], frozenset[str] | None]] = []
        self._listeners_of: dict[str, tuple[Callable[[Event], None], ...]] = {}
        # the objects read last, by the identity of their stored JSON (kept alive here, so
        # that the identity is theirs): their resourceVersion, for :meth:`resource_version`
        self._read_versions: dict[int, tuple[Raw, str | None]] = {}
        self.revision = 0
        self._compacted = 0
        self._backend = SqliteBackend(path) if path is not None else None
        if self._backend is not None:
            revision, rows = self._backend.load()
            for resource, ns, name, raw in rows:
                # (escaped as ``_encode`` does: a file an older version wrote holds them raw)
                self._objects.setdefault(sys.intern(resource), {})[f"{ns}/{name}"] = (
                    go_text(raw))
            for resource, objs in self._objects.items():
                self._sorted[resource] = SortedList(objs)
            self.revision = revision
            self._compacted = revision

    # -- reads -------------------------------------------------------------------------
    def get(self, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        raw = self.get_raw(resource, namespace, name)
        if raw is None:
            return None
        obj = _decode(raw)
        self._remember_version(raw, (obj.get("metadata") or {}).get("resourceVersion"))
        return obj

    def _remember_version(self, raw: Raw, version: str | None) -> None:
        versions = self._read_versions
        if len(versions) >= READ_VERSIONS_KEPT:
            del versions[next(iter(versions))]
        versions[id(raw)] = (raw, version)

    def resource_version(self, resource: str, namespace: str, name: str) -> str | None:
        """The stored object's resourceVersion, None when there is no object. An update
        asks it of the object it read a moment before, to see that nothing wrote it since:
        answered without decoding the object again while its stored JSON is the one read
        (every write stores new JSON)."""
        raw = self.get_raw(resource, namespace, name)
        if raw is None:
            return None
        seen = self._read_versions.get(id(raw))
        if seen is not None and seen[0] is raw:
            return seen[1]
        return (_decode(raw).get("metadata") or {}).get("resourceVersion")

    def get_raw(self, resource: str, namespace: str, name: str) -> Raw | None:
        """An object's stored JSON."""
        objs = self._objects.get(resource)
        return objs.get(f"{namespace}/{name}") if objs else None

    def keys(self, resource: str) -> list[Key]:
        """All keys of a resource in storage order (etcd's: "<namespace>/<name>" as bytes)."""
        return [_split(k) for k in self._sorted.get(resource, ())]

    def list(self, resource: str, namespace: str | None = None,
             labels: tuple[Pair, ...] = ()) -> list[dict[str, Any]]:
        """The objects of a resource (in one namespace; carrying all ``labels``, found by
        the label index without decoding the others) in etcd's key order."""
        scan = self.scan(resource, "" if namespace is None else f"{namespace}/", "", None,
                         labels)
        if scan is None:
            return []
        objs = [_decode(raw) for _, raw in scan]
        if labels:  # the index's candidates are a superset
            objs = [obj for obj in objs if _carries(obj, labels)]
        return objs

    def scan(self, resource: str, prefix: str, after: str, revision: int | None,
             labels: tuple[Pair, ...] = (), inclusive: bool = False) -> Scan | None:
        """The keys that start with ``prefix`` and sort after ``after`` (all when ""), in
        order, with their stored JSON, as they were at ``revision`` (now when None); None
        when it is compacted. With ``labels``, only keys whose object carries all those
        labels now or carried them at ``revision`` need be visited (a superset: the caller
        still checks each object). With ``inclusive``, ``after`` itself is the first key
        (a continue token's start key, as etcd ranges from it).

        Starting costs a bisection plus the events since ``revision``; each step one key.
        """
        then: dict[str, Raw | None] = {}  # keys changed since: value at revision
        if revision is not None and revision < self.revision:
            if revision < self.compacted_revision:
                return None
            for rec in reversed(self._history):  # newest first: the oldest change wins
                if rec[0] <= revision:
                    break
                if rec[2] == resource:
                    then[f"{rec[3]}/{rec[4]}"] = rec[6]
        candidates = self._label_index(resource).candidates(labels) if labels else None
        first = after if inclusive else after + "\x00"
        return Scan(self, self._sorted.get(resource) or SortedList(),
                    self._objects.get(resource, {}), prefix,
                    max(prefix, first) if after else prefix, then, candidates)

    def _label_index(self, resource: str) -> LabelIndex:
        """The resource's label index, built from its objects the first time it is asked
        for, then kept by every write."""
        index = self._by_label.get(resource)
        if index is None:
            index = self._by_label[resource] = LabelIndex()
            for key, raw in self._objects.get(resource, {}).items():
                index.put(key, _decode(raw)["metadata"].get("labels"))
        return index

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
        self._history_bytes = 0
        self._compacted = self.revision

    def _trim(self, now: float) -> None:
        """Drop the oldest events beyond the count, bytes or age the history may hold."""
        history = self._history
        oldest = now - self.max_history_age_s
        while history and (len(history) > self.max_history
                           or self._history_bytes > self.max_history_bytes
                           or history[0][8] < oldest):
            rec = history.popleft()
            self._compacted = rec[0]
            self._history_bytes -= rec[7]

    def snapshot(self, resource: str, revision: int) -> dict[Key, dict[str, Any]] | None:
        """The objects of ``resource`` as they were at ``revision``; None if compacted."""
        scan = self.scan(resource, "", "", revision)
        return None if scan is None else {_split(k): _decode(raw) for k, raw in scan}

    def events_since(self, resource: str, revision: int) -> builtins.list[Event] | None:
        """Events of ``resource`` after ``revision``; None if the history no longer has them."""
        if revision < self.compacted_revision:
            return None
        out: builtins.list[Event] = []
        for rec in reversed(self._history):
            if rec[0] <= revision:
                break
            if rec[2] == resource:
                out.append(Event(*rec[:7]))
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
        meta = dict(obj["metadata"])  # never stamp a dict another stored object shares
        ns, name = meta.get("namespace", ""), meta["name"]
        revision = self.revision + 1
        meta["resourceVersion"] = str(revision)
        try:
            raw = _encode({**obj, "metadata": meta})
        except TypeError as exc:
            raise errors.internal(f"unable to encode {resource[1:] or resource} "
                                  f"{meta.get('name')!r}: {exc}") from None
        size = len(raw)
        # (the key is at most this long: only near a limit is it spelled and counted)
        if size + len(resource) + len(ns) + len(name) + 12 > MAX_REQUEST_BYTES - 64:
            if size > MAX_REQUEST_BYTES - 64:  # the object as given
                size = len(gojson.dumps(obj))
            too_large = request_too_large(
                size + len(f"/registry/{resource.lstrip('/')}/{ns}/{name}"))
            if too_large is not None:
                raise too_large
        self._persist(resource, ns, name, raw, revision)
        obj["metadata"] = meta
        self.revision = revision
        objs = self._objects.get(resource)
        if objs is None:
            objs = self._objects[resource] = {}
        key = f"{ns}/{name}"
        prev = objs.get(key)
        if prev is None:
            keys = self._sorted.get(resource)
            if keys is None:  # (not setdefault: a SortedList built per write costs a µs)
                keys = self._sorted[resource] = SortedList()
            keys.add(key)
        objs[key] = raw
        self._remember_version(raw, meta["resourceVersion"])
        index = self._by_label.get(resource)
        if index is not None:
            index.put(key, meta.get("labels"))
        self._emit(Event(revision, "ADDED" if prev is None else "MODIFIED",
                         resource, ns, name, obj, prev, raw), raw, prev)
        return obj

    def delete(self, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        """Remove an object; the DELETED event carries a new resourceVersion. As with
        :meth:`put`, nothing changes unless the database commits. Returns the object as
        deleted (None when there was none)."""
        event = self._remove(resource, namespace, name)
        return None if event is None else event.obj

    def discard(self, resource: str, namespace: str, name: str) -> bool:
        """:meth:`delete` without the deleted object back (whether there was one): the
        registry answers a DELETE with the object it read, so the stored JSON need not be
        decoded for it; the DELETED event decodes it only when something reads it."""
        return self._remove(resource, namespace, name) is not None

    def _remove(self, resource: str, namespace: str, name: str) -> Event | None:
        objs = self._objects.get(resource)
        key = f"{namespace}/{name}"
        prev_raw = objs.get(key) if objs else None
        if objs is None or prev_raw is None:
            return None
        revision = self.revision + 1
        self._persist(resource, namespace, name, None, revision)
        self.revision = revision
        del objs[key]
        self._sorted[resource].remove(key)
        index = self._by_label.get(resource)
        if index is not None:
            index.discard(key)
        gone_raw = self._gone(prev_raw, revision)
        event = Event(revision, "DELETED", resource, namespace, name, gone_raw, prev_raw,
                      gone_raw)
        self._emit(event, gone_raw, prev_raw)
        return event

    def _gone(self, raw: Raw, revision: int) -> Raw:
        """``raw`` with the deletion's resourceVersion: the stored JSON with its version
        replaced in place when the version read with it is known (a get or a put just
        before) and written nowhere else in it (an object reference could carry the same
        text), else decoded and encoded again."""
        seen = self._read_versions.get(id(raw))
        if seen is not None and seen[0] is raw and seen[1]:
            old = b'"resourceVersion":"' + seen[1].encode() + b'"'
            if raw.count(old) == 1:
                return raw.replace(old, b'"resourceVersion":"%d"' % revision)
        prev = _decode(raw)
        return _encode({**prev, "metadata": {**prev["metadata"],
                                             "resourceVersion": str(revision)}})

    def drop_resource(self, resource: str) -> None:
        """Forget every object of a resource without events (a CRD's storage removed)."""
        for ns, name in self.keys(resource):
            self.delete(resource, ns, name)
        self._objects.pop(resource, None)
        self._sorted.pop(resource, None)
        self._by_label.pop(resource, None)

    def _persist(self, resource: str, ns: str, name: str, raw: Raw | None,
                 revision: int) -> None:
        if self._backend is None:
            return
        try:
            self._backend.put(resource, ns, name, raw, revision)
        except StorageFailure as exc:
            log.error("storage_write_failed resource=%s namespace=%s name=%s error=%s",
                      resource, ns, name, exc)
            raise storage_error(exc) from exc

    def _emit(self, event: Event, raw: Raw, prev: Raw | None) -> None:
        """Record ``event`` (its objects as the JSON ``raw`` and ``prev``) and deliver it."""
        now = time.monotonic()
        size = len(raw)  # what this event keeps alive once its object is replaced
        self._history.append((event.revision, event.type, event.resource, event.namespace,
                              event.name, raw, prev, size, now))
        self._history_bytes += size
        self._trim(now)
        for w in tuple(self._watchers.get(event.resource, ())):  # push may close (remove) one
            if w.namespace is None or w.namespace == event.namespace:
                w.push(event)
        listeners = self._listeners_of.get(event.resource)
        if listeners is None:
            listeners = self._listeners_of[event.resource] = tuple(
                f for f, resources in self._listeners
                if resources is None or event.resource in resources)
        for listener in listeners:
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

    def add_listener(self, listener: Callable[[Event], None],
                     resources: Iterable[str] | None = None) -> None:
        """Call ``listener`` synchronously for every event (used by in-server controllers),
        or only for events of ``resources`` (storage keys): a write calls only the
        listeners that follow its resource, in the order they were added."""
        self._listeners.append((listener, None if resources is None else frozenset(resources)))
        self._listeners_of.clear()

    def close(self) -> None:
        for ws in list(self._watchers.values()):
            for w in list(ws):
                w.close()
        if self._backend is not None:
            self._backend.close()


def _split(key: str) -> Key:
    ns, _, name = key.partition("/")
    return ns, name

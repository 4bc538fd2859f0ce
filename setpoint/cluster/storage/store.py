"""The store: current objects by resource, one global revision, and a bounded event history.

Everything runs on the event loop thread and no method awaits, so each write is atomic
without locks. Stored dicts are never mutated after they are stored: readers may hand them
out (serialize them) without copying.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable, Iterable
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
# A watcher that falls this many events behind is closed, as the apiserver's watch cache
# closes watchers whose buffer fills: the client resumes from its last resourceVersion.
WATCHER_BACKLOG = 50_000


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
        self._sorted: dict[str, list[Key] | None] = {}
        self._history: deque[Event] = deque(maxlen=history)
        self._watchers: dict[str, set[Watcher]] = {}
        self._listeners: list[Callable[[Event], None]] = []
        self.revision = 0
        self._compacted = 0
        self._backend = SqliteBackend(path) if path is not None else None
        if self._backend is not None:
            revision, rows = self._backend.load()
            for resource, ns, name, obj in rows:
                self._objects.setdefault(resource, {})[(ns, name)] = obj
            self.revision = revision
            self._compacted = revision

    # -- reads -------------------------------------------------------------------------
    def get(self, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        objs = self._objects.get(resource)
        return objs.get((namespace, name)) if objs else None

    def keys(self, resource: str) -> list[Key]:
        """All keys of a resource in storage order (namespace, then name)."""
        keys = self._sorted.get(resource)
        if keys is None:
            keys = sorted(self._objects.get(resource, {}))
            self._sorted[resource] = keys
        return keys

    def list(self, resource: str, namespace: str | None = None) -> list[dict[str, Any]]:
        objs = self._objects.get(resource)
        if not objs:
            return []
        keys = self.keys(resource)
        if namespace is None:
            return [objs[k] for k in keys]
        return [objs[k] for k in keys if k[0] == namespace]

    def count(self, resource: str) -> int:
        return len(self._objects.get(resource, ()))

    def resources(self) -> Iterable[str]:
        return list(self._objects)

    @property
    def compacted_revision(self) -> int:
        """The newest revision whose events are no longer in the history."""
        if len(self._history) == self._history.maxlen:
            return max(self._compacted, self._history[0].revision - 1)
        return self._compacted

    def compact(self) -> None:
        """Forget the event history up to now (as etcd's periodic compaction does)."""
        self._history.clear()
        self._compacted = self.revision

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

    def events_since(self, resource: str, revision: int) -> list[Event] | None:
        """Events of ``resource`` after ``revision``; None if the history no longer has them."""
        if revision < self.compacted_revision:
            return None
        out: list[Event] = []
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
        writes, and answers an encoding failure with an internal error).

        The database commits first: when it refuses (a full disk), memory, the revision and
        the watchers are untouched and the write fails as a storage error (see
        :func:`storage_error`), so nothing is served that a restart would take back."""
        try:
            orjson.dumps(obj)
        except TypeError as exc:
            raise errors.internal(f"unable to encode {resource[1:] or resource} "
                                  f"{obj['metadata'].get('name')!r}: {exc}") from None
        meta = dict(obj["metadata"])  # never stamp a dict another stored object shares
        obj["metadata"] = meta
        ns, name = meta.get("namespace", ""), meta["name"]
        revision = self.revision + 1
        meta["resourceVersion"] = str(revision)
        self._persist(resource, ns, name, obj, revision)
        self.revision = revision
        objs = self._objects.setdefault(resource, {})
        prev = objs.get((ns, name))
        if prev is None:
            self._sorted[resource] = None
        objs[(ns, name)] = obj
        self._emit(Event(revision, "ADDED" if prev is None else "MODIFIED",
                         resource, ns, name, obj, prev))
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
        self._sorted[resource] = None
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

    def _emit(self, event: Event) -> None:
        self._history.append(event)
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

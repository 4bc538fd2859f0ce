"""WATCH: initial events, replay from a resourceVersion, live events, bookmarks, timeouts.

A watch is a ``Watcher`` on the store plus the rules of the apiserver's watch cache: events
from the history after the requested revision (410 Expired when it is older than the
history), filtered by selectors, with an object that stops matching reported as DELETED and
one that starts matching as ADDED.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import time
from collections.abc import AsyncIterator, Callable

import orjson

from setpoint.cluster.registry.listing import Filter, parse_rv
from setpoint.cluster.registry.options import ListOptions
from setpoint.cluster.registry.rest import REST
from setpoint.cluster.registry.types import ResourceType
from setpoint.cluster.storage import Event
from setpoint.machinery import errors
from setpoint.machinery.objects import Obj

# (type, object): the object as served, or an ``orjson.Fragment`` of its stored JSON when
# that is what it is served as (see WatchStream's ``as_stored_json``)
WatchEvent = tuple[str, Obj]

DEFAULT_TIMEOUT = 1800  # the apiserver picks 30-60 min for watches without timeoutSeconds
BOOKMARK_EVERY = 60.0
BOOKMARK_BEFORE_DEADLINE = 2.0
# metav1.InitialEventsListBlueprintAnnotationKey
BLUEPRINT_ANNOTATION = "kubernetes.io/initial-events-list-blueprint"


# a change whose field selection waits for its objects to be converted by the CRD's webhook:
# its object is {"type", "object", "prev", "revision"} (see WatchStream.resolve_converted)
CHANGE = "CHANGE"


class WatchStream:
    """The events of one watch request, as an async iterator of (type, object)."""

    def __init__(self, rest: REST, rt: ResourceType, ns: str | None, opts: ListOptions,
                 present: Callable[[Obj], Obj], *, as_stored_json: bool = False,
                 present_bookmark: Callable[[Obj], Obj] | None = None) -> None:
        """``as_stored_json``: the events go straight to a JSON encoder, so an object served
        as it is stored (``present`` returns it unchanged) may be its stored JSON, encoded
        once for every watcher of the change instead of once per watcher.
        ``present_bookmark``: the transformation a bookmark's object gets (a Table or
        PartialObjectMetadata watch transforms it as any event's object)."""
        self._present_bookmark = present_bookmark
        self._rest = rest
        self._as_stored_json = as_stored_json
        self._rt = rt
        self._ns = ns
        self._opts = opts
        self._present = present
        self._filter = Filter(rest.codec, rt, opts)
        store = rest.store
        # subscribe before reading the state so that nothing falls between the two
        self._watcher = store.watch(rt.storage_key, ns)
        timeout = opts.timeout_seconds if opts.timeout_seconds else DEFAULT_TIMEOUT
        self._deadline = time.monotonic() + timeout
        self._initial: list[WatchEvent] = []
        self._revision = store.revision
        # events up to this revision are not sent: a watch from a resourceVersion the store
        # has not reached yet starts at once and skips them (cache_watcher.go process sends
        # only events newer than the watch's resourceVersion)
        self._after = 0
        self.error: Obj | None = None
        self._start()

    def _start(self) -> None:
        store = self._rest.store
        # cacher.go Watch decides on the parsed resourceVersion: "", "0" and "00" alike
        since = parse_rv(self._opts.resource_version)
        send_initial = self._opts.send_initial_events
        if send_initial is None:
            send_initial = since == 0
        if send_initial:
            for obj in store.list(self._rt.storage_key, self._ns):
                if self._filter.fields_after_conversion:
                    if self._filter.matches(obj):
                        self._initial.append((CHANGE, {"type": "ADDED", "object": obj,
                                                       "prev": None, "revision": 0}))
                elif self._filter.empty or self._filter.matches(obj):
                    self._initial.append(("ADDED", self._present(obj)))
            if self._opts.allow_bookmarks:
                self._initial.append(("BOOKMARK", self._bookmark(initial_end=True)))
            return
        if since == 0:  # from now on
            return
        events = store.events_since(self._rt.storage_key, since)
        if events is None:
            self.error = errors.resource_expired(
                f"too old resource version: {since} ({store.compacted_revision + 1})"
            ).to_status()
            self._watcher.close()
            return
        self._revision = self._after = since
        for ev in events:
            if self._ns is None or ev.namespace == self._ns:
                translated = self._translate(ev)
                if translated is not None:
                    self._initial.append(translated)

    def _bookmark(self, initial_end: bool = False) -> Obj:
        meta: Obj = {"resourceVersion": str(self._revision), "creationTimestamp": None}
        if initial_end:
            # the blueprint is an empty list of the kind, for clients that build one
            blueprint = orjson.dumps({"kind": self._rt.list_kind,
                                      "apiVersion": self._rt.api_version,
                                      "metadata": {}, "items": None}) + b"\n"
            meta["annotations"] = {
                "k8s.io/initial-events-end": "true",
                BLUEPRINT_ANNOTATION: base64.b64encode(blueprint).decode(),
            }
        bookmark = {"kind": self._rt.kind, "apiVersion": self._rt.api_version, "metadata": meta}
        return bookmark if self._present_bookmark is None else self._present_bookmark(bookmark)

    def _translate(self, ev: Event) -> WatchEvent | None:
        if ev.revision <= self._after:
            return None
        self._revision = max(self._revision, ev.revision)
        flt = self._filter
        if flt.empty:
            return ev.type, self._shown(ev)
        now_matches = ev.type != "DELETED" and flt.matches(ev.obj)
        was_matching = ev.prev is not None and flt.matches(ev.prev)
        if flt.fields_after_conversion:
            if not now_matches and not was_matching:
                return None
            return CHANGE, {"type": ev.type, "object": ev.obj,
                            "prev": ev.prev if was_matching else None,
                            "revision": ev.revision}
        if ev.type == "DELETED":
            return ("DELETED", self._shown(ev)) if was_matching else None
        if now_matches and was_matching:
            return "MODIFIED", self._shown(ev)
        if now_matches:
            return "ADDED", self._shown(ev)
        if was_matching:
            assert ev.prev is not None
            gone = {**ev.prev, "metadata": {**ev.prev["metadata"],
                                            "resourceVersion": str(ev.revision)}}
            return "DELETED", self._present(gone)
        return None

    def resolve_converted(self, change: Obj, obj: Obj, prev: Obj | None
                          ) -> WatchEvent | None:
        """The event a CHANGE makes once its object (and the old one, when that matched
        the labels) are converted: the field selector decides on the converted forms as
        the cacher's watchers do (cache_watcher.go convertToWatchEvent)."""
        flt = self._filter
        now_matches = change["type"] != "DELETED" and flt.matches_converted(obj)
        was_matching = prev is not None and flt.matches_converted(prev)
        if change["type"] == "DELETED":
            return ("DELETED", obj) if was_matching else None
        if now_matches and was_matching:
            return "MODIFIED", obj
        if now_matches:
            return "ADDED", obj
        if was_matching and prev is not None:
            return "DELETED", {**prev, "metadata": {
                **prev["metadata"], "resourceVersion": str(change["revision"])}}
        return None

    def _shown(self, ev: Event) -> Obj:
        """The event's object as served: its stored JSON when it is served as stored (the
        JSON ``Store.put`` encoded the object to, so the same bytes as encoding it again)."""
        obj = ev.obj
        shown = self._present(obj)
        if shown is obj and self._as_stored_json and ev.raw is not None:
            return orjson.Fragment(ev.raw)  # type: ignore[return-value]
        return shown

    async def __aiter__(self) -> AsyncIterator[list[WatchEvent]]:
        """Batches of events; ends at the deadline or when the store closes."""
        if self.error is not None:
            return
        try:
            if self._initial:
                yield self._initial
                self._initial = []
            next_bookmark = self._next_bookmark(time.monotonic())
            while True:
                now = time.monotonic()
                if now >= self._deadline:
                    return
                wait = self._deadline - now
                if next_bookmark is not None:
                    wait = min(wait, max(next_bookmark - now, 0))
                batch = await self._watcher.next_batch(wait)
                if self._watcher.closed and not batch:
                    return
                out = [t for t in (self._translate(ev) for ev in batch) if t is not None]
                now = time.monotonic()
                if next_bookmark is not None and now >= next_bookmark:
                    if self._rest.store.revision >= self._after:
                        # a bookmark below the watch's resourceVersion is skipped as well
                        out.append(("BOOKMARK", self._bookmark()))
                    next_bookmark = self._next_bookmark(now)
                if out:
                    yield out
        finally:
            self._watcher.close()

    def _next_bookmark(self, now: float) -> float | None:
        if not self._opts.allow_bookmarks:
            return None
        before_deadline = self._deadline - BOOKMARK_BEFORE_DEADLINE
        candidate = min(now + BOOKMARK_EVERY, before_deadline)
        return candidate if candidate > now else None

    async def wait_closed(self) -> None:
        """Return once the watch has ended while its client does not take its events: when
        its timeout passes (the handler's ``timeoutCh`` ends the watch whatever the client
        does: handlers/watch.go ``HandleHTTP``), or when its backlog is full
        (``storage.store.WATCHER_BACKLOG``), as the watch cache terminates a watcher whose
        buffer stays full (cache_watcher.go ``add``)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._watcher.wait_closed(),
                                   max(self._deadline - time.monotonic(), 0.0))

    def close(self) -> None:
        self._watcher.close()



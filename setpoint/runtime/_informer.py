"""Informers: keep a :class:`~setpoint.runtime._cache.Store` in step with the API server.

An :class:`Informer` is client-go's reflector plus its shared-informer fan-out, for one
kind and one scope (namespace, label and field selectors):

1. list every object (paginated, one consistent snapshot), replace the store with them and
   tell the handlers what changed since the previous list (adds, updates, deletes);
2. watch from the list's resourceVersion with bookmarks, applying each event to the store
   and handing it to the handlers;
3. when a watch ends (server timeout, dropped connection), watch again from the last
   resourceVersion seen, bookmarks included, so nothing is missed and nothing is listed
   again; only a ``410 Gone`` (the version was compacted away) makes it list again;
4. on any other failure, wait with exponential backoff (0.8 s doubling to 30 s, jittered)
   and resume.

Objects pass through a transform before they are stored; the default drops
``metadata.managedFields``, which is often half of an object and never read by a
controller.

Writes a controller makes can be recorded with :meth:`Informer.record_write`, so its next
read sees them at once; the watch event that follows for the same version is then known
and not handed out a second time. A write described by an
:class:`~setpoint.runtime._ownwrites.OwnWrite` whose answer is exactly its echo reaches the
handlers that know about own writes (``on_own_write``), so the reconcile that made it is
not queued again for it; any other answer is an ordinary add or update.

The watch event of a write often arrives before the write's answer has been read (the
server sends both at about the same time, on two connections; which one this process reads
first is up to its event loop, and under load it is often the watch). So a writer
announces a write with :meth:`Informer.begin_write` before sending it: until
:meth:`Informer.end_write`, the watch events of that object are stored at once (reads see
them) but their dispatch is held. The write's answer (:meth:`record_write`) then releases
them in order, the one that is exactly its echo as an own write; a failed or cancelled
write, a relist, a second write ending, or the hold's time limit releases them as they
would have been dispatched. Holding only ever delays an event, never drops one.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from setpoint.client import (
    ApiError,
    Client,
    Echo,
    ForbiddenError,
    GoneError,
    NotFoundError,
    ResourceInfo,
    UnauthorizedError,
    UnknownResourceError,
)
from setpoint.machinery import fields as field_selectors
from setpoint.machinery import labels as label_selectors
from setpoint.machinery.objects import Obj
from setpoint.runtime._cache import Store
from setpoint.runtime._logs import format_fields
from setpoint.runtime._objects import (
    KindKey,
    as_ref,
    key_of,
    kind_key,
    meta,
    namespace_of,
    resource_version_of,
)
from setpoint.runtime._ownwrites import OwnWrite
from setpoint.runtime._retries import error_text

log = logging.getLogger(__name__)

Transform = Callable[[Obj], Obj]

RefusalHandler = Callable[["Informer", str, ApiError, float], None]
"""Told of each refused list or watch: (informer, verb, the 401 or 403, seconds until the
retry). client-go's ``WatchErrorHandler`` (tools/cache/reflector.go), for refusals: the
manager's names the RBAC that would end them."""


def drop_managed_fields(obj: Obj) -> Obj:
    """The default transform: forget ``metadata.managedFields`` to save memory."""
    metadata = obj.get("metadata")
    if isinstance(metadata, dict):
        metadata.pop("managedFields", None)
    return obj


class EventHandler(Protocol):
    """Hears about changes to an informer's objects; must not block or await.

    A handler may also define ``on_own_write(old, new, write)`` (``old`` None for a new
    object): it then hears of a recorded write whose answer is exactly the
    :class:`~setpoint.runtime._ownwrites.OwnWrite` ``write`` through it, instead of
    ``on_add``/``on_update``.
    """

    def on_add(self, obj: Obj) -> None: ...
    def on_update(self, old: Obj, new: Obj) -> None: ...
    def on_delete(self, obj: Obj) -> None: ...


class Backoff:
    """Exponential backoff with jitter, reset after a quiet period (client-go's reflector
    uses 800 ms doubling to 30 s, reset after 2 minutes without failures)."""

    def __init__(self, initial: float = 0.8, maximum: float = 30.0, factor: float = 2.0,
                 jitter: float = 1.0, reset_after: float = 120.0) -> None:
        self.initial, self.maximum, self.factor = initial, maximum, factor
        self.jitter, self.reset_after = jitter, reset_after
        self._current = 0.0
        self._last = 0.0

    def next(self) -> float:
        """The next wait in seconds."""
        now = time.monotonic()
        if self._current == 0.0 or now - self._last > self.reset_after:
            self._current = self.initial
        else:
            self._current = min(self._current * self.factor, self.maximum)
        self._last = now
        return self._current * (1.0 + random.random() * self.jitter)

    def reset(self) -> None:
        self._current = 0.0


@dataclass(slots=True)
class _InFlight:
    """The writes in flight to one object and the watch events held meanwhile."""

    writes: int = 0
    limit: float = 0.0
    """How long an event may be held: the longest write timeout announced."""
    held: list[tuple[str, Obj | None, Obj]] = field(default_factory=list)
    """(event type, object before, object): in the order they arrived."""
    timer: asyncio.TimerHandle | None = None


def _int_rv(obj: Obj) -> int | None:
    rv = (obj.get("metadata") or _NO_METADATA).get("resourceVersion")
    if type(rv) is not str:
        rv = str(rv or "")
    return int(rv) if rv.isdigit() else None


_NO_METADATA: dict[str, Any] = {}


class Informer:
    """Lists and watches one kind into a store and notifies handlers of every change."""

    def __init__(
        self, client: Client, kind: object, *, store: Store | None = None,
        namespace: str | None = None, label_selector: str | None = None,
        field_selector: str | None = None, transform: Transform | None = drop_managed_fields,
        page_size: int = 500, min_watch_timeout: int = 300, backoff: Backoff | None = None,
        on_refused: RefusalHandler | None = None,
    ) -> None:
        self.client = client
        self.kind: KindKey = kind_key(kind)
        self._ref = as_ref(kind)
        self.store = store if store is not None else Store()
        self.namespace = namespace or None
        self.label_selector = label_selector or None
        self.field_selector = field_selector or None
        self._labels = label_selectors.parse(label_selector) if label_selector else None
        self._fields = field_selectors.parse(field_selector) if field_selector else None
        self.transform = transform
        self.page_size = page_size
        self.min_watch_timeout = min_watch_timeout
        self.backoff = backoff or Backoff()
        self.info: ResourceInfo | None = None
        self.resource_version: str | None = None
        """Where the next watch starts; None means "list first"."""
        self._handlers: list[EventHandler] = []
        self._synced = asyncio.Event()
        self.lists = 0
        """How many times the informer listed (1 unless it had to relist)."""
        self.watches = 0
        """How many watch requests it opened (resumes included)."""
        self.refusal: tuple[str, ApiError] | None = None
        """The last 401 or 403 the server answered, with the verb refused (the informer
        retries them, as client-go's reflector does; a manager gives up only when its caches
        have not synced within its cache-sync timeout)."""
        self.refused = asyncio.Event()
        self.on_refused = on_refused
        """Logs each refusal instead of the informer's own line, when set."""
        self.last_error: str | None = None
        """Why the last list or watch failed (other than a refusal), for people."""
        self._in_flight: dict[str, _InFlight] = {}

    def __repr__(self) -> str:
        scope = f"namespace={self.namespace!r}" if self.namespace else "all namespaces"
        return f"Informer({self.kind}, {scope}, objects={len(self.store)})"

    # -- wiring ----------------------------------------------------------------------------

    def add_handler(self, handler: EventHandler) -> None:
        """Register ``handler``; if the informer has synced, it hears an add for every
        object already stored, as a late subscriber of a shared informer does."""
        self._handlers.append(handler)
        if self.has_synced:
            for obj in self.store:
                self._call(handler.on_add, obj)

    def remove_handler(self, handler: EventHandler) -> None:
        """Stop telling ``handler`` of changes (client-go's ``RemoveEventHandler``); a
        handler not registered is no error."""
        if handler in self._handlers:
            self._handlers.remove(handler)

    @property
    def has_synced(self) -> bool:
        """True once the first list is in the store and handed to the handlers."""
        return self._synced.is_set()

    async def wait_synced(self) -> None:
        await self._synced.wait()

    # -- running ---------------------------------------------------------------------------

    async def run(self) -> None:
        """List and watch until cancelled."""
        while True:
            try:
                if self.info is None:
                    self.info = await self.client.resolve(self._ref)
                    # its writes' answers remembered, their watch events then told
                    # without decoding them (setpoint.client.echoes)
                    self.client.write_answers.watch(self.info)
                if self.resource_version is None:
                    await self._list()
                await self._watch()
            except asyncio.CancelledError:
                raise
            except GoneError as exc:
                log.info("informer_relist kind=%s reason=%s", self.kind, exc.message)
                self.resource_version = None
            except (UnauthorizedError, ForbiddenError) as exc:
                verb = "discover" if self.info is None else (
                    "list" if self.resource_version is None else "watch")
                self.refusal = (verb, exc)
                self.refused.set()
                wait = self.backoff.next()
                if self.on_refused is not None:
                    self.on_refused(self, verb, exc, wait)
                else:
                    log.warning("informer_refused kind=%s verb=%s code=%d %s retry_in=%.2f",
                                self.kind, verb, exc.code,
                                format_fields({"message": exc.message}), wait)
                await asyncio.sleep(wait)
            except Exception as exc:
                wait = self.backoff.next()
                self.last_error = self._failure_text(exc)
                log.warning("informer_error kind=%s %s retry_in=%.2f", self.kind,
                            format_fields({"error": self.last_error}), wait)
                await asyncio.sleep(wait)

    def _failure_text(self, exc: Exception) -> str:
        """Why the informer failed, for people. A 404 to the first list (or a kind discovery
        does not know) means the server does not serve the resource: most often a CRD not
        installed yet, which controller-runtime's Kind source logs as "if kind is a CRD, it
        should be installed before calling Start" (pkg/internal/source/kind.go); it keeps
        retrying, as here, since the CRD may be on its way."""
        unserved = isinstance(exc, UnknownResourceError) or (
            isinstance(exc, NotFoundError) and self.resource_version is None)
        if not unserved:
            return error_text(exc)
        plural = self.info.resource if self.info is not None else "the resource"
        return (f"the server does not serve {plural} in {self.kind.api_version} (kind "
                f"{self.kind.kind}): if it is a "
                "CustomResourceDefinition, install it (`setpoint generate crds MODULE | "
                "kubectl apply -f -`); the informer retries until it is served")

    async def _list(self) -> None:
        assert self.info is not None
        page = await self.client.list_all(
            self.info, namespace=self.namespace, label_selector=self.label_selector,
            field_selector=self.field_selector, page_size=self.page_size,
        )
        self.lists += 1
        objs = [self._transform(o) for o in page.items]
        for key in list(self._in_flight):
            self._release(key)  # what the watch said before the list, in order
        before = self.store.replace(objs)
        self.resource_version = page.resource_version
        for obj in objs:
            old = before.pop(key_of(obj), None)
            if old is None:
                self._dispatch_add(obj)
            elif resource_version_of(old) != resource_version_of(obj):
                self._dispatch_update(old, obj)
        for old in before.values():
            self._dispatch_delete(old)
        self._synced.set()
        log.debug("informer_listed kind=%s objects=%d resource_version=%s",
                  self.kind, len(objs), self.resource_version)

    async def _watch(self) -> None:
        assert self.info is not None
        timeout = int(self.min_watch_timeout * (1.0 + random.random()))
        started = time.monotonic()
        events = 0
        self.watches += 1
        watch = self.client.watch(
            self.info, namespace=self.namespace, resource_version=self.resource_version,
            label_selector=self.label_selector, field_selector=self.field_selector,
            timeout_seconds=timeout, allow_bookmarks=True, echoes=True,
        )
        async with watch:
            async for event_type, obj in watch:
                events += 1
                self.resource_version = watch.resource_version
                if event_type == "BOOKMARK":
                    continue
                item: object = obj  # an Echo too, on this watch (echoes=True)
                if isinstance(item, Echo):
                    if self._known(item):
                        self.backoff.reset()
                        continue  # a recorded write's own event (as _apply finds it)
                    obj = item.decode()
                assert isinstance(obj, dict)
                self._apply(event_type, obj)
                self.backoff.reset()
        if events == 0 and time.monotonic() - started < 1.0:
            # a watch the server ends at once, again and again, must not spin
            await asyncio.sleep(self.backoff.next())

    def _known(self, echo: Echo) -> bool:
        """Whether the store holds the echoed version or a later one already (a recorded
        write's answer): then its event changes nothing and is handed to no one, as
        :meth:`_apply` finds for a decoded one."""
        namespace = echo.namespace  # object_key, inline: two echoes per reconcile
        old = self.store.get(f"{namespace}/{echo.name}" if namespace else echo.name)
        if old is None:
            return False
        old_rv = _int_rv(old)
        rv = echo.resource_version
        return old_rv is not None and rv.isdigit() and int(rv) <= old_rv

    def _apply(self, event_type: str, obj: Obj) -> None:
        obj = self._transform(obj)
        key = key_of(obj)
        if event_type == "DELETED":
            self.store.delete(key)
            if not (self._in_flight and self._hold(key, event_type, None, obj)):
                self._dispatch_delete(obj)
            return
        old = self.store.get(key)
        if old is not None:
            old_rv, new_rv = _int_rv(old), _int_rv(obj)
            if old_rv is not None and new_rv is not None and new_rv <= old_rv:
                return  # already known from a recorded write
        self.store.put(obj, key)
        if self._in_flight and self._hold(key, event_type, old, obj):
            return
        if old is None:
            self._dispatch_add(obj)
        else:
            self._dispatch_update(old, obj)

    # -- writes made by this process -------------------------------------------------------

    def record_write(self, obj: Obj, write: OwnWrite | None = None) -> bool:
        """Put an object the server just returned from a write into the store, ahead of its
        watch event, and tell the handlers: as an own write when ``write`` says the answer
        is exactly its echo (compared with what the store held), else as any change.

        Only done when the object is in this informer's scope and its resourceVersion is
        numeric and newer than the stored one (so a later change is never overwritten);
        returns whether it was recorded. Events held for the object meanwhile
        (:meth:`begin_write`) are dispatched first, in order; the one that is exactly
        ``write``'s echo as an own write.
        """
        key = key_of(obj)
        # _release's own first question asked here: mostly nothing is held (per write)
        held = self._in_flight.get(key) if self._in_flight else None
        newest = self._release(key, write) if held is not None and held.held else None
        if not self.has_synced or not self._in_scope(obj):
            return False
        if self._fields is not None:
            # only the server knows each kind's field labels (renamed ones, unset values
            # read as "false" or "0"): a write's answer read here could keep an object the
            # server's filtered watch leaves out, so such an informer waits for its watch
            return False
        new_rv = _int_rv(obj)
        if new_rv is None:
            return False
        if newest is not None and new_rv <= newest:
            return False  # its event, or a later one (a deletion too), was handed out
        old = self.store.get(key)
        if old is not None:
            old_rv = _int_rv(old)
            if old_rv is None or new_rv <= old_rv:
                return False
        obj = self._transform(obj)
        self.store.put(obj)
        self._dispatch_change(old, obj, write)
        return True

    def begin_write(self, key: str, limit: float) -> None:
        """A write to the object ``key`` (``namespace/name``) is about to be sent: hold the
        dispatch of its watch events (at most ``limit`` seconds, the write's timeout) until
        :meth:`record_write` or :meth:`end_write`. Each call needs one ``end_write``."""
        entry = self._in_flight.get(key)
        if entry is None:
            entry = self._in_flight[key] = _InFlight()
        entry.writes += 1
        entry.limit = max(entry.limit, limit)

    def end_write(self, key: str) -> None:
        """The write announced by :meth:`begin_write` is over, answered or not: dispatch
        what is still held for it (a failed or cancelled write's event is a change like
        any other; so is one that may be another write's echo, still in flight)."""
        entry = self._in_flight.get(key)
        if entry is None:
            return
        if entry.held:  # asked here: a call per write otherwise, mostly for nothing
            self._release(key)
        entry.writes -= 1
        if entry.writes <= 0:
            del self._in_flight[key]

    def _hold(self, key: str, event_type: str, old: Obj | None, obj: Obj) -> bool:
        entry = self._in_flight.get(key)
        if entry is None:
            return False
        entry.held.append((event_type, old, obj))
        if entry.timer is None:
            entry.timer = asyncio.get_running_loop().call_later(
                entry.limit, self._release, key)
        return True

    def _release(self, key: str, write: OwnWrite | None = None) -> int | None:
        """Dispatch the events held for ``key`` in the order they came, the exact echo of
        ``write`` as an own write; returns the newest resourceVersion among them."""
        entry = self._in_flight.get(key)
        if entry is None or not entry.held:
            return None
        held, entry.held = entry.held, []
        if entry.timer is not None:
            entry.timer.cancel()
            entry.timer = None
        newest: int | None = None
        for event_type, old, obj in held:
            rv = _int_rv(obj)
            if rv is not None and (newest is None or rv > newest):
                newest = rv
            if event_type == "DELETED":
                self._dispatch_delete(obj)
            else:
                self._dispatch_change(old, obj, write)
        return newest

    def _in_scope(self, obj: Obj) -> bool:
        if self.namespace and namespace_of(obj) != self.namespace:
            return False
        return self._labels is None or self._labels.matches(meta(obj).get("labels") or {})

    # -- fan-out ---------------------------------------------------------------------------

    def _transform(self, obj: Obj) -> Obj:
        return self.transform(obj) if self.transform is not None else obj

    def _dispatch_change(self, old: Obj | None, new: Obj, write: OwnWrite | None) -> None:
        """An add or update, or the own write ``write`` when ``new`` is exactly its echo."""
        if write is not None and write.is_echo(old, new):
            self._dispatch_own_write(old, new, write)
        elif old is None:
            self._dispatch_add(new)
        else:
            self._dispatch_update(old, new)

    def _dispatch_add(self, obj: Obj) -> None:
        for handler in self._handlers:
            self._call(handler.on_add, obj)

    def _dispatch_update(self, old: Obj, new: Obj) -> None:
        for handler in self._handlers:
            self._call(handler.on_update, old, new)

    def _dispatch_own_write(self, old: Obj | None, new: Obj, write: OwnWrite) -> None:
        for handler in self._handlers:
            on_own_write = getattr(handler, "on_own_write", None)
            if on_own_write is not None:
                self._call(on_own_write, old, new, write)
            elif old is None:
                self._call(handler.on_add, new)
            else:
                self._call(handler.on_update, old, new)

    def _dispatch_delete(self, obj: Obj) -> None:
        for handler in self._handlers:
            self._call(handler.on_delete, obj)

    def _call(self, fn: Callable[..., None], *args: Any) -> None:
        try:
            fn(*args)
        except Exception:
            # one broken handler must not stop the others or the informer
            log.exception("informer_handler_failed kind=%s handler=%s", self.kind,
                          getattr(fn, "__qualname__", type(fn).__qualname__))


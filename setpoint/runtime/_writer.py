"""Writes that consult the cache first: skipped when they would change nothing.

A :class:`Writer` is the manager's write path for reconcilers. Before each write it compares
what is wanted with what the cache holds and sends nothing when they agree; after each
write it records the server's answer in the informer's store, so the next read, by any
reconcile, sees it without waiting for the watch event. This is what keeps an operator at
one request per real change.

A write made for a reconcile (``origin``, or the one :meth:`Writer.reconciling` declares
for the calling task) is recorded with what it sent, as an
:class:`~setpoint.runtime._ownwrites.OwnWrite`: when the answer is exactly that write, that
reconcile is not queued again for it; when it also holds someone else's change (a merge
patch or an apply has no resourceVersion precondition), it is an ordinary change.

Each write is announced to the informer of its kind before it is sent
(:meth:`Writer.writing`): its watch event may arrive before its answer, and is then held
until the answer says whether it is the echo.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, NamedTuple, TypeVar

import orjson

from setpoint.client import Client, NotFoundError, PatchType, PropagationPolicy
from setpoint.client.answers import answer_like
from setpoint.client.typed import is_typed_class
from setpoint.machinery.objects import Obj
from setpoint.runtime._cache import Cache
from setpoint.runtime._diff import apply_merge_patch, contains, merge_patch
from setpoint.runtime._informer import Informer
from setpoint.runtime._objects import (
    KindKey,
    as_dict,
    as_ref,
    clone,
    decode,
    identity,
    is_plain_class,
    kind_key,
    meta,
    object_key,
    owned_dict,
    with_status_only,
)
from setpoint.runtime._ownwrites import EVERYTHING, Origin, OwnWrite

T = TypeVar("T")


class OperationResult(enum.StrEnum):
    """What :meth:`Writer.create_or_update` or :meth:`Writer.create_or_patch` did, with
    controller-runtime's ``controllerutil.OperationResult`` values."""

    CREATED = "created"
    UPDATED = "updated"
    UPDATED_STATUS = "updatedStatus"
    """create_or_patch patched the object and its status."""
    UPDATED_STATUS_ONLY = "updatedStatusOnly"
    """create_or_patch patched only the status."""
    UNCHANGED = "unchanged"


class _Found(NamedTuple):
    """An object that exists, as create-or-update/patch found it and ``mutate`` left it."""

    key: KindKey
    namespace: str | None
    name: str
    existing: Obj
    current: Any
    desired: Obj


class Writer:
    """The client, the cache and the informers, for cache-aware writes."""

    def __init__(self, client: Client, cache: Cache, informers: Mapping[KindKey, Informer],
                 field_manager: str) -> None:
        self.client = client
        self.cache = cache
        self.informers = informers
        self.field_manager = field_manager
        self._applied: dict[tuple[KindKey, str], int] = {}
        self.leading: Callable[[], Awaitable[None]] | None = None
        """Called before each write; raises when this process may not write (a leader
        elector's ``check_leading``)."""
        self._reconciling: dict[asyncio.Task[Any], Origin] = {}
        self.skipped = 0
        """Writes not sent because the cache showed nothing would change."""

    def __repr__(self) -> str:
        return f"Writer(field_manager={self.field_manager!r}, skipped={self.skipped})"

    # -- cache access ----------------------------------------------------------------------

    def cached(self, kind: object, namespace: str | None, name: str) -> Obj | None:
        """The stored dict of an object of a watched kind (None: absent or not watched)."""
        store = self.cache.store_if_watched(kind)
        if store is None:
            return None
        return store.get(f"{namespace}/{name}" if namespace else name)  # object_key

    def is_cached_kind(self, kind: object) -> bool:
        return self.cache.watches(kind_key(kind))

    def reconciling(self, origin: Origin) -> contextlib.AbstractContextManager[None]:
        """Declare that the calling task runs the reconcile ``origin`` until the block ends:
        the writes it makes without naming an origin are that reconcile's."""
        task = asyncio.current_task()
        if task is None:
            return _NOTHING_HELD
        return _Reconciling(self._reconciling, task, origin)

    def writing(self, kind: object, namespace: str | None, name: str | None,
                ) -> contextlib.AbstractContextManager[None]:
        """Send a write to one object, and :meth:`record` its answer, inside this block:
        until it ends, the informer holds the dispatch of that object's watch events, so
        the echo that comes before the answer is still known as the echo. Leaving the
        block (the answer recorded, a failure, a cancellation) releases them."""
        informer = self.informers.get(
            kind if type(kind) is KindKey else kind_key(kind)) if name else None
        if informer is None or name is None:
            return _NOTHING_HELD
        return _HeldWhileWriting(informer, f"{namespace}/{name}" if namespace else name,
                                 self.client.transport.timeout)  # object_key, inline

    def record(self, obj: Any, write: OwnWrite | None = None) -> None:
        """Put a write's answer into the store of its kind (when watched); ``write`` says
        what the write sent, for whom. Without it, a write of a declared reconcile
        (:meth:`reconciling`) is taken as wholly its own, except when it shows the
        reconciled object at a newer generation than the reconcile saw; any other write
        is heard of as any change."""
        if not isinstance(obj, dict):
            return
        informer = self.informers.get(kind_key(obj))
        if informer is None:
            return
        if write is None:
            origin = self._origin(None)
            if origin is not None:
                write = OwnWrite.of(origin, obj, EVERYTHING)
        informer.record_write(obj, write)

    def _origin(self, origin: Origin | None) -> Origin | None:
        if origin is not None:
            return origin
        task = asyncio.current_task()
        return self._reconciling.get(task) if task is not None else None

    def _record(self, answer: Any, origin: Origin | None, sent: Any, *,
                status: bool = False) -> None:
        origin = self._origin(origin)
        if origin is None or not isinstance(answer, dict):
            self.record(answer)
        else:
            self.record(answer, OwnWrite.of(origin, answer, sent, status=status))

    async def namespaced(self, kind: object) -> bool:
        key = kind_key(kind)
        known = self._known_scope(key)
        if known is not None:
            return known
        info = await self.client.resolve(as_ref(key))
        return info.namespaced

    def _known_scope(self, key: KindKey) -> bool | None:
        """Whether a watched kind is namespaced, as its informer resolved it (a typed class
        knows its scope without discovery: the first writes need not wait for a discovery
        request); None when unknown. Asked inline by every write: a coroutine each cost
        more than the question."""
        informer = self.informers.get(key)
        return informer.info.namespaced if informer is not None \
            and informer.info is not None else None

    # -- writes ----------------------------------------------------------------------------

    async def apply(self, obj: T, *, force: bool = True, status: bool = False,
                    field_manager: str | None = None, origin: Origin | None = None) -> T:
        """Server-side apply ``obj``, unless the cache shows every field already as wanted
        (and this process last applied exactly this). Returns the object, typed like
        ``obj``. ``origin``: the reconcile this write is for."""
        body = as_dict(obj)
        key = kind_key(body)
        m = meta(body)
        name = m.get("name")
        if not name:
            raise ValueError("apply needs metadata.name")
        namespace = m.get("namespace") if await self.namespaced(key) else None
        manager = field_manager or self.field_manager
        fingerprint = hash(orjson.dumps(body, option=orjson.OPT_SORT_KEYS)) ^ hash(
            (manager, status))
        memo = (key, f"{object_key(namespace, name)}|{manager}|{status}")
        live = self.cached(key, namespace, name)
        if live is not None and self._applied.get(memo, fingerprint) == fingerprint:
            wanted = {"status": body.get("status")} if status else \
                {k: v for k, v in body.items() if k != "status"}
            if contains(live, wanted):
                self.skipped += 1
                return self._like(obj, live)
        if self.leading is not None:  # asked inline: no coroutine per write
            await self.leading()
        with self.writing(key, namespace, name):
            result = await self.client.apply(
                body, field_manager=manager, force=force, namespace=namespace,
                subresource="status" if status else None,
            )
            self._applied[memo] = fingerprint
            self._record(result, origin, {"status": body.get("status")} if status else body,
                         status=status)
        return self._like(obj, result)

    async def create_or_update(
        self, obj: T, mutate: Callable[[T], None] | None = None,
        prepare: Callable[[Obj], None] | None = None, *, origin: Origin | None = None,
        namespace: str | None = None,
    ) -> tuple[T, OperationResult]:
        """controller-runtime's ``CreateOrUpdate``: read the object (cache first), let
        ``mutate`` set what it wants, then create it, update it (optimistic concurrency:
        a conflict raises and the reconcile is retried) or do nothing when unchanged.
        ``prepare`` adjusts the wire dict before the write (owner references);
        ``namespace`` is the one to use when ``obj`` names none."""
        found = await self._read_or_create(obj, mutate, prepare, origin, namespace)
        if not isinstance(found, _Found):
            return found
        key, namespace, name, existing, current, desired = found
        if _without_status(desired) == _without_status(existing):
            self.skipped += 1
            unchanged = current if desired.get("status") == existing.get("status") \
                else self._like(obj, existing)
            return unchanged, OperationResult.UNCHANGED
        if self.leading is not None:
            await self.leading()
        # with the cached resourceVersion as precondition, nothing else can be in the answer
        precondition = meta(desired).get("resourceVersion") == meta(existing).get(
            "resourceVersion")
        with self.writing(key, namespace, name):
            updated = await self.client.update(desired, namespace=namespace)
            self._record(updated, origin, EVERYTHING if precondition else desired)
        return self._like(obj, updated), OperationResult.UPDATED

    async def create_or_patch(
        self, obj: T, mutate: Callable[[T], None] | None = None,
        prepare: Callable[[Obj], None] | None = None, *, origin: Origin | None = None,
        namespace: str | None = None,
    ) -> tuple[T, OperationResult]:
        """controller-runtime's ``CreateOrPatch``: as :meth:`create_or_update`, but what
        ``mutate`` changed is sent as merge patches without a resourceVersion (no conflict
        with a concurrent change of other fields), the status too (its subresource):
        ``updated``, ``updatedStatus`` (both), ``updatedStatusOnly`` or ``unchanged``."""
        found = await self._read_or_create(obj, mutate, prepare, origin, namespace)
        if not isinstance(found, _Found):
            return found
        key, namespace, name, existing, current, desired = found
        patch = merge_patch(_without_status(existing), _without_status(desired))
        status_patch = merge_patch(existing.get("status") or {}, desired.get("status") or {})
        if not patch and not status_patch:
            self.skipped += 1
            return current, OperationResult.UNCHANGED
        if self.leading is not None:
            await self.leading()
        answer: Obj = existing
        with self.writing(key, namespace, name):
            if patch:
                answer = await self.client.patch(as_ref(key), name, patch,
                                                 patch_type=PatchType.MERGE,
                                                 namespace=namespace)
                self._record(answer, origin, patch)
            if status_patch:
                answer = await self.client.patch_status(
                    as_ref(key), name, {"status": status_patch}, patch_type=PatchType.MERGE,
                    namespace=namespace)
                self._record(answer, origin, {"status": status_patch}, status=True)
        done = (OperationResult.UPDATED if not status_patch
                else OperationResult.UPDATED_STATUS if patch
                else OperationResult.UPDATED_STATUS_ONLY)
        return self._like(obj, answer), done

    async def _read_or_create(
        self, obj: T, mutate: Callable[[T], None] | None,
        prepare: Callable[[Obj], None] | None, origin: Origin | None,
        namespace: str | None,
    ) -> tuple[T, OperationResult] | _Found:
        """The first half of create-or-update/patch: create the object when missing (the
        answer and ``created``), else the existing dict, ``mutate``'s private copy of it
        (typed like ``obj``) and that copy's wire dict, prepared."""
        key, own_namespace, name = identity(obj)
        scoped = self._known_scope(key)
        if scoped is None:
            scoped = await self.namespaced(key)
        namespace = (own_namespace or namespace) if scoped else None
        existing = self.cached(key, namespace, name)
        if existing is None and not self.is_cached_kind(key):
            try:
                existing = as_dict(await self.client.get(as_ref(key), name,
                                                         namespace=namespace))
            except NotFoundError:
                existing = None
        if existing is None:
            if mutate is not None:
                mutate(obj)
                _check_same_object(obj, own_namespace, name)
            desired = owned_dict(obj)
            if namespace and not meta(desired).get("namespace"):
                desired["metadata"] = {**meta(desired), "namespace": namespace}
            if prepare is not None:
                prepare(desired)
            if self.leading is not None:
                await self.leading()
            with self.writing(key, namespace, meta(desired).get("name")):
                created = await self.client.create(desired, namespace=namespace)
                self._record(created, origin, EVERYTHING)
            return self._like(obj, created), OperationResult.CREATED
        # a private copy for mutate, typed like obj; its dump (or itself) is what is sent
        typed = not isinstance(obj, dict)
        current: Any = decode(type(obj), clone(existing)) if typed else clone(existing)
        if mutate is not None:
            mutate(current)
            _check_same_object(current, meta(existing).get("namespace"), name)
        desired = as_dict(current) if typed else current
        if prepare is not None:
            prepare(desired)
        return _Found(key, namespace, name, existing, current, desired)

    async def update_status(self, obj: T, *, origin: Origin | None = None) -> T:
        """Make the server's status equal ``obj``'s status: a merge patch of the difference
        from the cached status, not sent when there is none (nor when ``obj`` carries no
        status at all, as a typed object whose status was never touched)."""
        key, own_namespace, name = identity(obj)
        scoped = self._known_scope(key)
        if scoped is None:
            scoped = await self.namespaced(key)
        namespace = own_namespace or None if scoped else None
        body = with_status_only(obj)
        if "status" not in body:
            return self._like(obj, self.cached(key, namespace, name) or as_dict(obj))
        live = self.cached(key, namespace, name)
        wanted = body.get("status") or {}
        if live is None:
            patch: Any = wanted
        else:
            patch = merge_patch(live.get("status") or {}, wanted)
            if patch == {}:
                self.skipped += 1
                return self._like(obj, live)
        return await self._patch_status(obj, key, namespace, name, {"status": patch}, origin)

    async def patch_status(self, obj: T, patch: Mapping[str, Any], *,
                           origin: Origin | None = None) -> T:
        """Merge-patch the status with ``patch`` (``{"ready": True}``), unless the cached
        status already reads that way."""
        key, own_namespace, name = identity(obj)
        namespace = own_namespace or None if await self.namespaced(key) else None
        live = self.cached(key, namespace, name)
        if live is not None:
            before = live.get("status") or {}
            if apply_merge_patch(before, patch) == before:
                self.skipped += 1
                return self._like(obj, live)
        return await self._patch_status(obj, key, namespace, name, {"status": dict(patch)},
                                        origin)

    async def _patch_status(self, obj: T, key: KindKey, namespace: str | None, name: str,
                            patch: Obj, origin: Origin | None) -> T:
        if self.leading is not None:
            await self.leading()
        with self.writing(key, namespace, name):
            result = await self.client.patch_status(
                as_ref(key), name, patch,
                patch_type=PatchType.MERGE, namespace=namespace,
            )
            self._record(result, origin, patch, status=True)
        return self._like(obj, result)

    async def patch_metadata(self, obj: T, metadata: Obj, *,
                             origin: Origin | None = None) -> T:
        """Merge-patch ``metadata`` with the object's resourceVersion as a precondition (a
        concurrent change fails with a conflict rather than being overwritten)."""
        body = as_dict(obj)
        key = kind_key(body)
        m = meta(body)
        namespace = m.get("namespace") if await self.namespaced(key) else None
        patch = {"metadata": {**metadata, "resourceVersion": m.get("resourceVersion")}}
        if self.leading is not None:
            await self.leading()
        with self.writing(key, namespace, str(m.get("name"))):
            result = await self.client.patch(as_ref(key), str(m.get("name")), patch,
                                             patch_type=PatchType.MERGE, namespace=namespace)
            self._record(result, origin, patch)
        return self._like(obj, result)

    async def delete(self, kind: object, name: str, namespace: str | None = None, *,
                     propagation_policy: PropagationPolicy | str | None = "Background",
                     ) -> bool:
        """Delete an object; False when it is already gone (per the cache for watched
        kinds, without a request)."""
        key = kind_key(kind)
        if not await self.namespaced(key):
            namespace = None
        if self.is_cached_kind(key):
            live = self.cached(key, namespace, name)
            if live is None or meta(live).get("deletionTimestamp"):
                self.skipped += 1
                return live is not None
        if self.leading is not None:
            await self.leading()
        try:
            await self.client.delete(as_ref(key), name, namespace=namespace,
                                     propagation_policy=propagation_policy)
        except NotFoundError:
            return False
        return True

    @staticmethod
    def _like(obj: T, data: Obj) -> T:
        """``data`` in the form of ``obj``: a private dict copy, or the typed class
        validated when first read (most reconciles drop a write's answer: see
        setpoint/client/answers.py). ``data`` is the cache's own dict, so the answer is
        held as its JSON, a copy nothing later can change."""
        if isinstance(obj, dict):
            # T is a dict type when obj is a dict; mypy cannot narrow a TypeVar by isinstance
            return clone(data)  # type: ignore[return-value]
        cls = type(obj)
        if not is_typed_class(cls):
            return decode(cls, clone(data))  # type: ignore[no-any-return]
        return answer_like(cls, orjson.dumps(data))


class _HeldWhileWriting:
    """:meth:`Writer.writing`'s block for a watched object (a class, not a generator: it
    is entered twice per reconcile of most operators)."""

    __slots__ = ("informer", "key", "limit")

    def __init__(self, informer: Informer, key: str, limit: float) -> None:
        self.informer, self.key, self.limit = informer, key, limit

    def __enter__(self) -> None:
        self.informer.begin_write(self.key, self.limit)

    def __exit__(self, *exc: object) -> None:
        self.informer.end_write(self.key)


_NOTHING_HELD = contextlib.nullcontext()


class _Reconciling:
    """:meth:`Writer.reconciling`'s block (a class, not a generator: one per reconcile)."""

    __slots__ = ("origin", "reconciling", "task")

    def __init__(self, reconciling: dict[asyncio.Task[Any], Origin], task: asyncio.Task[Any],
                 origin: Origin) -> None:
        self.reconciling, self.task, self.origin = reconciling, task, origin

    def __enter__(self) -> None:
        self.reconciling[self.task] = self.origin

    def __exit__(self, *exc: object) -> None:
        del self.reconciling[self.task]


def _without_status(obj: Mapping[str, Any]) -> Obj:
    out = {k: v for k, v in obj.items() if k != "status"}
    m = dict(out.get("metadata") or {})
    for volatile in ("managedFields", "resourceVersion", "generation", "creationTimestamp",
                     "uid"):
        m.pop(volatile, None)
    out["metadata"] = m
    return out


def _check_same_object(obj: object, namespace: str | None, name: str | None) -> None:
    """A mutate function must not rename what it mutates: the write would go to another
    object (controller-runtime's ``mutate``: "MutateFn cannot mutate object name and/or
    object namespace")."""
    generated = sys.modules.get("setpoint.resources.models.meta_v1")
    # a typed model is told by the class of its metadata, before an ABC instance check
    # (a Python-level call through pydantic's ABCMeta, once per create-or-update)
    metadata = None if generated is None or type(obj) is dict \
        else getattr(obj, "metadata", None)
    if metadata is not None and generated is not None \
            and type(metadata) is generated.ObjectMeta and is_plain_class(type(obj)):
        # the generated ObjectMeta's dump writes its name and namespace as they are: read
        # them without dumping the whole object (once per create-or-update)
        m: Mapping[str, Any] = {"name": metadata.name, "namespace": metadata.namespace}
    else:
        m = meta(as_dict(obj))
    if m.get("name") != name or (m.get("namespace") or None) != (namespace or None):
        raise ValueError("mutate cannot change the object's name or namespace")

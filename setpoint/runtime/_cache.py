"""The shared cache: one indexed store per watched kind, and the read API reconcilers use.

A :class:`Store` holds the objects of one kind as the dicts the server sent (after the
informer's transform), keyed ``namespace/name``, with indexes kept up to date on every
change: by namespace, by controller owner uid, and any custom index function. The
:class:`Cache` groups the stores of every watched kind and answers reads without a request:
``get`` and ``list`` by namespace, labels, fields or index, returning the caller's typed
class or deep-copied dicts (so a reconciler cannot corrupt what other readers see).

Everything here is plain synchronous code on the event loop's thread: no locks are needed
because nothing awaits while a store changes.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, TypeVar, overload

from setpoint.machinery import fields as field_selectors
from setpoint.machinery import labels as label_selectors
from setpoint.machinery.objects import Obj
from setpoint.runtime._objects import (
    KindKey,
    as_dict,
    clone,
    decode,
    field_value,
    key_of,
    kind_key,
    meta,
    object_key,
)

T = TypeVar("T")

IndexFunc = Callable[[Obj], Iterable[str]]
"""Maps an object to the index values it is found under."""

NAMESPACE_INDEX = "namespace"
OWNER_INDEX = "owner"


def index_by_namespace(obj: Obj) -> Iterable[str]:
    namespace = meta(obj).get("namespace")
    return (namespace,) if namespace else ()


def index_by_owner(obj: Obj) -> Iterable[str]:
    """The uids of the object's owners (every ownerReference, controller or not)."""
    return tuple(ref["uid"] for ref in meta(obj).get("ownerReferences") or () if ref.get("uid"))


_METADATA_INDEXERS: dict[IndexFunc, str] = {
    index_by_namespace: "namespace", index_by_owner: "ownerReferences"}
"""The built-in indexers, by the one metadata field each reads."""


class NotWatchedError(LookupError):
    """The cache was asked about a kind no informer watches."""


class Store:
    """The objects of one kind, by key and by index."""

    def __init__(self, indexers: Mapping[str, IndexFunc] | None = None) -> None:
        self._items: dict[str, Obj] = {}
        self._indexers: dict[str, IndexFunc] = {
            NAMESPACE_INDEX: index_by_namespace, OWNER_INDEX: index_by_owner,
        }
        self._indices: dict[str, dict[str, set[str]]] = {NAMESPACE_INDEX: {}, OWNER_INDEX: {}}
        for name, func in (indexers or {}).items():
            self.add_indexer(name, func)

    def __repr__(self) -> str:
        return f"Store({len(self._items)} objects, indexes={sorted(self._indexers)})"

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __iter__(self) -> Iterator[Obj]:
        return iter(list(self._items.values()))

    def keys(self) -> list[str]:
        return list(self._items)

    def add_indexer(self, name: str, func: IndexFunc) -> None:
        """Index the objects by ``func`` under ``name`` (existing objects included)."""
        if name in self._indexers and self._indexers[name] is not func:
            raise ValueError(f"index {name!r} is already defined")
        self._indexers[name] = func
        index: dict[str, set[str]] = {}
        self._indices[name] = index
        for key, obj in self._items.items():
            for value in func(obj):
                index.setdefault(value, set()).add(key)

    def get(self, key: str) -> Obj | None:
        """The stored dict (not a copy: callers must not change it)."""
        return self._items.get(key)

    def put(self, obj: Obj, key: str | None = None) -> Obj | None:
        """Add or replace ``obj``; returns the object it replaced. ``key``: its store key
        (``key_of(obj)``), when the caller has it already."""
        if key is None:
            key = key_of(obj)
        old = self._items.get(key)
        self._items[key] = obj
        self._reindex(key, old, obj)
        return old

    def delete(self, key: str) -> Obj | None:
        """Remove the object at ``key``; returns it."""
        old = self._items.pop(key, None)
        if old is not None:
            self._reindex(key, old, None)
        return old

    def replace(self, objs: Iterable[Obj]) -> dict[str, Obj]:
        """Make the store hold exactly ``objs``; returns the objects it held before."""
        before = self._items
        self._items = {key_of(obj): obj for obj in objs}
        for name in self._indices:
            self._indices[name] = {}
        for key, obj in self._items.items():
            self._reindex(key, None, obj)
        return before

    def by_index(self, name: str, value: str) -> list[Obj]:
        """The objects whose index ``name`` includes ``value``."""
        index = self._indices.get(name)
        if index is None:
            raise KeyError(f"no index named {name!r}")
        return [self._items[key] for key in index.get(value, ())]

    def _reindex(self, key: str, old: Obj | None, new: Obj | None) -> None:
        old_meta = new_meta = None
        if old is not None and new is not None:
            old_meta, new_meta = old.get("metadata"), new.get("metadata")
        for name, func in self._indexers.items():
            if old_meta is not None and new_meta is not None:
                # a built-in index reads one metadata field: when it is the same, so are
                # the index values, without asking the indexer twice (issue 12,
                # fourteenth pass; every store put has both indexes)
                source = _METADATA_INDEXERS.get(func)
                if source is not None and old_meta.get(source) == new_meta.get(source):
                    continue
            # an update mostly keeps every index value: compared as the indexer gave
            # them before any set is built (issue 12, eighth pass)
            old_given = tuple(func(old)) if old is not None else ()
            new_given = tuple(func(new)) if new is not None else ()
            if old_given == new_given:
                continue
            index = self._indices[name]
            old_values, new_values = set(old_given), set(new_given)
            if old_values == new_values:
                continue
            for value in old_values - new_values:
                keys = index.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[value]
            for value in new_values - old_values:
                index.setdefault(value, set()).add(key)


Selector = str | Mapping[str, str] | label_selectors.Selector | None


def _label_selector(selector: Selector) -> label_selectors.Selector | None:
    if selector is None:
        return None
    if isinstance(selector, label_selectors.Selector):
        return selector
    if isinstance(selector, str):
        return label_selectors.parse(selector)
    return label_selectors.selector_from_set(selector)


def _field_selector(selector: str | Mapping[str, str] | None) -> field_selectors.Selector | None:
    if selector is None:
        return None
    if isinstance(selector, str):
        return field_selectors.parse(selector)
    return field_selectors.selector_from_set(selector)


class Cache:
    """Read access to the stores of every watched kind.

    Reads never go to the API server. Asking about a kind nothing watches raises
    :class:`NotWatchedError` (declare it with ``Controller.reads(...)`` or ``owns``).
    """

    def __init__(self) -> None:
        self._stores: dict[KindKey, Store] = {}

    def __repr__(self) -> str:
        kinds = ", ".join(f"{k}={len(s)}" for k, s in self._stores.items())
        return f"Cache({kinds})"

    def store_for(self, kind: object, *, create: bool = False) -> Store:
        """The store of ``kind`` (created empty when ``create``)."""
        # a KindKey as it is: the runtime asks with one several times per event
        key = kind if type(kind) is KindKey else kind_key(kind)
        store = self._stores.get(key)
        if store is None:
            if not create:
                raise NotWatchedError(
                    f"the cache does not watch {key}; declare it on a controller "
                    "(.owns(), .watches() or .reads())"
                )
            store = self._stores[key] = Store()
        return store

    def watches(self, kind: object) -> bool:
        return (kind if type(kind) is KindKey else kind_key(kind)) in self._stores

    def store_if_watched(self, kind: object) -> Store | None:
        """The store of ``kind``, or None when nothing watches it (one question where a
        write's cache read asked :meth:`watches` and then :meth:`store_for`)."""
        return self._stores.get(kind if type(kind) is KindKey else kind_key(kind))

    @property
    def kinds(self) -> builtins.list[KindKey]:
        return list(self._stores)

    @overload
    def get(self, kind: type[T], name: str, namespace: str | None = None) -> T | None: ...
    @overload
    def get(self, kind: object, name: str, namespace: str | None = None) -> Any: ...
    def get(self, kind: object, name: str, namespace: str | None = None) -> Any:
        """The object ``name`` (in ``namespace`` for namespaced kinds), or None.

        Typed classes come back typed; other references as a copy of the dict.
        """
        obj = self.store_for(kind).get(object_key(namespace, name))
        return None if obj is None else self._out(kind, obj)

    @overload
    def list(
        self, kind: type[T], *, namespace: str | None = None, labels: Selector = None,
        fields: str | Mapping[str, str] | None = None, index: tuple[str, str] | None = None,
    ) -> builtins.list[T]: ...
    @overload
    def list(
        self, kind: object, *, namespace: str | None = None, labels: Selector = None,
        fields: str | Mapping[str, str] | None = None, index: tuple[str, str] | None = None,
    ) -> builtins.list[Any]: ...
    def list(
        self, kind: object, *, namespace: str | None = None, labels: Selector = None,
        fields: str | Mapping[str, str] | None = None, index: tuple[str, str] | None = None,
    ) -> builtins.list[Any]:
        """The objects of ``kind``, filtered, sorted by namespace and name.

        ``labels`` is a selector string (``app=web,tier!=db``), a dict of required labels
        or a parsed selector; ``fields`` a field selector over any dotted path
        (``status.phase=Running``); ``index`` a ``(name, value)`` lookup in an index
        (``("owner", uid)``, or a custom one).
        """
        return [self._out(kind, obj) for obj in self.list_raw(
            kind, namespace=namespace, labels=labels, fields=fields, index=index)]

    def list_raw(
        self, kind: object, *, namespace: str | None = None, labels: Selector = None,
        fields: str | Mapping[str, str] | None = None, index: tuple[str, str] | None = None,
    ) -> builtins.list[Obj]:
        """Like :meth:`list`, but the stored dicts themselves: read them, never change them."""
        store = self.store_for(kind)
        if index is not None:
            candidates = store.by_index(*index)
            if namespace:
                candidates = [o for o in candidates if meta(o).get("namespace") == namespace]
        elif namespace:
            candidates = store.by_index(NAMESPACE_INDEX, namespace)
        else:
            candidates = list(store)
        label_sel = _label_selector(labels)
        field_sel = _field_selector(fields)
        out = []
        for obj in candidates:
            if label_sel is not None and not label_sel.matches(meta(obj).get("labels") or {}):
                continue
            if field_sel is not None and not field_sel.matches(
                    {f: field_value(obj, f) or "" for f in field_sel.fields}):
                continue
            out.append(obj)
        out.sort(key=lambda o: (meta(o).get("namespace") or "", meta(o).get("name") or ""))
        return out

    def owned_by(self, kind: object, owner: object) -> builtins.list[Any]:
        """The objects of ``kind`` that have ``owner`` (an object or a uid) among their
        ownerReferences."""
        uid = owner if isinstance(owner, str) else _uid_of(owner)
        return self.list(kind, index=(OWNER_INDEX, uid))

    @staticmethod
    def _out(kind: object, obj: Obj) -> Any:
        # typed models may keep references to nested dicts they were built from: copy first
        return decode(kind, clone(obj)) if isinstance(kind, type) else clone(obj)


def _uid_of(obj: object) -> str:
    uid = meta(as_dict(obj)).get("uid")
    if not uid:
        raise ValueError("the owner has no metadata.uid (read it from the server first)")
    return str(uid)

"""Event handlers: which reconcile requests a change of a watched object leads to.

A handler only maps an object to requests; it never reconciles. The three kinds of
controller-runtime's ``handler`` package are here:

- :class:`EnqueueForObject`: the object itself (the kind a controller is *for*);
- :class:`EnqueueForOwner`: the object's owner of a given kind, found through
  ``ownerReferences`` (by default only the one with ``controller: true``), for the kinds a
  controller *owns*;
- :class:`EnqueueMapped`: whatever a function returns, e.g.
  :func:`map_to_owner_by_label` for Pods that name their instance in a label.

:class:`~setpoint.runtime._source.EventSource` connects a handler and its predicates to an
informer and a queue.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any

from setpoint.machinery.objects import Obj
from setpoint.runtime._objects import KindKey, kind_key, meta, namespace_of
from setpoint.runtime._reconcile import Request

MapFunc = Callable[[Obj], Iterable[Request]]

_NO_METADATA: Mapping[str, Any] = MappingProxyType({})


class Handler:
    """Maps a changed object to the requests it should cause."""

    def requests(self, obj: Obj) -> Iterable[Request]:
        raise NotImplementedError

    def update_requests(self, old: Obj, new: Obj) -> Iterable[Request]:
        """Requests for an update: by default those of both versions (an owner or a label
        may have changed, and the previous target must hear about it too)."""
        seen = set(self.requests(new))
        seen.update(self.requests(old))
        return seen


class EnqueueForObject(Handler):
    """The changed object itself."""

    def requests(self, obj: Obj) -> Iterable[Request]:
        # namespace_of and name_of, read in one step (every event of a reconciled kind)
        m = obj.get("metadata") or _NO_METADATA
        return (Request(str(m.get("namespace") or ""), str(m.get("name") or "")),)

    def update_requests(self, old: Obj, new: Obj) -> Iterable[Request]:
        return self.requests(new)

    def __repr__(self) -> str:
        return "EnqueueForObject()"


class EnqueueForOwner(Handler):
    """The owner of kind ``owner`` named in the object's ``ownerReferences``.

    Group and kind must match (the version may differ: owner references survive version
    changes). With ``only_controller`` (the default) only the managing controller
    reference counts. Owners are assumed to live in the object's namespace, or be
    cluster-scoped when the object is.
    """

    def __init__(self, owner: object, *, only_controller: bool = True,
                 owner_namespaced: bool = True) -> None:
        self.owner: KindKey = kind_key(owner)
        self._owner_group = self.owner.group  # a property that splits on each read
        self.only_controller = only_controller
        self.owner_namespaced = owner_namespaced

    def __repr__(self) -> str:
        return f"EnqueueForOwner({self.owner}, only_controller={self.only_controller})"

    def update_requests(self, old: Obj, new: Obj) -> Iterable[Request]:
        """Those of both versions; one version's when the owner references and the
        namespace the requests are made of did not change (a status or data change: most
        updates, an owned object's every write echo), the same set for half the work."""
        old_meta = old.get("metadata") or _NO_METADATA
        new_meta = new.get("metadata") or _NO_METADATA
        if old_meta.get("ownerReferences") == new_meta.get("ownerReferences") and (
                not self.owner_namespaced
                or old_meta.get("namespace") == new_meta.get("namespace")):
            return set(self.requests(new))
        return super().update_requests(old, new)

    def requests(self, obj: Obj) -> Iterable[Request]:
        out = []
        m = obj.get("metadata") or _NO_METADATA
        for ref in m.get("ownerReferences") or ():
            if self.only_controller and not ref.get("controller"):
                continue
            if ref.get("kind") != self.owner.kind:
                continue
            group = str(ref.get("apiVersion", "")).rpartition("/")[0]
            if group != self._owner_group:
                continue
            # namespace_of(obj), read from the metadata at hand
            namespace = str(m.get("namespace") or "") if self.owner_namespaced else ""
            out.append(Request(namespace, str(ref.get("name", ""))))
        return out


class EnqueueMapped(Handler):
    """Whatever ``map_func`` returns for the object (empty: nothing to do)."""

    def __init__(self, map_func: MapFunc) -> None:
        self.map_func = map_func

    def __repr__(self) -> str:
        return f"EnqueueMapped({self.map_func!r})"

    def requests(self, obj: Obj) -> Iterable[Request]:
        return self.map_func(obj)


def map_to_owner_by_label(label: str) -> MapFunc:
    """A map function: the object named by ``label``'s value, in the object's namespace
    (``app.kubernetes.io/instance`` is the usual label)."""

    def map_func(obj: Obj) -> Iterable[Request]:
        value = (meta(obj).get("labels") or {}).get(label)
        return (Request(namespace_of(obj), value),) if value else ()

    map_func.__qualname__ = f"map_to_owner_by_label({label!r})"
    return map_func

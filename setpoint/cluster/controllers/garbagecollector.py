"""The garbage collector: dependents go when their owners go.

As kube-controller-manager's ``garbage-collector-controller`` (``garbagecollector.go``),
over the :class:`OwnerGraph` built from store events:

- a dependent none of whose owners exists any more (absent, or present with another uid) is
  deleted, with the propagation its own finalizers ask for (Background by default); owners
  that are gone are removed from a dependent that still has a live owner;
- an owner deleted with the ``orphan`` finalizer has its reference removed from every
  dependent, then the finalizer removed (which completes its deletion);
- an owner deleted with the ``foregroundDeletion`` finalizer has its dependents deleted,
  and loses the finalizer once no dependent with ``blockOwnerDeletion`` remains.

Owner references are resolved through the served kinds; a reference to a kind that is not
served is retried when the set of served kinds changes (a CRD becoming established). A
cluster-scoped object cannot have a namespaced owner: such an object is left alone.

A reference whose uid is that of an object in another namespace (owners are looked up in the
dependent's namespace) is warned about with an ``OwnerRefInvalidNamespace`` Event when it is
added (graph_builder.go ``addDependentToOwners``), which takes an index of the namespaced
objects' uids, as the real graph has a node for every object.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

from setpoint.cluster.controllers.gcevents import EventNames, invalid_namespace_event
from setpoint.cluster.controllers.ownergraph import (
    FINALIZER_FOREGROUND,
    FINALIZER_ORPHAN,
    LinkChanges,
    Location,
    OwnerGraph,
    deletion_starts_with,
)
from setpoint.cluster.controllers.queue import WorkQueue
from setpoint.cluster.controllers.resources import ServedTypes, controller_write, split_api_version
from setpoint.cluster.registry.options import DeleteOptions
from setpoint.cluster.registry.types import ResourceType
from setpoint.cluster.serializer.decode import Decoded
from setpoint.cluster.storage import Event
from setpoint.machinery.errors import StatusError
from setpoint.machinery.objects import Obj

log = logging.getLogger("setpoint.cluster.controllers")

if TYPE_CHECKING:
    from setpoint.cluster.registry import Registry
    from setpoint.cluster.registry.rest import REST
    from setpoint.cluster.storage import Store

Action = Literal["delete", "orphan", "report"]
Verdict = Literal["solid", "dangling", "waiting"]

# The collector does not watch these (its ignoredResources): they are never collected.
IGNORED_RESOURCES = frozenset({"/events", "events.k8s.io/events"})


class _Unresolvable(Exception):
    """An owner reference names a kind the server does not serve (yet)."""


class _NamespacedOwnerOfClusterScopedObject(Exception):
    """A cluster-scoped object refers to a namespaced owner: never valid, never retried."""


class GarbageCollector:
    """Deletes and orphans dependents as their owners are deleted."""

    def __init__(self, store: Store, rest: REST, registry: Registry) -> None:
        self._store = store
        self._rest = rest
        self._registry = registry
        self._types = ServedTypes(registry)
        self.graph = OwnerGraph()
        self._unresolved: set[str] = set()
        # the namespace of every namespaced object, by uid (the graph's observed nodes)
        self._namespace_of: dict[str, str] = {}
        self._reports: dict[str, Obj] = {}
        self._event_names = EventNames()
        self.queue: WorkQueue[tuple[Action, str]] = WorkQueue("garbagecollector", self._sync)
        store.add_listener(self._on_event)
        registry.on_change(self._on_registry_change)

    def start(self) -> None:
        """Build the graph from what is stored (the informers' initial list)."""
        store = self._store
        keys = [key for key in store.resources() if key not in IGNORED_RESOURCES]
        # every object's namespace first, so that a dependent listed before its owner is
        # checked as one listed after it (the real graph checks both orders)
        for key in keys:
            for obj in store.list(key):
                self._index(obj)
        for key in keys:
            for obj in store.list(key):
                self._observed(key, _nothing_before, obj)

    # -- graph maintenance (GraphBuilder) ------------------------------------------------
    def _on_event(self, event: Event) -> None:
        if event.resource in IGNORED_RESOURCES:
            return
        if event.type == "DELETED":
            self._deleted(event.obj)
        else:
            if event.type == "ADDED":
                self._index(event.obj)
            self._observed(event.resource, lambda: event.prev, event.obj)

    def _index(self, obj: Obj) -> None:
        meta = obj["metadata"]
        if meta.get("namespace"):
            self._namespace_of[str(meta.get("uid", ""))] = meta["namespace"]

    def _observed(self, key: str, before: Callable[[], Obj | None], obj: Obj) -> None:
        """``before()`` gives the object as it was: decoded from its stored JSON only when
        a deletion may have just started, not for every write of an owned object."""
        meta = obj["metadata"]
        uid = str(meta.get("uid", ""))
        if not meta.get("ownerReferences") and not meta.get("deletionTimestamp") \
                and not self.graph.knows(uid):
            # no owners, not being deleted, nothing recorded: the graph stays as it is and
            # no work follows (most writes; this runs inside every one)
            return
        location = Location(key, meta.get("namespace", ""), meta["name"])
        changes = self.graph.observe(location, obj)
        if changes.added:
            # verify the new owners exist (the real graph adds "virtual" owner nodes)
            self.queue.add(("delete", uid))
            self._check_owner_namespaces(key, obj, changes)
        self._unblocked_owners(changes)
        if not meta.get("deletionTimestamp"):
            return  # (neither deletion below can have started)
        old = before()
        if deletion_starts_with(old, obj, FINALIZER_ORPHAN):
            self.queue.add(("orphan", uid))
        elif deletion_starts_with(old, obj, FINALIZER_FOREGROUND):
            for dependent in self.graph.dependents(uid):
                self.queue.add(("delete", dependent))
            self.queue.add(("delete", uid))

    def _check_owner_namespaces(self, key: str, obj: Obj, changes: LinkChanges) -> None:
        """addDependentToOwners: the first added reference to an object observed in another
        namespace (a namespaced owner) is reported; owners not seen yet are not."""
        meta = obj["metadata"]
        namespace = meta.get("namespace") or ""
        added = {link.uid for link in changes.added}
        for ref in meta.get("ownerReferences") or []:
            if not isinstance(ref, dict) or ref.get("uid") not in added:
                continue
            owner_namespace = self._namespace_of.get(str(ref.get("uid")))
            if owner_namespace is not None and owner_namespace != namespace:
                rt = self._types.for_object(key, obj)
                if rt is None:
                    return
                report = invalid_namespace_event(
                    obj, rt.api_version, rt.kind, ref, self._rest.clock(),
                    self._event_names(meta["name"]))
                self._reports[report["metadata"]["name"]] = report
                self.queue.add(("report", report["metadata"]["name"]))
                return

    def _unblocked_owners(self, changes: LinkChanges) -> None:
        """Owners waiting for their dependents may be done when a blocking reference goes."""
        for link in (*(r for r in changes.removed if r.block), *changes.unblocked):
            if self.graph.deleting_dependents(link.uid):
                self.queue.add(("delete", link.uid))

    def _deleted(self, obj: Obj) -> None:
        uid = str(obj["metadata"].get("uid", ""))
        self._unresolved.discard(uid)
        self._namespace_of.pop(uid, None)
        links = self.graph.forget(uid)
        for dependent in self.graph.dependents(uid):
            self.queue.add(("delete", dependent))
        for link in links:
            if self.graph.deleting_dependents(link.uid):
                self.queue.add(("delete", link.uid))

    def _on_registry_change(self) -> None:
        for uid in sorted(self._unresolved):
            self.queue.add(("delete", uid))
        self._unresolved.clear()

    # -- work ----------------------------------------------------------------------------
    def _sync(self, item: tuple[Action, str]) -> None:
        action, uid = item
        if action == "orphan":
            self._orphan_dependents(uid)
        elif action == "report":
            self._record(uid)
        else:
            self._attempt_to_delete(uid)

    def _live(self, uid: str) -> tuple[Location, Obj, ResourceType] | None:
        location = self.graph.location(uid)
        if location is None:
            return None
        obj = self._store.get(location.storage_key, location.namespace, location.name)
        if obj is None or obj["metadata"].get("uid") != uid:
            return None
        rt = self._types.for_object(location.storage_key, obj)
        if rt is None:
            return None
        return location, obj, rt

    def _attempt_to_delete(self, uid: str) -> None:
        """attemptToDeleteItem: decide the fate of one object from its owners' state."""
        found = self._live(uid)
        if found is None:
            return
        location, obj, rt = found
        meta = obj["metadata"]
        finalizers = meta.get("finalizers") or []
        deleting_dependents = bool(meta.get("deletionTimestamp")) and (
            FINALIZER_FOREGROUND in finalizers)
        if meta.get("deletionTimestamp") and not deleting_dependents:
            return  # on its way out: its dependents are handled when it is gone
        if deleting_dependents:
            self._process_deleting_dependents(uid, location, rt)
            return
        refs = [r for r in meta.get("ownerReferences") or [] if isinstance(r, dict)]
        if not refs:
            return
        verdicts: dict[Verdict, list[Obj]] = {"solid": [], "dangling": [], "waiting": []}
        try:
            for ref in refs:
                verdicts[self._classify(ref, location.namespace)].append(ref)
        except _Unresolvable:
            self._unresolved.add(uid)
            return
        except _NamespacedOwnerOfClusterScopedObject:
            return
        solid, dangling, waiting = verdicts["solid"], verdicts["dangling"], verdicts["waiting"]
        if solid:
            gone = {str(r.get("uid")) for r in (*dangling, *waiting)}
            if gone:
                self._remove_owner_references(location, uid, gone)
            return
        if waiting and self.graph.dependents(uid):
            if any(self.graph.deleting_dependents(d) for d in self.graph.dependents(uid)):
                # break a possible cycle: do not block owners that wait for us
                self._unblock_owner_references(location, uid)
            self._delete(rt, location, uid, "Foreground")
            return
        if FINALIZER_ORPHAN in finalizers:
            policy = "Orphan"
        elif FINALIZER_FOREGROUND in finalizers:
            policy = "Foreground"
        else:
            policy = "Background"
        self._delete(rt, location, uid, policy)

    def _classify(self, ref: Obj, namespace: str) -> Verdict:
        """Whether the owner a reference names exists (solid), exists but waits for its
        dependents (waiting), or is gone (dangling), as the API would tell."""
        group, version = split_api_version(str(ref.get("apiVersion", "")))
        owner_rt = self._registry.by_kind(group, version, str(ref.get("kind", "")))
        if owner_rt is None or not owner_rt.served:
            raise _Unresolvable(ref)
        if owner_rt.namespaced and not namespace:
            raise _NamespacedOwnerOfClusterScopedObject(ref)
        owner = self._store.get(owner_rt.storage_key,
                                    namespace if owner_rt.namespaced else "",
                                    str(ref.get("name", "")))
        if owner is None or owner["metadata"].get("uid") != ref.get("uid"):
            return "dangling"
        meta = owner["metadata"]
        if meta.get("deletionTimestamp") and FINALIZER_FOREGROUND in (meta.get("finalizers")
                                                                      or []):
            return "waiting"
        return "solid"

    def _process_deleting_dependents(self, uid: str, location: Location,
                                     rt: ResourceType) -> None:
        blocking = self.graph.blocking_dependents(uid)
        if not blocking:
            self._remove_finalizer(location, uid, FINALIZER_FOREGROUND)
            return
        for dependent in blocking:
            if not self.graph.deleting_dependents(dependent):
                self.queue.add(("delete", dependent))

    def _orphan_dependents(self, uid: str) -> None:
        """attemptToOrphan: drop the owner from its dependents, then the orphan finalizer."""
        found = self._live(uid)
        if found is None:
            return
        location = found[0]
        for dependent in self.graph.dependents(uid):
            dep_location = self.graph.location(dependent)
            if dep_location is not None:
                self._remove_owner_references(dep_location, dependent, {uid})
        self._remove_finalizer(location, uid, FINALIZER_ORPHAN)

    # -- writes (as kube-controller-manager) -----------------------------------------------
    def _record(self, name: str) -> None:
        """Write a queued Event; one the server refuses is dropped (the recorder logs it)."""
        event = self._reports.pop(name, None)
        if event is None:
            return
        events = self._registry.require("", "v1", "events")
        try:
            self._rest.create(events, event["metadata"]["namespace"], Decoded(event),
                              controller_write())
        except StatusError as err:
            log.info("event_dropped reason=%s name=%s error=%s", event["reason"], name, err)

    def _delete(self, rt: ResourceType, location: Location, uid: str, policy: str) -> None:
        options = DeleteOptions(propagation_policy=policy, precondition_uid=uid)
        try:
            self._rest.delete(rt, location.namespace or None, location.name, options)
        except StatusError as err:
            if err.code not in (404, 409):
                raise

    def _update(self, location: Location, uid: str, change: Callable[[Obj], bool]) -> None:
        """Apply ``change(metadata) -> bool`` to the live object and write it if it did
        anything (the collector's merge patches carry the read resourceVersion)."""
        store = self._store
        live = store.get(location.storage_key, location.namespace, location.name)
        if live is None or live["metadata"].get("uid") != uid:
            return
        rt = self._types.for_object(location.storage_key, live)
        if rt is None:
            return
        meta = dict(live["metadata"])
        if not change(meta):
            return
        new = {**live, "apiVersion": rt.api_version, "metadata": meta}
        try:
            self._rest.update(rt, location.namespace or None, location.name, Decoded(new),
                                  controller_write())
        except StatusError as err:
            if err.code != 404:
                raise

    def _remove_owner_references(self, location: Location, uid: str, owners: set[str]) -> None:
        def change(meta: Obj) -> bool:
            refs = meta.get("ownerReferences") or []
            kept = [r for r in refs if r.get("uid") not in owners]
            if len(kept) == len(refs):
                return False
            if kept:
                meta["ownerReferences"] = kept
            else:
                meta.pop("ownerReferences", None)
            return True

        self._update(location, uid, change)

    def _unblock_owner_references(self, location: Location, uid: str) -> None:
        def change(meta: Obj) -> bool:
            refs = meta.get("ownerReferences") or []
            if not any(r.get("blockOwnerDeletion") is True for r in refs):
                return False
            meta["ownerReferences"] = [
                {**r, "blockOwnerDeletion": False} if r.get("blockOwnerDeletion") is True else r
                for r in refs]
            return True

        self._update(location, uid, change)

    def _remove_finalizer(self, location: Location, uid: str, finalizer: str) -> None:
        def change(meta: Obj) -> bool:
            finalizers = meta.get("finalizers") or []
            if finalizer not in finalizers:
                return False
            kept = [f for f in finalizers if f != finalizer]
            if kept:
                meta["finalizers"] = kept
            else:
                meta.pop("finalizers", None)
            return True

        self._update(location, uid, change)


def _nothing_before() -> Obj | None:
    """What an object was before the graph's initial list: nothing seen."""
    return None

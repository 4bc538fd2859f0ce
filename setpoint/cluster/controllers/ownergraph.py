"""The garbage collector's dependency graph: who depends on whom, by uid.

Built incrementally from store events (the GraphBuilder of kube-controller-manager's garbage
collector): for every object with ``metadata.ownerReferences`` it records where the object
lives and its references, and for every owner uid the set of its dependents' uids, so that
what follows an owner's deletion costs O(its dependents). Owners themselves are not indexed
(the collector checks them in the store by kind, name and uid, as the real one asks the API)
except while they are being deleted in the foreground or orphaning, when the collector
needs to find them again by uid.
"""

from __future__ import annotations

from dataclasses import dataclass

from setpoint.machinery.objects import Obj

FINALIZER_ORPHAN = "orphan"
FINALIZER_FOREGROUND = "foregroundDeletion"


@dataclass(frozen=True, slots=True)
class Location:
    """Where an object is stored."""

    storage_key: str
    namespace: str
    name: str


@dataclass(frozen=True, slots=True)
class OwnerLink:
    """One ``ownerReferences`` entry, as the graph needs it."""

    uid: str
    block: bool

    @classmethod
    def of(cls, ref: Obj) -> OwnerLink:
        return cls(str(ref.get("uid", "")), ref.get("blockOwnerDeletion") is True)


@dataclass(frozen=True, slots=True)
class LinkChanges:
    """How an object's owner references changed."""

    added: tuple[OwnerLink, ...] = ()
    removed: tuple[OwnerLink, ...] = ()
    unblocked: tuple[OwnerLink, ...] = ()  # blockOwnerDeletion went from true to false


def owner_links(obj: Obj) -> tuple[OwnerLink, ...]:
    refs = obj["metadata"].get("ownerReferences") or []
    return tuple(OwnerLink.of(r) for r in refs if isinstance(r, dict))


def being_deleted_with(obj: Obj | None, finalizer: str) -> bool:
    if obj is None:
        return False
    meta = obj["metadata"]
    return bool(meta.get("deletionTimestamp")) and finalizer in (meta.get("finalizers") or [])


def deletion_starts_with(old: Obj | None, new: Obj, finalizer: str) -> bool:
    """The object has just entered deletion with ``finalizer`` (or was first seen so)."""
    return being_deleted_with(new, finalizer) and not being_deleted_with(old, finalizer)


class OwnerGraph:
    """Dependents by owner uid, kept current by ``observe`` and ``forget``."""

    def __init__(self) -> None:
        self._links: dict[str, tuple[OwnerLink, ...]] = {}
        self._where: dict[str, Location] = {}
        self._dependents: dict[str, set[str]] = {}
        self._foreground: set[str] = set()

    def __len__(self) -> int:
        return len(self._where)

    def knows(self, uid: str) -> bool:
        """Whether anything of object ``uid`` is recorded (references, location, deletion)."""
        return uid in self._links or uid in self._where or uid in self._foreground

    def observe(self, location: Location, obj: Obj) -> LinkChanges:
        """Record the current state of an object; return how its owner references changed."""
        uid = str(obj["metadata"].get("uid", ""))
        new = owner_links(obj)
        old = self._links.get(uid, ())
        if being_deleted_with(obj, FINALIZER_FOREGROUND):
            self._foreground.add(uid)
        else:
            self._foreground.discard(uid)
        tracked = bool(new) or uid in self._foreground or being_deleted_with(
            obj, FINALIZER_ORPHAN)
        if tracked:
            self._where[uid] = location
        else:
            self._where.pop(uid, None)
        if new == old:
            return LinkChanges()
        if new:
            self._links[uid] = new
        else:
            self._links.pop(uid, None)
        old_by_uid = {link.uid: link for link in old}
        new_by_uid = {link.uid: link for link in new}
        added = tuple(link for u, link in new_by_uid.items() if u not in old_by_uid)
        removed = tuple(link for u, link in old_by_uid.items() if u not in new_by_uid)
        unblocked = tuple(link for u, link in new_by_uid.items()
                          if u in old_by_uid and old_by_uid[u].block and not link.block)
        for link in added:
            self._dependents.setdefault(link.uid, set()).add(uid)
        for link in removed:
            self._unlink(link.uid, uid)
        return LinkChanges(added, removed, unblocked)

    def forget(self, uid: str) -> tuple[OwnerLink, ...]:
        """The object is gone: drop it; return the owner references it had."""
        links = self._links.pop(uid, ())
        self._where.pop(uid, None)
        self._foreground.discard(uid)
        for link in links:
            self._unlink(link.uid, uid)
        return links

    def _unlink(self, owner: str, dependent: str) -> None:
        deps = self._dependents.get(owner)
        if deps is not None:
            deps.discard(dependent)
            if not deps:
                del self._dependents[owner]

    # -- queries -----------------------------------------------------------------------
    def location(self, uid: str) -> Location | None:
        return self._where.get(uid)

    def dependents(self, owner: str) -> list[str]:
        return sorted(self._dependents.get(owner, ()))

    def blocking_dependents(self, owner: str) -> list[str]:
        """Dependents whose reference to ``owner`` has blockOwnerDeletion."""
        return [d for d in self.dependents(owner)
                if any(link.uid == owner and link.block for link in self._links.get(d, ()))]

    def deleting_dependents(self, uid: str) -> bool:
        """Whether the object is being deleted in the foreground (waits for dependents)."""
        return uid in self._foreground

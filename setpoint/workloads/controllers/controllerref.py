"""Controller references: which objects an owner controls, adopting matching orphans and
releasing owned objects that stopped matching, and which owners hear of an object's change.

Ports of ``pkg/controller/controller_ref_manager.go`` (``ClaimObject``,
``RecheckDeletionTimestamp``) and of the owner lookups of the ReplicaSet and Deployment
controllers' event handlers (``resolveControllerRef``, ``getPodReplicaSets``). Everything
works on the plain dicts the cache holds.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from setpoint.client import Client, Kind, NotFoundError, PatchType, ResourceRef
from setpoint.machinery import labels as label_selectors
from setpoint.machinery.labels import SelectorError
from setpoint.machinery.objects import Obj
from setpoint.runtime import Manager, Request
from setpoint.runtime._cache import Store
from setpoint.runtime._handlers import Handler
from setpoint.runtime._objects import meta, name_of, namespace_of
from setpoint.runtime._ownership import controller_of, owner_reference
from setpoint.workloads.controllers.podcontrol import Record, labels_of, selector_of

ORPHAN_INDEX = "setpoint.workloads/orphans"
"""A store index: objects without a controller owner, by namespace."""


# -- adoption and release ---------------------------------------------------------------------

def _orphans_by_namespace(obj: Obj) -> Iterable[str]:
    if controller_of(obj) is not None:
        return ()
    namespace = namespace_of(obj)
    return (namespace,) if namespace else ()


def index_orphans(manager: Manager, kind: ResourceRef) -> None:
    """Index the cached objects of ``kind`` that have no controller, by namespace (what
    :func:`orphans` reads); safe to call from several controllers."""
    store: Store = manager.cache.store_for(kind, create=True)
    store.add_indexer(ORPHAN_INDEX, _orphans_by_namespace)


def orphans(manager: Manager, kind: ResourceRef, namespace: str) -> list[Obj]:
    """The cached objects of ``kind`` in ``namespace`` without a controller owner."""
    return manager.cache.list_raw(kind, index=(ORPHAN_INDEX, namespace))


CanAdopt = Callable[[], Awaitable[None]]


def recheck_owner(client: Client, owner: Mapping[str, Any], kind: ResourceRef) -> CanAdopt:
    """``RecheckDeletionTimestamp``: before the first adoption, read the owner afresh and
    refuse (raise) when it was replaced or is being deleted; checked once."""
    done: list[bool] = []

    async def check() -> None:
        if done:
            return
        fresh = await client.get(kind, name_of(owner), namespace=namespace_of(owner) or None)
        uid, want = meta(fresh).get("uid"), meta(owner).get("uid")
        if uid != want:
            raise RuntimeError(f"original {owner.get('kind')} {namespace_of(owner)}/"
                               f"{name_of(owner)} is gone: got uid {uid}, wanted {want}")
        deleted = meta(fresh).get("deletionTimestamp")
        if deleted:
            raise RuntimeError(f"{namespace_of(owner)}/{name_of(owner)} has just been "
                               f"deleted at {deleted}")
        done.append(True)

    return check


async def claim(client: Client, owner: Mapping[str, Any], kind: ResourceRef,
                candidates: Iterable[Obj], selector: label_selectors.Selector, *,
                can_adopt: CanAdopt, record: Record | None = None,
                match: Callable[[Obj], bool] | None = None) -> list[Obj]:
    """``ControllerRefManager.ClaimObject`` over ``candidates``: the objects ``owner``
    controls after adopting matching orphans and releasing owned ones that no longer
    match (never while ``owner`` is being deleted). Patches are strategic merge patches
    with the object's uid as precondition; the first failure raises."""
    uid = meta(owner).get("uid")
    deleting = bool(meta(owner).get("deletionTimestamp"))
    owner_namespace = namespace_of(owner)

    def matches(obj: Obj) -> bool:
        return selector.matches(labels_of(obj)) and (match is None or match(obj))

    claimed: list[Obj] = []
    for obj in candidates:
        ref = controller_of(obj)
        if ref is not None:
            if ref.get("uid") != uid:
                continue
            if matches(obj):
                claimed.append(obj)
                continue
            if deleting:
                continue
            patch = {"metadata": {"ownerReferences": [{"$patch": "delete", "uid": uid}],
                                  "uid": meta(obj).get("uid")}}
            await _patch_owner(client, kind, obj, patch, record)
            continue
        if deleting or not matches(obj) or meta(obj).get("deletionTimestamp"):
            continue
        if owner_namespace and owner_namespace != namespace_of(obj):
            continue
        await can_adopt()
        patch = {"metadata": {"ownerReferences": [owner_reference(owner)],
                              "uid": meta(obj).get("uid")}}
        adopted = await _patch_owner(client, kind, obj, patch, record)
        if adopted is not None:
            claimed.append(adopted)
    return claimed


async def _patch_owner(client: Client, kind: ResourceRef, obj: Obj, patch: Obj,
                       record: Record | None) -> Obj | None:
    try:
        result: Obj = await client.patch(kind, name_of(obj), patch,
                                         patch_type=PatchType.STRATEGIC,
                                         namespace=namespace_of(obj) or None)
    except NotFoundError:
        return None
    if record is not None:
        record(result)
    return result


# -- ownership ---------------------------------------------------------------------------

def is_controlled_by(obj: Obj, owner: Obj) -> bool:
    """Whether ``owner`` is ``obj``'s controller (by uid)."""
    uid = meta(owner).get("uid")
    return any(r.get("uid") == uid and r.get("controller")
               for r in meta(obj).get("ownerReferences") or [])


def controller_name(obj: Mapping[str, Any], kind: str, group: str = "apps") -> str | None:
    """The name of the ``kind`` of API ``group`` (``""``: the core group) controlling
    ``obj``, if one does."""
    ref = controller_of(obj)
    if ref is None or ref.get("kind") != kind:
        return None
    api_version = str(ref.get("apiVersion", ""))
    if (api_version.rpartition("/")[0] if "/" in api_version else "") != group:
        return None
    return str(ref.get("name") or "") or None


def owner_selector(owner: Mapping[str, Any]) -> label_selectors.Selector:
    """The pod selector of an owner whose ``spec.selector`` is a ``LabelSelector``."""
    return selector_of((owner.get("spec") or {}).get("selector"))


class ControllerOrAdopters(Handler):
    """Which owners hear about an object: its controller of kind ``owner_kind``, or, for an
    orphan, every owner of its namespace whose selector matches it (one may adopt it)."""

    def __init__(self, manager: Manager, owners: Kind, owner_kind: str, *,
                 skip_deleting_orphans: bool = False, owner_group: str = "apps",
                 selector: Callable[[Obj], label_selectors.Selector] = owner_selector,
                 ) -> None:
        self.manager = manager
        self.owners = owners
        self.owner_kind = owner_kind
        self.owner_group = owner_group
        self.selector = selector
        self.skip_deleting_orphans = skip_deleting_orphans

    def __repr__(self) -> str:
        return f"ControllerOrAdopters({self.owner_kind})"

    def requests(self, obj: Obj) -> Iterable[Request]:
        owner = controller_name(obj, self.owner_kind, self.owner_group)
        if owner is not None:
            return (Request(namespace_of(obj), owner),)
        if controller_of(obj) is not None or (
                self.skip_deleting_orphans and meta(obj).get("deletionTimestamp")):
            return ()
        return self._matching(obj)

    def update_requests(self, old: Obj, new: Obj) -> Iterable[Request]:
        if meta(old).get("resourceVersion") == meta(new).get("resourceVersion"):
            return ()
        new_owner = controller_name(new, self.owner_kind, self.owner_group)
        old_refs, new_refs = meta(old).get("ownerReferences"), meta(new).get("ownerReferences")
        if new_owner is not None and (old_refs is new_refs or old_refs == new_refs):
            # the same controller before and after (a status write: most updates)
            return (Request(namespace_of(new), new_owner),)
        out: set[Request] = set()
        old_owner = controller_name(old, self.owner_kind, self.owner_group)
        if old_owner is not None and old_owner != new_owner:
            out.add(Request(namespace_of(old), old_owner))
        if new_owner is not None:
            out.add(Request(namespace_of(new), new_owner))
        elif controller_of(new) is None and (
                labels_of(old) != labels_of(new) or controller_of(old) is not None):
            out.update(self._matching(new))
        return out

    def _matching(self, obj: Obj) -> list[Request]:
        out: list[Request] = []
        labels = labels_of(obj)
        if not labels:
            return out
        for owner in self.manager.cache.list_raw(self.owners, namespace=namespace_of(obj)):
            try:
                selector = self.selector(owner)
            except SelectorError:
                continue
            if not selector.empty and selector.matches(labels):
                out.append(Request(namespace_of(owner), name_of(owner)))
        return out

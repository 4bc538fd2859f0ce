"""Owner references and finalizers, on object dicts.

``ownerReferences`` tie an object to the one that made it: the garbage collector deletes
dependents with their owner, and a controller hears about changes to what it owns. At most
one reference is the *controller* reference (``controller: true``).
"""

from __future__ import annotations

from typing import Any

from setpoint.machinery.objects import Obj
from setpoint.runtime._objects import as_dict, meta


class AlreadyOwnedError(ValueError):
    """The object already has a different controller owner."""


def owner_reference(owner: object, *, controller: bool = True,
                    block_owner_deletion: bool = True) -> dict[str, Any]:
    """An ``OwnerReference`` to ``owner`` (dict or typed; it must have been read from the
    server, since the reference needs its uid)."""
    body = as_dict(owner)
    m = meta(body)
    if not m.get("uid") or not m.get("name"):
        raise ValueError("an owner needs metadata.name and metadata.uid (read it first)")
    ref: dict[str, Any] = {
        "apiVersion": body.get("apiVersion"), "kind": body.get("kind"),
        "name": m["name"], "uid": m["uid"],
    }
    if controller:
        ref["controller"] = True
    if block_owner_deletion:
        ref["blockOwnerDeletion"] = True
    return ref


def controller_of(obj: object) -> dict[str, Any] | None:
    """The controller owner reference of ``obj``, if any."""
    for ref in meta(as_dict(obj)).get("ownerReferences") or ():
        if ref.get("controller"):
            return dict(ref)
    return None


def _check_scope(owner: Obj, obj: Obj) -> None:
    owner_ns = meta(owner).get("namespace")
    obj_ns = meta(obj).get("namespace")
    if owner_ns and obj_ns and owner_ns != obj_ns:
        raise ValueError(f"cross-namespace owner references are not allowed: owner in "
                         f"{owner_ns!r}, object in {obj_ns!r}")


def set_owner_reference(owner: object, obj: Obj, *, controller: bool = True) -> Obj:
    """Add (or refresh) a reference to ``owner`` in the dict ``obj`` and return it.

    With ``controller`` the reference is the controller reference; another controller
    owner raises :class:`AlreadyOwnedError`, as controller-runtime does.
    """
    owner_body = as_dict(owner)
    _check_scope(owner_body, obj)
    ref = owner_reference(owner_body, controller=controller, block_owner_deletion=True)
    metadata = obj.setdefault("metadata", {})
    refs: list[dict[str, Any]] = list(metadata.get("ownerReferences") or [])
    if controller:
        for existing in refs:
            if existing.get("controller") and existing.get("uid") != ref["uid"]:
                raise AlreadyOwnedError(
                    f"{meta(obj).get('name')} is already controlled by "
                    f"{existing.get('kind')} {existing.get('name')}")
    refs = [r for r in refs if r.get("uid") != ref["uid"]]
    refs.append(ref)
    metadata["ownerReferences"] = refs
    return obj


def has_finalizer(obj: object, finalizer: str) -> bool:
    return finalizer in (meta(as_dict(obj)).get("finalizers") or ())


def is_being_deleted(obj: object) -> bool:
    """True once deletion was requested (``deletionTimestamp`` set; finalizers hold it)."""
    return bool(meta(as_dict(obj)).get("deletionTimestamp"))

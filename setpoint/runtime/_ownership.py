"""Owner references and finalizers, on object dicts.

``ownerReferences`` tie an object to the one that made it: the garbage collector deletes
dependents with their owner, and a controller hears about changes to what it owns. At most
one reference is the *controller* reference (``controller: true``).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from setpoint.machinery.objects import Obj
from setpoint.runtime._objects import as_dict, meta

_NO_METADATA: Mapping[str, Any] = MappingProxyType({})


class AlreadyOwnedError(ValueError):
    """The object already has a different controller owner."""


def owner_reference(owner: object, *, controller: bool = True,
                    block_owner_deletion: bool = True) -> dict[str, Any]:
    """An ``OwnerReference`` to ``owner`` (dict or typed; it must have been read from the
    server, since the reference needs its uid)."""
    body = as_dict(owner)
    return _reference(body, meta(body), controller, block_owner_deletion)


def _reference(body: Obj, m: Mapping[str, Any], controller: bool,
               block_owner_deletion: bool) -> dict[str, Any]:
    """:func:`owner_reference` of an owner's dict ``body`` and its metadata ``m``."""
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


def _group(api_version: object) -> str:
    text = api_version if isinstance(api_version, str) else ""
    return text.rpartition("/")[0]


def refer_same_object(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two owner references name the same owner: same group, kind and name, as
    controller-runtime's ``referSameObject`` (the version and uid may differ: an owner
    read at another version, or deleted and created again under its name)."""
    return (_group(a.get("apiVersion")) == _group(b.get("apiVersion"))
            and a.get("kind") == b.get("kind") and a.get("name") == b.get("name"))


def set_owner_reference(owner: object, obj: Obj, *, controller: bool = True) -> Obj:
    """Add (or refresh, in place) a reference to ``owner`` in the dict ``obj`` and return
    it, as controller-runtime's ``SetControllerReference`` / ``SetOwnerReference``
    (pkg/controller/controllerutil/controllerutil.go: ``upsertOwnerRef``).

    With ``controller`` the reference is the controller reference; a controller reference
    to another owner raises :class:`AlreadyOwnedError`.
    """
    # _check_scope, owner_reference and refer_same_object, read in one step: a
    # reconcile's create_or_update sets its owner on every event
    owner_body = as_dict(owner)
    owner_meta = owner_body.get("metadata") or _NO_METADATA
    owner_ns = owner_meta.get("namespace")
    obj_ns = (obj.get("metadata") or _NO_METADATA).get("namespace")
    if owner_ns and obj_ns and owner_ns != obj_ns:
        raise ValueError(f"cross-namespace owner references are not allowed: owner in "
                         f"{owner_ns!r}, object in {obj_ns!r}")
    ref = _reference(owner_body, owner_meta, controller, True)
    metadata = obj.setdefault("metadata", {})
    refs: list[dict[str, Any]] = list(metadata.get("ownerReferences") or [])
    if refs:
        group, kind, name = _group(ref["apiVersion"]), ref["kind"], ref["name"]
        same = [existing.get("kind") == kind and existing.get("name") == name
                and _group(existing.get("apiVersion")) == group for existing in refs]
        if controller:
            for existing, is_same in zip(refs, same, strict=True):
                if existing.get("controller") and not is_same:
                    raise AlreadyOwnedError(
                        f"Object {meta(obj).get('namespace') or ''}/{meta(obj).get('name')} "
                        f"is already owned by another {existing.get('kind')} controller "
                        f"{existing.get('name')}")
        if True in same:
            refs[same.index(True)] = ref
        else:
            refs.append(ref)
    else:
        refs.append(ref)
    metadata["ownerReferences"] = refs
    return obj


def has_finalizer(obj: object, finalizer: str) -> bool:
    return finalizer in (meta(as_dict(obj)).get("finalizers") or ())


def is_being_deleted(obj: object) -> bool:
    """True once deletion was requested (``deletionTimestamp`` set; finalizers hold it)."""
    return bool(meta(as_dict(obj)).get("deletionTimestamp"))

"""When a protection finalizer must be added or may be removed (pkg/controller/util/protectionutil).

Shared by the ``pvc-protection`` and ``pv-protection`` controllers: an object being deleted
that still holds the finalizer is a deletion candidate; one not being deleted that lacks it
needs it (the admission plugin adds it on create; the controller catches objects stored
before, or created around it).
"""

from __future__ import annotations

from setpoint.machinery.objects import Obj


def is_deletion_candidate(obj: Obj, finalizer: str) -> bool:
    """``IsDeletionCandidate``: being deleted and still holding ``finalizer``."""
    meta = obj.get("metadata") or {}
    return bool(meta.get("deletionTimestamp")) and finalizer in (meta.get("finalizers") or [])


def need_to_add_finalizer(obj: Obj, finalizer: str) -> bool:
    """``NeedToAddFinalizer``: not being deleted and without ``finalizer``."""
    meta = obj.get("metadata") or {}
    return not meta.get("deletionTimestamp") and finalizer not in (meta.get("finalizers") or [])


def with_finalizer(obj: Obj, finalizer: str) -> Obj:
    """A copy of ``obj`` (metadata copied, the rest shared) with ``finalizer`` appended."""
    meta = dict(obj["metadata"])
    meta["finalizers"] = [*(meta.get("finalizers") or []), finalizer]
    return {**obj, "metadata": meta}


def without_finalizer(obj: Obj, finalizer: str) -> Obj:
    """A copy of ``obj`` without ``finalizer`` (``slice.RemoveString``: every occurrence)."""
    meta = dict(obj["metadata"])
    meta["finalizers"] = [f for f in meta.get("finalizers") or [] if f != finalizer]
    return {**obj, "metadata": meta}

"""Own writes: what a reconcile wrote, so that only the exact echo of it is not queued again.

The :class:`~setpoint.runtime._writer.Writer` puts the answer of every write into the cache
at once, so the next read sees it, and the handlers hear of that change like any other.
Queuing the reconcile that made the write again for it would only repeat that reconcile,
so its controller skips that one request. It may do so only when the answer holds nothing
but the write: a merge patch of the status or a server-side apply carries no
resourceVersion precondition, and its answer also holds whatever else changed on the server
while it was in flight, such as a user's new spec, whose own watch event then comes after
the cache already holds a newer version and brings nothing new.

An :class:`OwnWrite` records one write: who made it (:class:`Origin`: the controller, the
request it was reconciling, the generation that reconcile saw), which object, the
resourceVersion the server answered, and what was sent. :meth:`OwnWrite.is_echo` compares
the answer with what the cache held just before it: it is an echo only when everything
the write did not send is unchanged (the status subresource's writes compare the
generation as well), and the reconciled object's generation is not newer than the one its
reconcile saw. Anything else is handed out as a change, so a reconcile runs again.

The write's watch event may come before its answer: the informer then holds that event's
dispatch until the answer is known (``Informer.begin_write``) and compares it the same way,
with the object as the cache held it just before that event.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from setpoint.machinery.frozen import quick_init
from setpoint.machinery.objects import Obj
from setpoint.runtime._objects import (
    KindKey,
    key_of,
    kind_key,
    meta,
    object_key,
)
from setpoint.runtime._reconcile import Request


class _Everything:
    def __repr__(self) -> str:
        return "EVERYTHING"


EVERYTHING: Final = _Everything()
"""What a write sent when it made the whole object: a create, or an update with the cached
resourceVersion as precondition (the server refuses it if anything else changed since)."""

_MISSING: Final = object()
_NO_METADATA: Final[Mapping[str, Any]] = {}

_VOLATILE: Final = {"resourceVersion": True, "managedFields": True}
"""Metadata every write changes, or the runtime forgets (``drop_managed_fields``)."""

_VOLATILE_SPEC: Final = {**_VOLATILE, "generation": True}
"""Writes to the main resource may change the spec, and with it the generation."""


@quick_init
@dataclass(frozen=True, slots=True)
class Origin:
    """The reconcile a write was made by."""

    controller: str
    request: Request
    kind: KindKey
    """The kind of the reconciled object (with ``request``, which object it is)."""
    generation: int | None
    """``metadata.generation`` of the reconciled object as that reconcile read it."""

    @classmethod
    def of(cls, controller: str, request: Request, reconciled: Obj) -> Origin:
        generation = meta(reconciled).get("generation")
        return cls(controller, request, kind_key(reconciled),
                   generation if isinstance(generation, int) else None)


@quick_init
@dataclass(frozen=True, slots=True)
class OwnWrite:
    """One write a reconcile made, as the server answered it."""

    origin: Origin
    kind: KindKey
    key: str
    """``namespace/name`` of the written object."""
    resource_version: str
    """The resourceVersion of the server's answer."""
    sent: Any
    """The document sent: its keys (nested) are the parts the write set, and a value that
    is not a mapping covers everything below it; or :data:`EVERYTHING`."""
    status: bool = False
    """Whether the write went to the status subresource (which never changes the spec)."""

    @classmethod
    def of(cls, origin: Origin, answer: Obj, sent: Any, *, status: bool = False) -> OwnWrite:
        rv = (answer.get("metadata") or _NO_METADATA).get("resourceVersion")
        # resource_version_of, inline (two per reconcile)
        return cls(origin, kind_key(answer), key_of(answer),
                   rv if type(rv) is str else str(rv or ""), sent, status)

    def is_echo(self, before: Obj | None, current: Obj) -> bool:
        """Whether ``current`` is exactly this write applied to ``before`` (what the cache
        held when the answer arrived): nothing anyone else did is in it."""
        # kind, key and resourceVersion read from one metadata read, without the
        # accessors' calls (resource_version_of, key_of, kind_key: asked per own write)
        m = current.get("metadata") or _NO_METADATA
        rv = m.get("resourceVersion")
        if (rv if type(rv) is str else str(rv or "")) != self.resource_version:
            return False
        kind = self.kind
        if current.get("kind") != kind.kind or current.get("apiVersion") != kind.api_version \
                or key_of(current) != self.key:
            return False
        origin = self.origin
        if origin.generation is not None and kind == origin.kind:
            # _newer_than_reconciled, with the metadata read above
            request = origin.request
            generation = m.get("generation")
            if isinstance(generation, int) and generation > origin.generation \
                    and self.key == object_key(request.namespace, request.name):
                return False
        if self.sent is EVERYTHING:
            return True
        if before is None:
            return False  # it existed on the server, unseen by the cache: what else is in it?
        volatile = _VOLATILE if self.status else _VOLATILE_SPEC
        sent_meta = self.sent.get("metadata")
        covered = {**self.sent, "metadata": {
            **(sent_meta if _is_mapping(sent_meta) else {}), **volatile}}
        return _same_outside(before, current, covered)

    def echoes(self, controller: str | None, request: Request) -> bool:
        """Whether ``request``, queued for ``controller``, would only repeat the reconcile
        that made this write."""
        return controller == self.origin.controller and request == self.origin.request



_JSON_SCALARS: Final = frozenset({str, int, float, bool, type(None), list})


def _is_mapping(value: Any) -> bool:
    # the documents here are JSON: a dict or a scalar is told by its exact type, before
    # an ABC instance check (a Python-level call, several per own write)
    cls = type(value)
    if cls is dict:
        return True
    return cls not in _JSON_SCALARS and isinstance(value, Mapping)


def _same_outside(a: Any, b: Any, covered: Any) -> bool:
    """Whether ``a`` and ``b`` agree everywhere ``covered`` does not reach."""
    # a dict told by its exact type first: _is_mapping is a call, several per own write
    if type(covered) is not dict and not _is_mapping(covered):
        return True  # the write set this whole value
    # a merge patch into a missing or null map creates it
    a = {} if a is _MISSING or a is None else a
    b = {} if b is _MISSING or b is None else b
    if not ((type(a) is dict or _is_mapping(a)) and (type(b) is dict or _is_mapping(b))):
        return bool(a == b)
    for k in a.keys() | b.keys():
        left, right = a.get(k, _MISSING), b.get(k, _MISSING)
        if k in covered:
            if not _same_outside(left, right, covered[k]):
                return False
        elif left != right:
            return False
    return True

"""Predicates: which changes of a watched object are worth a reconcile.

A predicate looks at an event before its handler maps it to requests. The built-ins match
controller-runtime's ``predicate`` package; combine them with ``&``, ``|`` and ``~`` (or
:func:`and_`, :func:`or_`, :func:`not_`)::

    Controller.for_(Memcached, predicates=[GenerationChanged() | LabelsChanged()])
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from setpoint.machinery.objects import Obj
from setpoint.runtime._objects import meta, resource_version_of

__all__ = [
    "AnnotationsChanged",
    "Funcs",
    "GenerationChanged",
    "LabelsChanged",
    "Predicate",
    "ResourceVersionChanged",
    "and_",
    "not_",
    "or_",
]


class Predicate:
    """Lets every event through; subclasses override the events they filter."""

    def create(self, obj: Obj) -> bool:
        return True

    def update(self, old: Obj, new: Obj) -> bool:
        return True

    def delete(self, obj: Obj) -> bool:
        return True

    def __and__(self, other: Predicate) -> Predicate:
        return and_(self, other)

    def __or__(self, other: Predicate) -> Predicate:
        return or_(self, other)

    def __invert__(self) -> Predicate:
        return not_(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class Funcs(Predicate):
    """A predicate from plain functions; a missing one lets its events through."""

    def __init__(
        self, *, create: Callable[[Obj], bool] | None = None,
        update: Callable[[Obj, Obj], bool] | None = None,
        delete: Callable[[Obj], bool] | None = None,
    ) -> None:
        self._create, self._update, self._delete = create, update, delete

    def create(self, obj: Obj) -> bool:
        return self._create(obj) if self._create else True

    def update(self, old: Obj, new: Obj) -> bool:
        return self._update(old, new) if self._update else True

    def delete(self, obj: Obj) -> bool:
        return self._delete(obj) if self._delete else True


class ResourceVersionChanged(Predicate):
    """Updates that really changed the object (not a resync of the same version)."""

    def update(self, old: Obj, new: Obj) -> bool:
        return resource_version_of(old) != resource_version_of(new)


class GenerationChanged(Predicate):
    """Updates of the spec: ``metadata.generation`` moved. Status, label and annotation
    changes do not move it, so they are filtered out. (A deletion request sets
    ``deletionTimestamp`` without a new generation: pair this with a finalizer-aware
    predicate if you need it.)"""

    def update(self, old: Obj, new: Obj) -> bool:
        return meta(old).get("generation") != meta(new).get("generation")


def _field_changed(name: str) -> Callable[[Obj, Obj], bool]:
    def changed(old: Obj, new: Obj) -> bool:
        before: Mapping[str, Any] = meta(old).get(name) or {}
        after: Mapping[str, Any] = meta(new).get(name) or {}
        return before != after
    return changed


class LabelsChanged(Predicate):
    """Updates that changed ``metadata.labels``."""

    def update(self, old: Obj, new: Obj) -> bool:
        return _field_changed("labels")(old, new)


class AnnotationsChanged(Predicate):
    """Updates that changed ``metadata.annotations``."""

    def update(self, old: Obj, new: Obj) -> bool:
        return _field_changed("annotations")(old, new)


class _All(Predicate):
    def __init__(self, predicates: tuple[Predicate, ...]) -> None:
        self.predicates = predicates

    def create(self, obj: Obj) -> bool:
        return all(p.create(obj) for p in self.predicates)

    def update(self, old: Obj, new: Obj) -> bool:
        return all(p.update(old, new) for p in self.predicates)

    def delete(self, obj: Obj) -> bool:
        return all(p.delete(obj) for p in self.predicates)

    def __repr__(self) -> str:
        return " & ".join(map(repr, self.predicates)).join("()")


class _Any(Predicate):
    def __init__(self, predicates: tuple[Predicate, ...]) -> None:
        self.predicates = predicates

    def create(self, obj: Obj) -> bool:
        return any(p.create(obj) for p in self.predicates)

    def update(self, old: Obj, new: Obj) -> bool:
        return any(p.update(old, new) for p in self.predicates)

    def delete(self, obj: Obj) -> bool:
        return any(p.delete(obj) for p in self.predicates)

    def __repr__(self) -> str:
        return " | ".join(map(repr, self.predicates)).join("()")


class _Not(Predicate):
    def __init__(self, predicate: Predicate) -> None:
        self.predicate = predicate

    def create(self, obj: Obj) -> bool:
        return not self.predicate.create(obj)

    def update(self, old: Obj, new: Obj) -> bool:
        return not self.predicate.update(old, new)

    def delete(self, obj: Obj) -> bool:
        return not self.predicate.delete(obj)

    def __repr__(self) -> str:
        return f"~{self.predicate!r}"


def and_(*predicates: Predicate) -> Predicate:
    """Passes an event when every predicate does."""
    return _All(predicates)


def or_(*predicates: Predicate) -> Predicate:
    """Passes an event when any predicate does."""
    return _Any(predicates)


def not_(predicate: Predicate) -> Predicate:
    """Passes the events ``predicate`` filters out."""
    return _Not(predicate)

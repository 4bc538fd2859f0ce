"""Typed write answers, validated when first read.

A write (create, update, patch, apply) returns the server's answer typed like the object
sent. Validating that answer into a pydantic model is most of what a write costs the
calling process beyond its request, and most reconciles never read it (controller-runtime's
``client.Update`` fills the object passed in; an operator that states what it wants and
returns drops it). :func:`answer_like` therefore returns an instance of the class that is
still *unread*: it holds the answer's JSON and becomes the fully validated model, in place,
on the first attribute read of any kind (a field, ``model_dump``, ``repr``, ``==``, a copy,
a pickle, pydantic serializing it inside another model). From then on it is an ordinary
instance of the class: ``type(answer) is cls``. Before that, ``isinstance(answer, cls)``
holds, ``type(answer)`` is an unnamed subclass of ``cls``, and nothing has been paid.

An answer that does not validate as the class (a model stricter than the server) raises
:class:`UnreadableAnswerError` (a ``ValueError`` naming the kind, the object and the
class, from pydantic's error) on every read, as the eager validation raised at the write.

Only pydantic models whose class hooks are pydantic's own are read lazily (a user's
``__init_subclass__`` would see the unnamed subclass); other typed classes are built
at once with ``from_dict``/``model_validate``, as before.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, TypeVar, cast

import orjson

from setpoint.client.decoding import json_object
from setpoint.client.typed import from_body, is_typed_class

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = ["UnreadableAnswerError", "answer_like", "decoded_like", "is_unread"]

T = TypeVar("T")

_JSON = "_setpoint_unread_json"  # the instance's __dict__ key holding the answer until read
_REAL = "_setpoint_real_class"  # the unread class's attribute naming the class it stands for

_UNREAD: dict[type[Any], type[Any] | None] = {}


class UnreadableAnswerError(ValueError):
    """The server's answer to a write does not validate as the class it was sent as."""


def answer_like(cls: type[T], body: bytes) -> T:
    """The answer ``body`` (JSON bytes) as an instance of the typed class ``cls``,
    validated on its first read when ``cls`` allows it, else now."""
    unread = _unread_class(cls)  # an unread class maps to itself
    if unread is None:
        return from_body(cls, json_object(body))
    obj: T = object.__new__(unread)  # no cast(): a Python call per typed write
    object.__getattribute__(obj, "__dict__")[_JSON] = body
    return obj


def real_class(cls: type[T]) -> type[T]:
    """The class an unread answer's class stands for (``cls`` itself otherwise)."""
    return cast(type[T], cls.__dict__.get(_REAL, cls))


def is_unread(obj: object) -> bool:
    """True while ``obj`` is an answer nobody has read yet (for tests and benchmarks)."""
    return _REAL in type(obj).__dict__


def _read(obj: Any) -> None:
    """Validate the held answer and turn ``obj`` into an instance of its real class."""
    state = object.__getattribute__(obj, "__dict__")
    unread = type(obj)
    cls = unread.__dict__[_REAL]
    body = state.get(_JSON)
    if body is None:  # built by model_validate on the unread class itself: already whole
        object.__setattr__(obj, "__class__", cls)
        return
    from pydantic import ValidationError  # loaded: cls is a pydantic model

    data = orjson.loads(body)
    try:
        model = from_body(cls, data)
    except ValidationError as err:
        metadata = data.get("metadata") or {} if isinstance(data, dict) else {}
        where = "/".join(str(p) for p in (metadata.get("namespace"), metadata.get("name")) if p)
        raise UnreadableAnswerError(
            f"the server's answer for {data.get('kind') if isinstance(data, dict) else '?'}"
            f" {where or '?'} does not validate as {cls.__qualname__}: {err}") from err
    # the model's own state, moved over whole; the slots are pydantic's
    state.clear()
    state.update(model.__dict__)
    for slot in ("__pydantic_fields_set__", "__pydantic_extra__", "__pydantic_private__"):
        object.__setattr__(obj, slot, object.__getattribute__(model, slot))
    object.__setattr__(obj, "__class__", cls)


def _getattribute(self: Any, name: str) -> Any:
    _read(self)
    return object.__getattribute__(self, name)


def _unread_class(cls: type[Any]) -> type[Any] | None:
    """The unread stand-in for ``cls``, made once per class (None: build at once)."""
    try:
        return _UNREAD[cls]
    except KeyError:
        pass
    unread: type[Any] | None = None
    # a client of dicts never loads pydantic: no model class can exist before it is loaded
    pydantic = sys.modules.get("pydantic")
    if pydantic is not None and isinstance(cls, type) and issubclass(cls, pydantic.BaseModel) \
            and _known_hook(cls):
        namespace = {"__slots__": (), "__module__": cls.__module__,
                     "__qualname__": cls.__qualname__, _REAL: cls,
                     "__getattribute__": _getattribute}
        # type.__new__, not the model metaclass: no schema and no registration; it still
        # calls __init_subclass__ (pydantic's or setpoint.resources', which may mark the
        # class: what it set is taken back, the stand-in reads everything from cls)
        unread = type.__new__(type(cls), cls.__name__, (cls,), dict(namespace))
        for added in set(unread.__dict__) - set(namespace) - {"__doc__"}:
            delattr(unread, added)
        _UNREAD[unread] = unread
    _UNREAD[cls] = unread
    return unread


def _known_hook(cls: type[BaseModel]) -> bool:
    """True when ``cls.__init_subclass__`` is pydantic's or setpoint.resources' (a user's
    hook might register the stand-in somewhere)."""
    hook = getattr(cls.__init_subclass__, "__func__", None)
    module = getattr(hook, "__module__", None) or ""
    return hook is getattr(sys.modules["pydantic"].BaseModel.__init_subclass__, "__func__", None) \
        or module.startswith("setpoint.resources.")


def decoded_like(obj: object, body: bytes) -> Any:
    """A write's answer typed like the object sent: unread until first read when typed
    (most callers drop it), else the JSON object."""
    cls = type(obj)
    return answer_like(cls, body) if is_typed_class(cls) else json_object(body)

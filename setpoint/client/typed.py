"""Typed resources: the small contract a Python class meets to be used with the client.

The client works on plain dicts first. A class becomes usable in their place when it says
which API resource it is (class-level ``api_version``, ``kind``, ``plural``, ``namespaced``)
and how to turn an instance into a JSON-compatible dict and back: either
``to_dict()``/``from_dict()`` or pydantic's ``model_dump()``/``model_validate()``. The
``setpoint.resources`` models meet it; so can any hand-written class.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Protocol, TypeVar, cast, runtime_checkable


@runtime_checkable
class TypedResource(Protocol):
    """A class that names its API resource.

    ``api_version`` is ``group/version`` (``v1`` for the core group), ``kind`` the Kind,
    ``plural`` the resource name in URLs and ``namespaced`` its scope. When ``plural`` or
    ``namespaced`` is missing, the client asks discovery instead. Instances also provide
    ``to_dict()`` or ``model_dump()``, and the class ``from_dict()`` or ``model_validate()``.
    """

    api_version: ClassVar[str]
    kind: ClassVar[str]
    plural: ClassVar[str]
    namespaced: ClassVar[bool]


T = TypeVar("T")


_TYPED: dict[type, bool] = {}
"""Per class met, whether it is typed: asked several times per write (issue 12, fourteenth
pass). A class's ``api_version`` and ``kind`` are class variables, set at its creation."""


_MAPPINGS: dict[type, bool] = {}
"""Per class of object met by :func:`to_body`, whether it is a ``Mapping``."""


def is_typed_class(value: object) -> bool:
    """True when ``value`` is a class that names an API resource (not a dict)."""
    if value is dict:  # asked of every dict written; its getattr misses would raise inside
        return False
    known = _TYPED.get(value) if isinstance(value, type) else False
    if known is not None:
        return known
    cls = cast(type, value)
    typed = isinstance(getattr(cls, "api_version", None), str) \
        and isinstance(getattr(cls, "kind", None), str)
    if len(_TYPED) < 4096 and "<locals>" not in cls.__qualname__:
        _TYPED[cls] = typed  # classes made in a function (tests) may be many: not kept
    return typed


def to_body(obj: object) -> dict[str, Any]:
    """The JSON-compatible dict of a dict or typed object, with ``apiVersion`` and ``kind``.

    Dicts are returned as they are (not copied); typed objects are serialized with
    ``to_dict()`` or, for pydantic models, ``model_dump(mode="json", by_alias=True,
    exclude_none=True)``, and get ``apiVersion``/``kind`` from their class when the
    serialization lacks them.
    """
    if isinstance(obj, dict):
        return obj
    cls = type(obj)
    mapping = _MAPPINGS.get(cls)
    if mapping is None:
        # per class: an ABC instance check costs a typed object's write about 2 k
        # instructions (issue 12, sixteenth pass)
        mapping = isinstance(obj, Mapping)
        if len(_MAPPINGS) < 4096 and "<locals>" not in cls.__qualname__:
            _MAPPINGS[cls] = mapping
    if mapping:
        return dict(cast(Mapping[str, Any], obj))
    to_dict = getattr(obj, "to_dict", None)
    if callable(to_dict):
        body = to_dict()
    else:
        dump = getattr(obj, "model_dump", None)
        if not callable(dump):
            raise TypeError(
                f"{type(obj).__name__} is neither a dict nor a typed resource "
                "(to_dict() or model_dump())"
            )
        body = dump(mode="json", by_alias=True, exclude_none=True)
    if not isinstance(body, dict):
        raise TypeError(f"{type(obj).__name__} serialized to {type(body).__name__}, not a dict")
    if is_typed_class(cls):
        # a typed class (is_typed_class) carries api_version and kind; read only when the
        # dump lacks them (a class attribute of a pydantic class is read through its
        # metaclass's __getattr__ hook, about 700 instructions)
        if "apiVersion" not in body:
            body["apiVersion"] = cls.api_version  # type: ignore[attr-defined]
        if "kind" not in body:
            body["kind"] = cls.kind  # type: ignore[attr-defined]
    return body


def from_body(cls: type[T], data: dict[str, Any]) -> T:
    """An instance of the typed class ``cls`` built from a server's JSON object."""
    from_dict = getattr(cls, "from_dict", None)
    if callable(from_dict):
        return cast(T, from_dict(data))
    validate = getattr(cls, "model_validate", None)
    if callable(validate):
        return cast(T, validate(data))
    raise TypeError(f"{cls.__name__} has neither from_dict() nor model_validate()")


def _identity(data: dict[str, Any]) -> dict[str, Any]:
    return data


def decoder_for(resource: object) -> Callable[[dict[str, Any]], Any]:
    """How an answer's object is handed to a caller that named ``resource``: an instance of
    a typed class, else the dict itself."""
    if is_typed_class(resource):
        cls = cast(type[Any], resource)
        return lambda data: from_body(cls, data)
    return _identity

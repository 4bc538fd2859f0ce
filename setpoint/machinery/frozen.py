"""A frozen dataclass whose instances are made at the cost of a mutable one's.

``@dataclass(frozen=True)`` makes its ``__init__`` set each field with
``object.__setattr__(self, name, value)``, because the class's own ``__setattr__`` refuses;
that generic path (a method lookup and an MRO lookup per field) makes an eight-field
instance cost about 13 k instructions against about 3 k for the same class unfrozen. The
SDK makes several such records per watch event (a request's :class:`RequestRecord`, a
write's ``OwnWrite``). :func:`quick_init` gives a frozen, slotted dataclass an
``__init__`` that stores each field through its slot's own descriptor instead (about 8 k
for eight fields): the same parameters, defaults and instance; the class stays frozen,
equal, hashed and printed as the dataclass made it.
"""

from __future__ import annotations

import dataclasses
from types import MemberDescriptorType
from typing import Any, TypeVar

__all__ = ["quick_init"]

C = TypeVar("C", bound=type)


def quick_init(cls: C) -> C:
    """``cls`` (a ``@dataclass(frozen=True, slots=True)``) with the faster ``__init__``
    (its ``__post_init__``, if any, called at the end as before); a class it cannot keep
    the same (another kind of dataclass, a ``default_factory``, an ``InitVar``, a field
    left out of ``__init__`` or keyword-only) is returned unchanged."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__slots__" not in cls.__dict__:
        return cls
    if any(f._field_type is not dataclasses._FIELD  # type: ignore[attr-defined]
           for f in getattr(cls, "__dataclass_fields__", {}).values()):
        return cls  # an InitVar (or ClassVar) takes part in __init__ in its own way
    fields = [f for f in dataclasses.fields(cls) if f.init]
    if any(f.default_factory is not dataclasses.MISSING or f.kw_only for f in fields) \
            or len(fields) != len(dataclasses.fields(cls)) \
            or not all(isinstance(cls.__dict__.get(f.name), MemberDescriptorType)
                       for f in fields):
        return cls
    namespace: dict[str, Any] = {}
    args = []
    for f in fields:
        namespace[f"_set_{f.name}"] = cls.__dict__[f.name].__set__
        if f.default is dataclasses.MISSING:
            args.append(f.name)
        else:
            namespace[f"_default_{f.name}"] = f.default
            args.append(f"{f.name}=_default_{f.name}")
    body = "".join(f"    _set_{f.name}(self, {f.name})\n" for f in fields)
    if hasattr(cls, "__post_init__"):
        body += "    self.__post_init__()\n"  # as the dataclass's own __init__ ends
    body = body or "    pass\n"
    source = f"def __init__(self, {', '.join(args)}):\n{body}"
    exec(source, namespace)  # the names are the dataclass's own fields
    init = namespace["__init__"]
    original = cls.__init__  # type: ignore[misc]
    init.__qualname__ = original.__qualname__
    init.__module__ = original.__module__
    init.__annotations__ = dict(getattr(original, "__annotations__", {}))
    init.__doc__ = original.__doc__
    cls.__init__ = init  # type: ignore[misc]
    return cls

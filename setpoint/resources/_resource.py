"""``Resource``: a whole Kubernetes object of one kind, typed.

A resource class names its API resource at class level (``api_version``, ``kind``,
``plural``, ``namespaced``: the contract :class:`setpoint.client.TypedResource` asks for),
so ``client.get(Deployment, "web", namespace="default")`` knows where to go. Instances carry
``metadata`` (a typed ``ObjectMeta``) and the kind's own fields, and serialize with
``apiVersion`` and ``kind`` first, as ``kubectl get -o json`` shows them.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field, model_validator

from setpoint.resources._model import Model
from setpoint.resources.models.meta_v1 import ObjectMeta

__all__ = ["Resource"]

# keyword shortcuts accepted by the constructor and moved into metadata
_METADATA_SHORTCUTS = ("name", "namespace", "labels", "annotations")
_HEADERS: dict[type, tuple[str, str, frozenset[str]]] = {}
"""Per class: its ``api_version``, ``kind`` and the shortcuts it takes (those that are not
fields of its own). Read once: a class attribute read on a pydantic class goes through its
metaclass's ``__getattr__`` hook, about 700 instructions each, several per validation."""


def _header_of(cls: type[Resource]) -> tuple[str, str, frozenset[str]] | None:
    """The class's header, or None for a class without a ``kind`` and ``api_version`` (an
    abstract base such as CustomResource itself, whose validation takes no header)."""
    header = _HEADERS.get(cls)
    if header is None:
        api_version, kind = getattr(cls, "api_version", None), getattr(cls, "kind", None)
        if not isinstance(api_version, str) or not isinstance(kind, str):
            return None
        header = (api_version, kind, frozenset(
            k for k in _METADATA_SHORTCUTS if k not in cls.model_fields))
        if len(_HEADERS) < 4096:  # classes made in a function (tests) may be many
            _HEADERS[cls] = header
    return header


class Resource(Model):
    """Base class of typed objects; subclasses set the four class attributes.

    ``Deployment(name="web", namespace="prod", spec=...)`` is short for
    ``Deployment(metadata=ObjectMeta(name="web", namespace="prod"), spec=...)``; ``labels``
    and ``annotations`` may be given the same way.
    """

    api_version: ClassVar[str]
    kind: ClassVar[str]
    plural: ClassVar[str]
    namespaced: ClassVar[bool]

    metadata: ObjectMeta = Field(default_factory=ObjectMeta)

    @model_validator(mode="before")
    @classmethod
    def _take_header_and_shortcuts(cls, data: Any) -> Any:
        # every validation of a typed object passes here (several per reconcile): the
        # shortcuts a class takes are found once, and nothing is looked up that is absent
        if type(data) is not dict and not isinstance(data, dict):
            return data
        header = _HEADERS.get(cls) or _header_of(cls)
        if header is None:
            return _take_slowly(cls, data)
        cls_api_version, cls_kind, taken = header
        api_version = data.get("apiVersion")
        if api_version is not None and api_version != cls_api_version:
            raise ValueError(f"apiVersion is {api_version!r}, but {cls.__name__} is "
                             f"{cls_api_version} {cls_kind}")
        kind = data.get("kind")
        if kind is not None and kind != cls_kind:
            raise ValueError(f"kind is {kind!r}, but {cls.__name__} is "
                             f"{cls_api_version} {cls_kind}")
        data = dict(data)
        # popped whatever they hold (a None too), as the model has no such fields
        data.pop("apiVersion", None)
        data.pop("kind", None)
        data.pop("api_version", None)
        # a server's object has none: one set operation in C tells it
        if taken.isdisjoint(data):
            return data
        # in _METADATA_SHORTCUTS' order, as the constructor's keywords were moved before
        shortcuts = {}
        for k in _METADATA_SHORTCUTS:  # a loop, not a comprehension's function call
            if k in taken and k in data:
                shortcuts[k] = data.pop(k)
        _merge_metadata(data, shortcuts)
        return data

    def _wire_header(self) -> dict[str, Any]:
        cls = type(self)
        header = _HEADERS.get(cls) or _header_of(cls)
        if header is None:
            return {"apiVersion": self.api_version, "kind": self.kind}
        return {"apiVersion": header[0], "kind": header[1]}

    def __repr_args__(self) -> Any:
        meta = self.metadata
        if meta.name is not None:
            yield "name", meta.name
        elif meta.generate_name is not None:
            yield "generate_name", meta.generate_name
        if meta.namespace is not None:
            yield "namespace", meta.namespace
        for name, value in super().__repr_args__():
            if name != "metadata":
                yield name, value

    @classmethod
    def gvk(cls) -> tuple[str, str, str]:
        """(group, version, kind); the group is ``""`` for the core API."""
        group, _, version = cls.api_version.rpartition("/")
        return group, version, cls.kind


def _take_slowly(cls: type[Resource], data: dict[str, Any]) -> Any:
    """``_take_header_and_shortcuts`` for a class whose ``kind`` or ``api_version`` is not
    a string (none at all: an abstract base), reading them as the validation always did."""
    if getattr(cls, "kind", None) is None:
        return data
    data = dict(data)
    api_version = data.pop("apiVersion", None)
    if api_version is not None and api_version != cls.api_version:
        raise ValueError(f"apiVersion is {api_version!r}, but {cls.__name__} is "
                         f"{cls.api_version} {cls.kind}")
    kind = data.pop("kind", None)
    if kind is not None and kind != cls.kind:
        raise ValueError(f"kind is {kind!r}, but {cls.__name__} is "
                         f"{cls.api_version} {cls.kind}")
    data.pop("api_version", None)
    shortcuts = {k: data.pop(k) for k in _METADATA_SHORTCUTS
                 if k not in cls.model_fields and k in data}
    if shortcuts:
        _merge_metadata(data, shortcuts)
    return data


def _merge_metadata(data: dict[str, Any], shortcuts: dict[str, Any]) -> None:
    """Put the metadata shortcut keywords (``name=``, ``labels=`` ...) into ``metadata``,
    over what it holds, whether it is absent, an ObjectMeta or a plain dict."""
    meta = data.get("metadata")
    if meta is None:
        data["metadata"] = shortcuts
    elif isinstance(meta, ObjectMeta):
        data["metadata"] = meta.model_copy(update=shortcuts)
    else:
        data["metadata"] = {**meta, **shortcuts}

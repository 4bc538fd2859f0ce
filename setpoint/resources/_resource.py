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
_SHORTCUTS: dict[type, tuple[str, ...]] = {}
"""Per class, the shortcuts it takes: those that are not fields of its own."""


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
        if not isinstance(data, dict) or getattr(cls, "kind", None) is None:
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
        if "api_version" in data:
            del data["api_version"]
        taken = _SHORTCUTS.get(cls)
        if taken is None:
            taken = _SHORTCUTS[cls] = tuple(
                k for k in _METADATA_SHORTCUTS if k not in cls.model_fields)
        shortcuts = {k: data.pop(k) for k in taken if k in data}
        if shortcuts:
            meta = data.get("metadata")
            if meta is None:
                data["metadata"] = shortcuts
            elif isinstance(meta, ObjectMeta):
                data["metadata"] = meta.model_copy(update=shortcuts)
            else:
                data["metadata"] = {**meta, **shortcuts}
        return data

    def _wire_header(self) -> dict[str, Any]:
        return {"apiVersion": self.api_version, "kind": self.kind}

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

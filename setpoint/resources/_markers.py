"""Schema markers: the kubebuilder ``+kubebuilder:validation:...`` comments, as annotations.

Put them in ``Annotated[...]`` next to a field's type; they change only the generated CRD
schema, never how Python validates::

    ports: Annotated[list[Port], ListType.map(keys=["name"])] = []
    replicas: Annotated[int, Rule("self >= 0", message="replicas cannot be negative")]
    size: Int32 = 1

:func:`rules` attaches CEL rules to a whole model class (``self`` is then the object).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import core_schema as cs

__all__ = [
    "EmbeddedResource",
    "Format",
    "Int32",
    "Int64",
    "ListType",
    "MapType",
    "Nullable",
    "PreserveUnknownFields",
    "Rule",
    "rules",
]


class _Marker:
    """Adds keys to the JSON schema of the annotated type, next to any ``$ref``."""

    def extension(self) -> dict[str, Any]:
        raise NotImplementedError

    def __get_pydantic_json_schema__(
        self, core_schema: cs.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        schema = dict(handler(core_schema))
        for key, value in self.extension().items():
            if key == "x-kubernetes-validations":
                schema[key] = [*schema.get(key, []), *value]
            else:
                schema[key] = value
        return schema


@dataclass(frozen=True)
class Rule(_Marker):
    """A CEL validation rule (``x-kubernetes-validations``) checked by the API server.

    ``rule`` sees the annotated value as ``self`` (and the previous one as ``oldSelf``,
    which makes it a transition rule); ``message`` or ``message_expression`` is what the
    user gets when it is false; ``reason`` is one of ``FieldValueInvalid`` (the default),
    ``FieldValueForbidden``, ``FieldValueRequired``, ``FieldValueDuplicate``.
    """

    rule: str
    message: str | None = None
    message_expression: str | None = None
    reason: str | None = None
    field_path: str | None = None
    optional_old_self: bool | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"rule": self.rule}
        if self.message is not None:
            out["message"] = self.message
        if self.message_expression is not None:
            out["messageExpression"] = self.message_expression
        if self.reason is not None:
            out["reason"] = self.reason
        if self.field_path is not None:
            out["fieldPath"] = self.field_path
        if self.optional_old_self is not None:
            out["optionalOldSelf"] = self.optional_old_self
        return out

    def extension(self) -> dict[str, Any]:
        return {"x-kubernetes-validations": [self.to_json()]}


@dataclass(frozen=True)
class ListType(_Marker):
    """How apply and merge treat a list: ``atomic``, ``set`` or ``map`` keyed by fields."""

    kind: Literal["atomic", "set", "map"]
    keys: tuple[str, ...] = ()

    @classmethod
    def atomic(cls) -> ListType:
        """The list is replaced as a whole by whoever writes it."""
        return cls("atomic")

    @classmethod
    def set(cls) -> ListType:
        """A list of unique scalars; each writer owns the items it wrote."""
        return cls("set")

    @classmethod
    def map(cls, keys: Sequence[str]) -> ListType:
        """A list of objects identified by ``keys`` (wire names, each required or defaulted)."""
        if not keys:
            raise ValueError("ListType.map needs at least one key")
        return cls("map", tuple(keys))

    def extension(self) -> dict[str, Any]:
        out: dict[str, Any] = {"x-kubernetes-list-type": self.kind}
        if self.keys:
            out["x-kubernetes-list-map-keys"] = list(self.keys)
        return out


@dataclass(frozen=True)
class MapType(_Marker):
    """How apply treats a map or nested object: ``granular`` (per key) or ``atomic``."""

    kind: Literal["atomic", "granular"]

    @classmethod
    def atomic(cls) -> MapType:
        return cls("atomic")

    @classmethod
    def granular(cls) -> MapType:
        return cls("granular")

    def extension(self) -> dict[str, Any]:
        return {"x-kubernetes-map-type": self.kind}


@dataclass(frozen=True)
class Format(_Marker):
    """An OpenAPI ``format`` such as ``int32``, ``int64``, ``date-time``, ``byte``."""

    format: str

    def extension(self) -> dict[str, Any]:
        return {"format": self.format}


@dataclass(frozen=True)
class PreserveUnknownFields(_Marker):
    """Keep fields the schema does not describe instead of pruning them."""

    def extension(self) -> dict[str, Any]:
        return {"x-kubernetes-preserve-unknown-fields": True}


@dataclass(frozen=True)
class EmbeddedResource(_Marker):
    """The value is a whole Kubernetes object (apiVersion, kind, metadata are validated)."""

    def extension(self) -> dict[str, Any]:
        return {
            "x-kubernetes-embedded-resource": True,
            "x-kubernetes-preserve-unknown-fields": True,
        }


@dataclass(frozen=True)
class Nullable(_Marker):
    """An explicit ``null`` is a valid value (kept rather than pruned by the server)."""

    def extension(self) -> dict[str, Any]:
        return {"nullable": True}


Int32 = Annotated[int, Format("int32")]
"""An integer the CRD declares with ``format: int32``."""

Int64 = Annotated[int, Format("int64")]
"""An integer the CRD declares with ``format: int64``."""

M = TypeVar("M", bound=type[BaseModel])


def rules(*validations: Rule) -> Callable[[M], M]:
    """Class decorator: CEL rules about a whole model, with ``self`` the object."""

    def attach(cls: M) -> M:
        extra = cls.model_config.get("json_schema_extra")
        if extra is not None and not isinstance(extra, dict):
            raise TypeError(f"{cls.__name__}: json_schema_extra is not a dict; add rules there")
        merged = dict(extra or {})
        earlier = merged.get("x-kubernetes-validations", [])
        if not isinstance(earlier, list):
            raise TypeError(f"{cls.__name__}: x-kubernetes-validations in json_schema_extra "
                            "is not a list")
        merged["x-kubernetes-validations"] = [*earlier, *(r.to_json() for r in validations)]
        # own copy: the config dict may be shared with a base class
        cls.model_config = {**cls.model_config, "json_schema_extra": merged}
        cls.model_rebuild(force=True)
        return cls

    return attach

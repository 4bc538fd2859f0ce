"""The base of every typed model: camelCase on the wire, snake_case in Python, lossless.

Kubernetes objects travel as JSON with camelCase field names; Python code reads better with
snake_case attributes. :class:`Model` bridges the two with an alias generator, keeps every
field the class does not declare (``extra="allow"``) so that an object read from a newer
server is written back unchanged, and omits ``None`` fields the caller never set, so a model
built in Python serializes to what a person would write in YAML.

The wire types below (:data:`Time`, :data:`MicroTime`, :data:`IntOrString`,
:data:`Quantity`) carry the exact serialization Kubernetes uses for them.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any, Self

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    GetJsonSchemaHandler,
    PlainSerializer,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    WithJsonSchema,
    model_serializer,
)
from pydantic.alias_generators import to_camel
from pydantic.fields import FieldInfo
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import PydanticUndefined
from pydantic_core import core_schema as cs

from setpoint.resources._wire_dump import wire_dump

__all__ = ["IntOrString", "MicroTime", "Model", "Quantity", "Time"]


GENERATED_PREFIX = "setpoint.resources.models."
_ATOMS = frozenset({type(None), bool, int, float, str})
"""Types whose values ``copy.deepcopy`` returns as they are (immutable, holding nothing)."""
DEFINITION_KEY = "x-setpoint-model"


class Model(BaseModel):
    """A pydantic model that reads and writes Kubernetes JSON.

    Fields are snake_case in Python and camelCase on the wire (``ready_replicas`` ⇄
    ``readyReplicas``); both spellings are accepted on input. Fields the class does not
    declare are kept and written back as they came. ``model_dump()`` uses the wire names and
    leaves out fields that were never set and hold ``None`` or an untouched default model
    (a ``null`` the server sent is kept), so a server object reads back exactly as it was.
    """

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="allow",
        protected_namespaces=(),
        defer_build=True,
    )

    @model_serializer(mode="wrap")
    def _omit_untouched(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            fields_set = self.__pydantic_fields_set__
            for name, key, is_model in _omissible(type(self)):
                if name in fields_set or key not in data:
                    continue
                value = getattr(self, name)
                if value is None or (is_model and _pristine(value)):
                    del data[key]
            header = self._wire_header()
            if header:
                data = {**header, **data}
        return data

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> Self:
        """pydantic's deep copy; for a model holding only atoms (None, bools, numbers,
        strings) and no extra or private values, the same copy without ``copy.deepcopy``'s
        walk of its dict: pydantic copies a model default (``status: Status = Status()``)
        so at each validation that lacks the field (every new object's status), and the
        walk was as dear as the rest of the validation."""
        values = self.__dict__
        extra = self.__pydantic_extra__
        if extra or getattr(self, "__pydantic_private__", None) is not None:
            return super().__deepcopy__(memo)
        for value in values.values():
            if type(value) not in _ATOMS:
                return super().__deepcopy__(memo)
        cls = type(self)
        copied = cls.__new__(cls)
        if memo is not None:
            memo[id(self)] = copied
        # atoms are their own deep copies; the dict, the extra dict and the set are new
        object.__setattr__(copied, "__dict__", dict(values))
        object.__setattr__(copied, "__pydantic_extra__", None if extra is None else {})
        object.__setattr__(copied, "__pydantic_fields_set__", set(self.__pydantic_fields_set__))
        object.__setattr__(copied, "__pydantic_private__", None)
        return copied

    def _wire_header(self) -> dict[str, Any]:
        """Keys written before the fields (``apiVersion`` and ``kind`` of whole objects)."""
        return {}

    @classmethod
    def __get_pydantic_json_schema__(
        cls, core_schema: cs.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        if cls.__module__.startswith(GENERATED_PREFIX):
            # a built-in type: the CRD generator takes its schema from the Kubernetes
            # definitions, which know list types and formats pydantic does not
            return {DEFINITION_KEY: f"{cls.__module__}.{cls.__name__}"}
        schema = handler(core_schema)
        # extra="allow" is for lossless round trips, not a promise that any field is valid
        handler.resolve_ref_schema(schema).pop("additionalProperties", None)
        return schema

    def __repr_args__(self) -> Any:
        fields_set = self.__pydantic_fields_set__
        for name, value in super().__repr_args__():
            if value is None and name not in fields_set:
                continue
            yield name, value

    def to_dict(self) -> dict[str, Any]:
        """The JSON-compatible dict with wire names, as the API server would see it."""
        # the same dict as model_dump(mode="json", by_alias=True), in one call into
        # pydantic-core where the omit-untouched rule allows (_wire_dump)
        data = wire_dump(self, self._wire_header(), dumps_as_unset)
        return self.model_dump(mode="json", by_alias=True) if data is None else data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """The model of a JSON object read from the API server (or written as YAML)."""
        return cls.model_validate(data)


def dumps_as_unset(model: type[BaseModel], top: bool) -> bool:
    """Whether ``model``'s omit-untouched rule is pydantic's ``exclude_unset`` (``_wire_dump``).

    ``top``: ``model`` is the class dumped, not one nested in it.
    """
    # generated classes only: a hand-written one may set a field past __setattr__ (in a
    # validator or model_post_init), which exclude_unset would not see as set
    if not issubclass(model, Model) or not model.__module__.startswith(GENERATED_PREFIX) \
            or model.__pydantic_decorators__.field_serializers:
        return False
    if not top and model._wire_header is not Model._wire_header:
        return False
    for position, (name, field) in enumerate(model.model_fields.items()):
        if field.default_factory is not None:
            # Resource.metadata: written always, dumped apart (wire_dump)
            if not (top and name == "metadata" and position == 0):
                return False
        elif field.default is not PydanticUndefined and field.default is not None:
            return False
    return True


_OMISSIBLE: dict[type[BaseModel], tuple[tuple[str, str, bool], ...]] = {}


def _omissible(cls: type[BaseModel]) -> tuple[tuple[str, str, bool], ...]:
    """(python name, wire name, default is a model) of fields left out while untouched.

    Those are the fields defaulting to None and those defaulting to a model instance
    (``status: Status = Status()``): a server object without them reads back as it was.
    """
    keys = _OMISSIBLE.get(cls)
    if keys is None:
        keys = tuple(
            (name, _wire_name(cls, name, field), isinstance(field.default, BaseModel))
            for name, field in cls.model_fields.items()
            if field.default_factory is None
            and (field.default is None or isinstance(field.default, BaseModel))
        )
        _OMISSIBLE[cls] = keys
    return keys


_STATUS_CLASSES: dict[type[BaseModel], tuple[type[BaseModel], bool] | None] = {}


def status_only_dump(obj: BaseModel) -> dict[str, Any] | None:
    """``obj.model_dump(mode="json", by_alias=True, include={"status"})`` (what a status
    write sends), or None when ``obj``'s class or value is not one this shortcut knows.

    The shortcut dumps the status model alone and puts the header (``apiVersion``,
    ``kind``) before it, as ``_omit_untouched`` would: pydantic's ``model_dump`` of the
    whole object, with its ``include`` filter and a second Python-level wrap call, costs
    twice the status's own dump. It is taken only for a :class:`Model` serialized by
    ``_omit_untouched`` alone (no field serializer, no computed field), whose ``status``
    field is written as ``status``, not excluded, and annotated with the exact model class
    the value has (a subclass's value is serialized by the annotated class's schema).
    """
    cls = type(obj)
    known = _STATUS_CLASSES.get(cls, _UNKNOWN)
    if known is _UNKNOWN:
        known = _status_class(cls)
        if len(_STATUS_CLASSES) < 4096:
            _STATUS_CLASSES[cls] = known
    if known is None:
        return None
    status_cls, omissible = known
    status: Any = obj.__dict__.get("status")
    if type(status) is not status_cls:
        return None
    # _omit_untouched's rule for the one field: a model default left untouched is omitted
    if omissible and "status" not in obj.__pydantic_fields_set__ and _pristine(status):
        data: dict[str, Any] = {}
    else:
        # model_dump's own call, without its Python frame (its other arguments are
        # pydantic-core's defaults)
        data = {"status": status.__pydantic_serializer__.to_python(
            status, mode="json", by_alias=True)}
    header = obj._wire_header() if isinstance(obj, Model) else {}
    return {**header, **data} if header else data


_UNKNOWN: Any = object()


def _status_class(cls: type[BaseModel]) -> tuple[type[BaseModel], bool] | None:
    """(the ``status`` field's model class, whether an untouched default is omitted), or
    None when :func:`status_only_dump` cannot stand for ``model_dump``."""
    if not issubclass(cls, Model) or not cls.__pydantic_complete__:
        return None
    decorators = cls.__pydantic_decorators__
    serializers = decorators.model_serializers
    if decorators.field_serializers or decorators.computed_fields or list(serializers) != [
            "_omit_untouched"] or serializers["_omit_untouched"].func \
            is not Model.__pydantic_decorators__.model_serializers["_omit_untouched"].func:
        return None
    field = cls.model_fields.get("status")
    if field is None or field.exclude or _wire_name(cls, "status", field) != "status":
        return None
    annotation = field.annotation
    if not isinstance(annotation, type) or not issubclass(annotation, Model):
        return None
    omissible = any(name == "status" and is_model for name, _, is_model in _omissible(cls))
    return annotation, omissible


def _pristine(value: Any) -> bool:
    """True for a model nobody set a field of, at any depth."""
    if not isinstance(value, BaseModel):
        return False
    if value.__pydantic_fields_set__ or value.__pydantic_extra__:
        return False
    return all(
        not isinstance(v, BaseModel) or _pristine(v) for v in value.__dict__.values()
    )


def _wire_name(cls: type[BaseModel], name: str, field: FieldInfo) -> str:
    # FieldInfo of a model built only as part of another one may not have its generated
    # alias applied yet, so apply the generator here rather than trust field.alias
    if field.alias_priority == 2 and (field.serialization_alias or field.alias):
        return str(field.serialization_alias or field.alias)
    generate = cls.model_config.get("alias_generator")
    return generate(name) if callable(generate) else name


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _utc_fields(value: datetime) -> datetime | None:
    """``value``'s UTC wall time as a naive datetime for ``isoformat``, or None where
    ``isoformat`` would not write what ``strftime`` writes (a year below 1000, which
    ``%Y`` does not pad; a subclass of datetime)."""
    if type(value) is not datetime:
        return None
    if value.utcoffset():  # a naive time is taken as UTC, as _utc does
        value = value.astimezone(UTC)
    return None if value.year < 1000 else value.replace(tzinfo=None)


def format_time(value: datetime) -> str:
    """RFC 3339 in UTC with whole seconds, as ``metav1.Time`` marshals."""
    # isoformat is a third of strftime's cost and writes the same text (_utc_fields)
    fields = _utc_fields(value)
    if fields is None:
        return _utc(value).strftime("%Y-%m-%dT%H:%M:%SZ")
    return fields.isoformat(timespec="seconds") + "Z"


def format_micro_time(value: datetime) -> str:
    """RFC 3339 in UTC with six fractional digits, as ``metav1.MicroTime`` marshals."""
    fields = _utc_fields(value)
    if fields is None:
        return _utc(value).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return fields.isoformat(timespec="microseconds") + "Z"


Time = Annotated[datetime, PlainSerializer(format_time, return_type=str, when_used="json")]
"""A ``metav1.Time``: a datetime on the Python side, whole seconds in UTC on the wire."""

MicroTime = Annotated[
    datetime, PlainSerializer(format_micro_time, return_type=str, when_used="json")
]
"""A ``metav1.MicroTime``: like :data:`Time` with microseconds."""

IntOrString = Annotated[
    int | str,
    WithJsonSchema({"x-kubernetes-int-or-string": True}),
]
"""An ``intstr.IntOrString``: a port number or name, a count or a percentage."""

QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
_FLOAT_TAIL = re.compile(r"\.?0+$")


def _quantity_input(value: Any) -> Any:
    # a float is not an int-or-string; its decimal spelling is a valid quantity
    if isinstance(value, float):
        text = f"{value:.9f}"
        return _FLOAT_TAIL.sub("", text) if "." in text else text
    return value


Quantity = Annotated[
    int | str,
    BeforeValidator(_quantity_input),
    WithJsonSchema({"x-kubernetes-int-or-string": True, "pattern": QUANTITY_PATTERN}),
]
"""A ``resource.Quantity`` such as ``"500m"``, ``"1Gi"`` or ``2``, kept as written."""

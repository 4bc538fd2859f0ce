"""A compiled wire dump for models whose omit-untouched rule is pydantic's ``exclude_unset``.

:meth:`Model.to_dict` goes through ``Model._omit_untouched``, a Python wrap serializer
called once per nested model. For the generated built-in types that rule reduces to
pydantic-core's own ``exclude_unset``: when every model in the tree is a generated one
and each of its fields is required or defaults to ``None`` (no default model, no default
factory, no other default), a field left out is exactly one never set, since a ``None``
default can only change by assignment, which marks the field set. For such a tree this
module compiles the class's core schema once without the wrap serializers and dumps in
one call into pydantic-core: the same dict, in the same order, twice as cheap or more.

The one default factory allowed is a whole object's ``metadata`` (``Resource``), always
written: when never set it is dumped on its own and put back in its place, first after
``apiVersion`` and ``kind``. Any other class (hand-written ones, whose validators may
set a field without marking it, a tree nesting whole objects) keeps the Python walk. Which
classes qualify is the model base's rule (``_model.dumps_as_unset``), handed in by its caller.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel
from pydantic_core import SchemaSerializer

__all__ = ["Eligible", "wire_dump"]

_WRAP_NAME = "_omit_untouched"

# class → its compiled serializer, or None when the class must keep the Python walk
_COMPILED: dict[type[BaseModel], SchemaSerializer | None] = {}
# class → whether it has a ``metadata`` field (read once: a class attribute read on a
# pydantic class goes through its metaclass's ``__getattr__`` hook, ~700 instructions)
_HAS_METADATA: dict[type[BaseModel], bool] = {}

# whether a model class met in the tree (``top``: the one dumped) dumps as exclude_unset;
# the rule is the model base's own (``_model.dumps_as_unset``), so it is handed in
Eligible = Callable[[type[BaseModel], bool], bool]


def wire_dump(obj: BaseModel, header: dict[str, Any],
              eligible: Eligible) -> dict[str, Any] | None:
    """``obj.model_dump(mode="json", by_alias=True)`` compiled, or None when not eligible."""
    cls = type(obj)
    serializer = _COMPILED.get(cls, _missing)
    if serializer is _missing:
        if not cls.__pydantic_complete__:
            return None
        serializer = _COMPILED[cls] = _compile(cls, eligible)
        # the class's fields as model_fields gives them, without its per-read descriptor
        _HAS_METADATA[cls] = "metadata" in cls.__pydantic_fields__
    if serializer is None:
        return None
    data = serializer.to_python(obj, mode="json", by_alias=True, exclude_unset=True)
    if _HAS_METADATA[cls] and "metadata" not in obj.__pydantic_fields_set__:
        # a default factory's value is written even when never set (see _model.dumps_as_unset)
        metadata = obj.__dict__.get("metadata")
        inner = None if metadata is None else wire_dump(metadata, {}, eligible)
        if inner is None:
            return None
        return {**header, "metadata": inner, **data}
    return {**header, **data} if header else data


_missing: Any = object()


def _compile(cls: type[BaseModel], eligible: Eligible) -> SchemaSerializer | None:
    found: set[type[BaseModel]] = set()
    try:
        schema = _strip(cls.__pydantic_core_schema__, found)
    except _NotEligible:
        return None
    if not all(eligible(model, model is cls) for model in found):
        return None
    try:
        return SchemaSerializer(schema)
    except Exception:  # a schema pydantic-core will not compile apart: keep the walk
        return None


class _NotEligible(Exception):
    pass


def _strip(schema: Any, found: set[type[BaseModel]]) -> Any:
    """A copy of a core schema without the omit-untouched wrap serializers; the model
    classes met are added to ``found``. Any other model-level serializer is not
    eligible."""
    if isinstance(schema, list):
        return [_strip(item, found) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if schema.get("type") == "model":
        model = schema.get("cls")
        serialization = schema.get("serialization")
        if not isinstance(model, type) or not issubclass(model, BaseModel) or not (
            isinstance(serialization, dict)
            and getattr(serialization.get("function"), "__name__", None) == _WRAP_NAME
        ):
            raise _NotEligible
        found.add(model)
        return {k: _strip(v, found) for k, v in schema.items() if k != "serialization"}
    return {k: _strip(v, found) for k, v in schema.items()}

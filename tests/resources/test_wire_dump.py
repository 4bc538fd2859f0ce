"""The compiled wire dump (``_wire_dump``) writes the bytes the Python walk writes.

``Model.to_dict`` dumps generated models in one call into pydantic-core instead of the
``_omit_untouched`` wrap serializer; these tests compare its bytes with ``model_dump`` (the
walk) over a sample object of every generated resource kind, read from the wire (every
field set, server nulls, unknown fields) and built in Python (some fields set, nested
objects changed after construction).
"""

from __future__ import annotations

import importlib
import pkgutil
import types
import typing
from datetime import datetime
from typing import Any

import orjson
import pytest
from pydantic import BaseModel

import setpoint.resources.models as generated
from setpoint.resources import Model, Resource
from setpoint.resources._model import dumps_as_unset
from setpoint.resources._wire_dump import wire_dump
from setpoint.resources.models import ConfigMap, ObjectMeta

# kinds that must take the compiled path (one nesting another whole object, as a
# StatefulSet's volumeClaimTemplates, keeps the walk, whose nested objects get a header)
FAST_KINDS = {"ConfigMap", "Secret", "Pod", "Deployment", "Service", "Lease", "Event"}
DEPTH = 4  # enough for every kind's shape; JSONSchemaProps nests without end


def _resource_classes() -> list[type[Resource]]:
    classes: dict[str, type[Resource]] = {}
    for info in pkgutil.iter_modules(generated.__path__):
        module = importlib.import_module(f"{generated.__name__}.{info.name}")
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, Resource) \
                    and value.__module__ == module.__name__:
                classes[f"{module.__name__}.{value.__name__}"] = value
    return [classes[name] for name in sorted(classes)]


def _sample(annotation: Any, depth: int) -> Any:
    """A wire value of ``annotation`` (every field of every nested model set)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _sample(typing.get_args(annotation)[0], depth)
    if origin in (typing.Union, types.UnionType):
        return _sample(next(a for a in typing.get_args(annotation) if a is not type(None)),
                       depth)
    if origin is list:
        return [_sample(typing.get_args(annotation)[0], depth)]
    if origin is dict:
        return {"k": _sample(typing.get_args(annotation)[1], depth)}
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if depth == 0:
            return {}
        annotation.model_rebuild()  # deferred: resolve its fields' forward references
        return {
            (field.alias or name): _sample(field.annotation, depth - 1)
            for name, field in annotation.model_fields.items()
        }
    if annotation is datetime:
        return "2026-01-02T03:04:05Z"
    if annotation is bool:
        return True
    if annotation is int:
        return 7
    if annotation is float:
        return 1.5
    if annotation is str:
        return "s"
    return {"any": [1, "two", None]}


def _walked(obj: Model) -> bytes:
    return orjson.dumps(obj.model_dump(mode="json", by_alias=True))


@pytest.mark.parametrize("cls", _resource_classes(), ids=lambda c: f"{c.api_version}/{c.kind}")
def test_every_generated_kind_dumps_compiled_to_the_walks_bytes(cls: type[Resource]) -> None:
    cls.model_rebuild()
    full = {"apiVersion": cls.api_version, "kind": cls.kind, "unknownField": {"x": 1},
            **{(f.alias or n): _sample(f.annotation, DEPTH)
               for n, f in cls.model_fields.items()}}
    full["metadata"] = {**full["metadata"], "deletionTimestamp": None}  # a server null
    read = cls.model_validate(full)
    if cls.kind in FAST_KINDS:
        # the fast path was taken
        assert wire_dump(read, read._wire_header(), dumps_as_unset) is not None
    assert orjson.dumps(read.to_dict()) == _walked(read)

    built = cls(name="n", namespace="ns")
    assert orjson.dumps(built.to_dict()) == _walked(built)
    # metadata never set: written anyway, in its place before the other fields
    untouched = cls.model_validate({k: v for k, v in full.items() if k != "metadata"})
    untouched.metadata.labels = {"a": "b"}
    assert orjson.dumps(untouched.to_dict()) == _walked(untouched)


def test_a_changed_nested_object_and_explicit_nulls_dump_alike() -> None:
    cm = ConfigMap.model_validate({"metadata": {"name": "a", "ownerReferences": [
        {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u"}]}})
    assert cm.metadata.owner_references is not None
    cm.metadata.owner_references[0].controller = True
    cm.data = None
    cm.metadata.creation_timestamp = datetime(2026, 1, 2, 3, 4, 5, 678)
    assert orjson.dumps(cm.to_dict()) == _walked(cm)
    assert cm.to_dict()["data"] is None
    assert cm.to_dict()["metadata"]["creationTimestamp"] == "2026-01-02T03:04:05Z"
    meta = ObjectMeta.model_construct(name="c")
    assert orjson.dumps(meta.to_dict()) == _walked(meta)


class _Spec(Model):
    size: int = 1


class _Custom(Resource):
    api_version = "example.setpoint.dev/v1"
    kind = "Custom"
    plural = "customs"
    namespaced = True
    spec: _Spec = _Spec()


def test_a_class_with_other_defaults_keeps_the_walk() -> None:
    obj = _Custom(name="c")
    assert wire_dump(obj, obj._wire_header(), dumps_as_unset) is None
    assert obj.to_dict() == {"apiVersion": "example.setpoint.dev/v1", "kind": "Custom",
                             "metadata": {"name": "c"}}
    obj.spec.size = 2
    assert obj.to_dict()["spec"] == {"size": 2}


def test_times_are_written_as_strftime_writes_them() -> None:
    """``format_time``/``format_micro_time`` write with ``isoformat`` where it gives
    ``strftime``'s text (metav1.Time: whole seconds in UTC, "2006-01-02T15:04:05Z07:00";
    MicroTime six digits: k8s.io/apimachinery/pkg/apis/meta/v1/time.go, micro_time.go):
    naive times as UTC, other offsets converted, fractions cut, not rounded, and the
    years below 1000 that ``%Y`` leaves unpadded."""
    from datetime import UTC, timedelta, timezone

    from pydantic_core import TzInfo

    from setpoint.resources._model import format_micro_time, format_time

    def strftime(value: datetime, fmt: str) -> str:
        utc = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
        return utc.strftime(fmt)

    zones = [None, UTC, TzInfo(0), TzInfo(3600), timezone(timedelta(hours=-5, minutes=-30))]
    moments = [datetime(2026, 11, 26, 19, 21, 2), datetime(2026, 12, 31, 23, 59, 59, 999_999),
               datetime(1970, 1, 1), datetime(999, 5, 6, 7, 8, 9, 10),
               datetime(1000, 1, 1, 0, 30), datetime(9999, 12, 31, 20, 0, 0, 5)]
    for moment in moments:
        for zone in zones:
            value = moment.replace(tzinfo=zone)
            if zone is not None and moment.year == 9999 and zone.utcoffset(None):
                continue  # past datetime.max in UTC either way
            assert format_time(value) == strftime(value, "%Y-%m-%dT%H:%M:%SZ"), value
            assert format_micro_time(value) == strftime(value, "%Y-%m-%dT%H:%M:%S.%fZ"), value


class _Filled(Model):
    name: str | None = None

    def model_post_init(self, context: Any, /) -> None:
        # set past __setattr__: the field stays unmarked, as exclude_unset would see it
        object.__setattr__(self, "name", self.name or "filled")


def test_a_hand_written_class_keeps_the_walk() -> None:
    """Only generated classes are dumped compiled: a hand-written one may set a field
    without marking it set, which the walk writes (not None) and exclude_unset drops."""
    obj = _Filled()
    assert wire_dump(obj, {}, dumps_as_unset) is None
    assert obj.to_dict() == {"name": "filled"}

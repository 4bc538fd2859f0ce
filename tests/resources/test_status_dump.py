"""A status write's body (``with_status_only``) is the dump pydantic's ``include`` gives.

``status_only_dump`` dumps a typed object's status model alone under its header instead of
``model_dump(mode="json", by_alias=True, include={"status"})`` (issue 12, fifteenth pass);
these tests compare the two, keys and their order, over the cases the omit-untouched rule
tells apart, and over classes the shortcut must leave to ``model_dump``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
import pytest
from pydantic import Field, field_serializer

from examples.widget.api import Widget, WidgetSpec, WidgetStatus
from setpoint.resources import CustomResource, Model
from setpoint.resources._model import status_only_dump
from setpoint.resources.models import Deployment
from setpoint.runtime._objects import with_status_only


class TaggedStatus(WidgetStatus):
    """A subclass of the annotated status class (pydantic dumps it by the annotation)."""

    tag: str = "t"


class Serialized(CustomResource, group="test.setpoint.dev", version="v1"):
    """A status with a field serializer of the parent's: the shortcut must not be taken."""

    status: WidgetStatus = WidgetStatus()

    @field_serializer("status")
    def _status(self, value: WidgetStatus) -> dict[str, Any]:
        return {"serialized": True}


class Aliased(CustomResource, group="test.setpoint.dev", version="v1"):
    """A status written under another name."""

    status: WidgetStatus = Field(WidgetStatus(), serialization_alias="state")


class OptionalStatus(CustomResource, group="test.setpoint.dev", version="v1"):
    status: WidgetStatus | None = None


def _wire(ready: bool | None = True) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "bench.setpoint.dev/v1", "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default", "uid": "u", "generation": 3,
                     "resourceVersion": "7"},
        "spec": {"size": 2, "message": "hi"}}
    if ready is not None:
        body["status"] = {"ready": ready, "observedGeneration": 2, "unknown": {"x": [1]}}
    return body


def _changed_in_place() -> Widget:
    widget = Widget.model_validate(_wire(ready=None))
    widget.status.ready = True
    widget.status.observed_generation = widget.metadata.generation
    return widget


def _assigned_default() -> Widget:
    widget = Widget(name="w", spec=WidgetSpec())
    widget.status = WidgetStatus()
    return widget


CASES: dict[str, Callable[[], Model]] = {
    "read from the wire": lambda: Widget.model_validate(_wire()),
    "read without a status": lambda: Widget.model_validate(_wire(ready=None)),
    "wire status of defaults": lambda: Widget.model_validate(
        {**_wire(), "status": {}}),
    "changed in place": _changed_in_place,
    "built, status untouched": lambda: Widget(name="w", spec=WidgetSpec(size=3)),
    "built with a status": lambda: Widget(name="w", spec=WidgetSpec(),
                                          status=WidgetStatus(ready=False)),
    "default status assigned": _assigned_default,
    "a subclass's status": lambda: Widget(name="w", spec=WidgetSpec(),
                                          status=TaggedStatus(ready=True)),
    "field serializer": lambda: Serialized(name="s", status=WidgetStatus(ready=True)),
    "serialization alias": lambda: Aliased(name="a", status=WidgetStatus(ready=True)),
    "optional status, none": lambda: OptionalStatus(name="o"),
    "optional status, set": lambda: OptionalStatus(name="o", status=WidgetStatus()),
    "a built-in kind": lambda: Deployment.model_validate(
        {"metadata": {"name": "d"}, "status": {"replicas": 2, "conditions": [
            {"type": "Available", "status": "True",
             "lastTransitionTime": "2026-01-02T03:04:05Z"}]}}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_status_body_is_the_include_dump_key_for_key(case: str) -> None:
    obj = CASES[case]()
    expected = obj.model_dump(mode="json", by_alias=True, include={"status"})
    got = with_status_only(obj)
    # the same keys in the same order, values included (orjson keeps the order)
    assert orjson.dumps(got) == orjson.dumps(expected)


def test_the_shortcut_is_taken_for_a_plain_status_and_refused_otherwise() -> None:
    assert status_only_dump(Widget.model_validate(_wire())) is not None
    assert status_only_dump(_changed_in_place()) is not None
    refused = [name for name in ("a subclass's status", "field serializer",
                                 "serialization alias", "optional status, set")
               if status_only_dump(CASES[name]()) is None]
    assert refused == ["a subclass's status", "field serializer", "serialization alias",
                       "optional status, set"]


def test_a_status_dump_is_a_new_dict_each_time() -> None:
    widget = Widget.model_validate(_wire())
    first = with_status_only(widget)
    first["status"]["ready"] = False
    assert with_status_only(widget)["status"]["ready"] is True


def test_a_plain_model_without_a_header_is_dumped_as_before() -> None:
    class Holder(Model):
        status: WidgetStatus = WidgetStatus()

    holder = Holder(status=WidgetStatus(ready=True))
    assert status_only_dump(holder) == holder.model_dump(
        mode="json", by_alias=True, include={"status"})

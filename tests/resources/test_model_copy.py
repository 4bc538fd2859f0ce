"""``Model``'s deep copy is pydantic's, also where it skips ``copy.deepcopy``'s walk.

pydantic deep-copies a model default (``status: Status = Status()``) at each validation
that lacks the field; ``Model.__deepcopy__`` copies a model holding only atoms without the
walk (issue 12, fifteenth pass). These tests compare it with ``BaseModel.__deepcopy__``
field for field, and check that no copy shares anything mutable with its original.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel, PrivateAttr

from examples.widget.api import Widget, WidgetSpec, WidgetStatus
from setpoint.resources import Model


class Atoms(Model):
    flag: bool = False
    count: int | None = None
    ratio: float = 0.5
    text: str = ""


class Nested(Model):
    inner: Atoms = Atoms()
    items: list[int] = []


class Private(Model):
    value: int = 1
    _cache: dict[str, Any] = PrivateAttr(default_factory=dict)


def _state(model: BaseModel) -> tuple[Any, ...]:
    return (type(model), model.__dict__, model.__pydantic_extra__,
            model.__pydantic_fields_set__, getattr(model, "__pydantic_private__", None))


CASES: dict[str, Callable[[], BaseModel]] = {
    "pristine atoms": Atoms,
    "atoms set": lambda: Atoms(flag=True, count=3, text="x"),
    "atoms with extras": lambda: Atoms.model_validate({"flag": True, "other": {"a": [1]}}),
    "widget status": WidgetStatus,
    "a nested model": lambda: Nested(items=[1, 2]),
    "private attributes": lambda: Private(value=2),
    "a whole object": lambda: Widget(name="w", spec=WidgetSpec(message="m")),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_deep_copy_is_pydantics_and_shares_nothing_mutable(case: str) -> None:
    original = CASES[case]()
    ours = copy.deepcopy(original)
    theirs = BaseModel.__deepcopy__(original, {})
    assert _state(ours) == _state(theirs)
    assert ours == original
    assert ours.__dict__ is not original.__dict__
    assert ours.__pydantic_fields_set__ is not original.__pydantic_fields_set__
    if original.__pydantic_extra__ is not None:
        assert ours.__pydantic_extra__ is not original.__pydantic_extra__
    for name, value in original.__dict__.items():
        if isinstance(value, list | dict | BaseModel):
            assert ours.__dict__[name] is not value, name


def test_a_copy_in_a_memo_is_the_one_object_copied_twice() -> None:
    status = WidgetStatus(ready=True)
    pair = copy.deepcopy([status, status])
    assert pair[0] is pair[1]
    assert pair[0] is not status and pair[0] == status


def test_a_validated_default_is_a_copy_of_its_own() -> None:
    first = Widget.model_validate({"metadata": {"name": "a"}, "spec": {}})
    second = Widget.model_validate({"metadata": {"name": "b"}, "spec": {}})
    first.status.ready = True
    assert second.status.ready is False
    assert Widget.model_fields["status"].default.ready is False
    # untouched, it is still left out of the dump (the omit-untouched rule)
    assert "status" not in second.model_dump(mode="json", by_alias=True)
    assert first.model_dump(mode="json", by_alias=True)["status"] == {"ready": True}

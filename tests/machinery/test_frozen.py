"""`quick_init`: a frozen dataclass made faster keeps every behaviour the dataclass gave it."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest

from setpoint.machinery.frozen import quick_init


@dataclasses.dataclass(frozen=True, slots=True)
class Plain:
    method: str
    code: int | None
    error: str | None = None
    attempt: int = 0


@quick_init
@dataclasses.dataclass(frozen=True, slots=True)
class Quick:
    method: str
    code: int | None
    error: str | None = None
    attempt: int = 0


def test_the_faster_init_makes_the_same_instance() -> None:
    # the slots' own setters, not object.__setattr__
    assert "_set_method" in Quick.__init__.__code__.co_names
    assert "_set_method" not in Plain.__init__.__code__.co_names
    cases: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
        (("GET", 200), {}), (("PUT", None, "x", 3), {}),
        (("GET",), {"code": 1, "attempt": 2}),
        ((), {"method": "P", "code": 5, "error": "e"})]
    for args, kwargs in cases:
        quick, plain = Quick(*args, **kwargs), Plain(*args, **kwargs)
        assert dataclasses.astuple(quick) == dataclasses.astuple(plain)
        assert repr(quick).replace("Quick", "Plain") == repr(plain)
        assert hash(quick) == hash(Quick(*args, **kwargs))
        assert quick == Quick(*args, **kwargs)
        assert quick != Quick("other", 0)


def test_it_stays_frozen_and_replaceable() -> None:
    quick = Quick("GET", 200)
    with pytest.raises(dataclasses.FrozenInstanceError):
        quick.code = 404  # type: ignore[misc]
    assert dataclasses.replace(quick, code=404).code == 404
    assert quick.code == 200


def test_its_signature_and_errors_are_the_dataclass_ones() -> None:
    assert str(inspect.signature(Quick)) == str(inspect.signature(Plain))
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'code'"):
        Quick("GET")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'nope'"):
        Quick("GET", 1, nope=2)  # type: ignore[call-arg]


def test_classes_it_cannot_keep_the_same_are_left_alone() -> None:
    @dataclasses.dataclass(frozen=True, slots=True)
    class Initialized:
        value: int
        scale: dataclasses.InitVar[int] = 1

        def __post_init__(self, scale: int) -> None:
            object.__setattr__(self, "value", self.value * scale)

    @dataclasses.dataclass(frozen=True, slots=True)
    class Listed:
        items: list[int] = dataclasses.field(default_factory=list)

    @dataclasses.dataclass(slots=True)
    class Mutable:
        value: int

    @dataclasses.dataclass(frozen=True)
    class Unslotted:
        value: int

    for cls in (Initialized, Listed, Mutable, Unslotted):
        init = cls.__init__
        assert quick_init(cls) is cls
        assert cls.__init__ is init
    assert Initialized(2, 3).value == 6


def test_a_post_init_still_checks_each_instance() -> None:
    @quick_init
    @dataclasses.dataclass(frozen=True, slots=True)
    class Checked:
        value: int = 0

        def __post_init__(self) -> None:
            if self.value < 0:
                raise ValueError("negative")

    assert Checked(3).value == 3
    with pytest.raises(ValueError, match="negative"):
        Checked(-1)

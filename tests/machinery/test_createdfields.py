"""A create's ``fieldsV1`` remembered by the object's shape is what the walk gives.

``createdfields.remembered_created_fields_v1`` keeps ``fieldcompare.created_fields_v1``'s
answer per shape of the new object (map keys, scalar types and truthiness, lists whole).
The field manager's answer (k8s.io/apiserver/pkg/endpoints/handlers/fieldmanager, over
structured-merge-diff's ``Updater.Update``) depends on the values only where they equal the
zero value's or key a list, so every object below, remembered or not, must get the walk's
own answer, key order included; the walk itself is held to the general path by
``test_fieldcompare.py``.
"""

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from setpoint.machinery import createdfields as cf
from setpoint.machinery import fieldcompare as fc
from setpoint.machinery import managedfields as mf
from setpoint.machinery.typedvalue import SchemaError
from tests.machinery.test_fieldcompare import (
    CASES,
    IGNORED,
    POD,
    _created,
    needs_corpus,
)


def _answer(f: Callable[..., Any], schema: Any, zero: Any, new: Any, ignored: Any) -> str:
    try:
        return json.dumps(f(schema, zero, new, ignored, mf.STRIPPED_FIELDS))
    except SchemaError:
        return "SchemaError"


def _scalars(v: Any, change: Callable[[Any], Any]) -> Any:
    """``v`` with every scalar outside lists changed (lists are remembered whole)."""
    if isinstance(v, dict):
        return {k: _scalars(x, change) for k, x in v.items()}
    if isinstance(v, list):
        return v
    return change(v)


def _other(v: Any) -> Any:  # the same truthiness, another value
    if isinstance(v, bool):
        return v
    if isinstance(v, str):
        return v + "-other" if v else v
    if isinstance(v, int | float):
        return v * 3 + (1 if v > 0 else -1 if v < 0 else 0)
    return v


def _zeroed(v: Any) -> Any:  # the zero value of the scalar's type
    return type(v)() if isinstance(v, str | int | float | bool) else v


def _truthy(v: Any) -> Any:
    if isinstance(v, bool):
        return True
    if isinstance(v, str):
        return v or "x"
    if isinstance(v, int | float):
        return v or 5
    return v


def _check(schema: Any, zero: Any, new: Any) -> None:
    for ignored in IGNORED:
        for variant in (new, _scalars(new, _other), _scalars(new, _zeroed),
                        _scalars(new, _truthy), new):
            assert _answer(cf.remembered_created_fields_v1, schema, zero, variant, ignored) \
                == _answer(fc.created_fields_v1, schema, zero, variant, ignored), variant


@needs_corpus
def test_recorded_objects_remembered_by_shape() -> None:
    """Every recorded built-in object, then the same shape with other values, the values
    zeroed (equal to the Go zero value's where it has one) and made non-zero."""
    checked = 0
    for schema, new in _created():
        _check(schema, mf._zero_for_compare(schema, new), new)
        checked += 1
    assert checked > 100, checked


@pytest.mark.parametrize("case", range(len(CASES)))
def test_edge_cases_remembered(case: int) -> None:
    """Keyed lists, sets, nulls, untypable objects (the SchemaError each time), deduced
    types; a custom resource's zero (its apiVersion and kind) is never remembered from."""
    schema, zero, new = CASES[case]
    _check(schema, zero, new)


def test_answer_is_a_new_dict_each_time() -> None:
    """The answer goes into the stored object: changing one must not change the next."""
    zero = mf._zero_for_compare(POD, {})
    new = {"metadata": {"labels": {"a": "b"}}, "spec": {"nodeName": "n"}}
    first = cf.remembered_created_fields_v1(POD, zero, new, IGNORED[0], mf.STRIPPED_FIELDS)
    expected = copy.deepcopy(first)
    first["f:spec"]["f:changed"] = {}
    again = cf.remembered_created_fields_v1(POD, zero, new, IGNORED[0], mf.STRIPPED_FIELDS)
    assert again == expected
    again.clear()
    assert cf.remembered_created_fields_v1(
        POD, zero, new, IGNORED[0], mf.STRIPPED_FIELDS) == expected


def test_values_json_cannot_tell_apart_are_not_remembered() -> None:
    """A NaN (YAML's .nan) and null encode alike; a set holding either is walked anew."""
    zero = mf._zero_for_compare(POD, {})
    for finalizers in ([None], [float("nan")], [None], [float("nan")]):
        new = {"metadata": {"finalizers": finalizers}}
        assert _answer(cf.remembered_created_fields_v1, POD, zero, new, IGNORED[0]) == \
            _answer(fc.created_fields_v1, POD, zero, new, IGNORED[0])

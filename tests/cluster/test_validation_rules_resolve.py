"""Every validator that ``registry/validation.py`` names by module and function (imported
on its first call, off the server's start) resolves to a function: a rename fails here,
not at a kind's first write."""

from __future__ import annotations

from importlib import import_module
from typing import Any

from setpoint.cluster.registry import validation


def _rules() -> list[Any]:
    found: list[Any] = []
    for value in vars(validation).values():
        candidates = value.values() if isinstance(value, dict) else [value]
        found += [c for c in candidates if isinstance(c, validation._Rule)]
    return found


def test_every_lazily_named_validator_resolves_to_a_function() -> None:
    rules = _rules()
    assert len(rules) > 20
    for rule in rules:
        assert callable(getattr(import_module(rule._module), rule._name)), (
            rule._module, rule._name)

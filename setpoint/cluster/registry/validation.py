"""Validation of built-in kinds beyond the schema (the apiserver's ValidateX functions)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from setpoint.machinery.errors import Cause

if TYPE_CHECKING:
    from setpoint.cluster.registry.types import ResourceType

Obj = dict[str, Any]

VALIDATORS: dict[tuple[str, str], Callable[[Obj], list[Cause]]] = {}
UPDATE_VALIDATORS: dict[tuple[str, str], Callable[[Obj, Obj], list[Cause]]] = {}


def validate(rt: ResourceType, obj: Obj) -> list[Cause]:
    fn = VALIDATORS.get((rt.group, rt.kind))
    return fn(obj) if fn is not None else []


def validate_update(rt: ResourceType, new: Obj, old: Obj) -> list[Cause]:
    fn = UPDATE_VALIDATORS.get((rt.group, rt.kind))
    causes = fn(new, old) if fn is not None else []
    return causes + validate(rt, new)

"""Built-in defaults that clients rely on (the apiserver's SetDefaults_* functions)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from setpoint.cluster.registry.types import ResourceType

Obj = dict[str, Any]
Defaulter = Callable[[Obj], None]

DEFAULTERS: dict[tuple[str, str], Defaulter] = {}

# Kinds whose strategy replaces status with an empty one on create.
STATUS_RESET_ON_CREATE: set[tuple[str, str]] = {
    ("apps", "Deployment"), ("apps", "ReplicaSet"), ("apps", "StatefulSet"),
    ("apps", "DaemonSet"), ("batch", "Job"), ("policy", "PodDisruptionBudget"),
}


def reset_status_on_create(rt: ResourceType, obj: Obj) -> None:
    if rt.is_custom:
        if rt.has_status:
            obj.pop("status", None)
    elif (rt.group, rt.kind) in STATUS_RESET_ON_CREATE:
        obj["status"] = {}


def apply_defaults(rt: ResourceType, obj: Obj) -> None:
    fn = DEFAULTERS.get((rt.group, rt.kind))
    if fn is not None:
        fn(obj)

"""Validation of node.k8s.io RuntimeClasses (``pkg/apis/node/validation/validation.go``) as
``pkg/registry/node/runtimeclass/strategy.go`` calls it: ``ValidateRuntimeClass`` on create,
and on update ``ValidateRuntimeClass`` then ``ValidateRuntimeClassUpdate`` (the handler is
fixed)."""

from __future__ import annotations

from typing import Any

from setpoint.cluster.registry.validation_containers import validate_resource_requirements
from setpoint.cluster.registry.validation_scheduling import validate_tolerations
from setpoint.machinery import fielderrors as fe
from setpoint.machinery import names
from setpoint.machinery.errors import Cause
from setpoint.machinery.objects import Obj


def _scheduling(scheduling: Any) -> list[Cause]:
    """``validateScheduling``: the node selector as labels, then the tolerations."""
    if not isinstance(scheduling, dict):
        return []
    causes: list[Cause] = []
    if scheduling.get("nodeSelector") is not None:
        causes.extend(names.validate_labels(scheduling["nodeSelector"],
                                            "scheduling.nodeSelector"))
    causes.extend(validate_tolerations(scheduling.get("tolerations"), "scheduling.tolerations"))
    return causes


def validate_runtime_class(obj: Obj) -> list[Cause]:
    handler = obj.get("handler")
    handler = handler if isinstance(handler, str) else ""
    causes = [fe.invalid("handler", handler, m) for m in names.name_is_dns_label(handler, False)]
    overhead = obj.get("overhead")
    if isinstance(overhead, dict):
        # validateOverhead reuses ValidateResourceRequirements on {Limits: podFixed}
        causes.extend(validate_resource_requirements(
            {"limits": overhead.get("podFixed") or {}}, "overhead"))
    causes.extend(_scheduling(obj.get("scheduling")))
    return causes


def validate_runtime_class_update(new: Obj, old: Obj) -> list[Cause]:
    causes = validate_runtime_class(new)
    if (new.get("handler") or "") != (old.get("handler") or ""):
        causes.append(fe.invalid("handler", new.get("handler") or "", "field is immutable"))
    return causes

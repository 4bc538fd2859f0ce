"""Validation of PodDisruptionBudgets, after kubernetes v1.32
pkg/apis/policy/validation/validation.go ``ValidatePodDisruptionBudgetSpec``: one of
minAvailable / maxUnavailable, each a non-negative int or a percentage up to 100%, a valid
selector, a known unhealthyPodEvictionPolicy. (Its update validation is the same: the spec
has been mutable since 1.15.)"""

from __future__ import annotations

from typing import Any

from setpoint.cluster.registry.validation_workloads import (
    not_more_than_100_percent,
    positive_int_or_percent,
)
from setpoint.machinery import fielderrors as fe
from setpoint.machinery import labels
from setpoint.machinery.errors import Cause
from setpoint.machinery.objects import Obj

UNHEALTHY_POD_EVICTION_POLICIES = ("AlwaysAllow", "IfHealthyBudget")


def _pointer(type_name: str, value: Any) -> str:
    # (Go prints a pointer's address, which no client can expect; a fixed one stands in)
    return f"({type_name})(0xc000000000)" if value is not None else f"({type_name})(nil)"


def _go_spec(spec: Obj) -> fe.GoValue:
    """``%#v`` of a ``policy.PodDisruptionBudgetSpec``."""
    return fe.GoValue(
        "policy.PodDisruptionBudgetSpec{"
        f"MinAvailable:{_pointer('*intstr.IntOrString', spec.get('minAvailable'))}, "
        f"Selector:{_pointer('*v1.LabelSelector', spec.get('selector'))}, "
        f"MaxUnavailable:{_pointer('*intstr.IntOrString', spec.get('maxUnavailable'))}, "
        "UnhealthyPodEvictionPolicy:" + _pointer("*policy.UnhealthyPodEvictionPolicyType",
                                                 spec.get("unhealthyPodEvictionPolicy")) + "}")


def validate_pod_disruption_budget(obj: Obj) -> list[Cause]:
    spec = obj.get("spec") or {}
    causes: list[Cause] = []
    if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
        causes.append(fe.invalid("spec", _go_spec(spec),
                                 "minAvailable and maxUnavailable cannot be both set"))
    for key in ("minAvailable", "maxUnavailable"):
        if spec.get(key) is not None:
            causes.extend(positive_int_or_percent(spec[key], f"spec.{key}"))
            causes.extend(not_more_than_100_percent(spec[key], f"spec.{key}"))
    if spec.get("selector") is not None:
        causes.extend(labels.validate_label_selector(spec["selector"], "spec.selector"))
    policy = spec.get("unhealthyPodEvictionPolicy")
    if policy is not None and policy not in UNHEALTHY_POD_EVICTION_POLICIES:
        causes.append(fe.not_supported("spec.unhealthyPodEvictionPolicy", policy,
                                       UNHEALTHY_POD_EVICTION_POLICIES))
    return causes

"""Validation of HorizontalPodAutoscalers, after kubernetes v1.32
pkg/apis/autoscaling/validation/validation.go (``ValidateHorizontalPodAutoscaler``,
``ValidateHorizontalPodAutoscalerUpdate``, ``validateMetrics``, ``validateMetricSpec``,
``validateBehavior``, ``validateScalingRules``, ``validateScalingPolicy``,
``validateMetricTarget``). Go validates the internal (v2-shaped) object: an autoscaling/v1
``targetCPUUtilizationPercentage`` is the first metric's resource target there, and is
reported at that path."""

from __future__ import annotations

from typing import Any

from setpoint.machinery import fielderrors as fe
from setpoint.machinery import names
from setpoint.machinery.errors import Cause
from setpoint.machinery.objects import Obj
from setpoint.machinery.quantity import try_from_json

MAX_PERIOD_SECONDS = 1800
MAX_STABILIZATION_WINDOW_SECONDS = 3600
SELECT_POLICIES = ("Disabled", "Max", "Min")
POLICY_TYPES = ("Percent", "Pods")
METRIC_SOURCE_TYPES = ("ContainerResource", "External", "Object", "Pods", "Resource")
_SOURCE_FIELDS = (("Object", "object"), ("External", "external"), ("Pods", "pods"),
                  ("Resource", "resource"), ("ContainerResource", "containerResource"))
_POPULATE = "must populate information for the given metric source"


def _path_segment(value: Any, path: str) -> list[Cause]:
    """``IsValidPathSegmentName`` of a required name."""
    if not value:
        return [fe.required(path)]
    return [fe.invalid(path, value, m)
            for m in names.validate_path_segment_name(str(value), False)]


def cross_version_object_reference(ref: Any, path: str) -> list[Cause]:
    """``ValidateCrossVersionObjectReference``."""
    ref = ref if isinstance(ref, dict) else {}
    return (_path_segment(ref.get("kind"), f"{path}.kind")
            + _path_segment(ref.get("name"), f"{path}.name"))


def _positive_quantity(target: Obj, key: str, path: str) -> list[Cause]:
    if target.get(key) is None:
        return []
    quantity = try_from_json(target[key])
    if quantity is None:
        return []  # (the decoder refuses a malformed quantity first)
    if quantity.sign() != 1:
        return [fe.invalid(f"{path}.{key}", str(quantity), "must be positive")]
    return []


def _metric_target(target: Obj, path: str) -> list[Cause]:
    """``validateMetricTarget``."""
    causes: list[Cause] = []
    kind = target.get("type") or ""
    if not kind:
        causes.append(fe.required(f"{path}.type", "must specify a metric target type"))
    if kind not in ("Utilization", "Value", "AverageValue"):
        causes.append(fe.invalid(f"{path}.type", kind,
                                 "must be either Utilization, Value, or AverageValue"))
    causes.extend(_positive_quantity(target, "value", path))
    causes.extend(_positive_quantity(target, "averageValue", path))
    utilization = target.get("averageUtilization")
    if isinstance(utilization, int) and utilization < 1:
        causes.append(fe.invalid(f"{path}.averageUtilization", utilization,
                                 "must be greater than 0"))
    return causes


def _metric_name(metric: Any, path: str) -> list[Cause]:
    """``validateMetricIdentifier``."""
    name = (metric if isinstance(metric, dict) else {}).get("name")
    if not name:
        return [fe.required(f"{path}.name", "must specify a metric name")]
    return [fe.invalid(f"{path}.name", name, m)
            for m in names.validate_path_segment_name(str(name), False)]


def _utilization_or_value(target: Obj, tpath: str) -> list[Cause]:
    if target.get("averageUtilization") is None and target.get("averageValue") is None:
        return [fe.required(f"{tpath}.averageUtilization",
                            "must set either a target raw value or a target utilization")]
    if target.get("averageUtilization") is not None and target.get("averageValue") is not None:
        return [fe.forbidden(f"{tpath}.averageValue",
                             "may not set both a target raw value and a target utilization")]
    return []


def _source(kind: str, src: Obj, path: str) -> list[Cause]:
    """``validateObjectSource`` and its siblings."""
    raw_target = src.get("target")
    target: Obj = raw_target if isinstance(raw_target, dict) else {}
    tpath = f"{path}.target"
    causes: list[Cause] = []
    if kind == "Object":
        causes.extend(cross_version_object_reference(src.get("describedObject"),
                                                     f"{path}.describedObject"))
    if kind in ("Object", "External", "Pods"):
        causes.extend(_metric_name(src.get("metric"), f"{path}.metric"))
    if kind == "Resource" and not src.get("name"):
        causes.append(fe.required(f"{path}.name", "must specify a resource name"))
    if kind == "ContainerResource":
        if not src.get("name"):
            causes.append(fe.required(f"{path}.name", "must specify a resource name"))
        container = src.get("container")
        if not container:
            causes.append(fe.required(f"{path}.container", "must specify a container"))
        else:
            causes.extend(fe.invalid(f"{path}.container", container, m)
                          for m in names.is_dns1123_label(str(container)))
    causes.extend(_metric_target(target, tpath))
    if kind == "Object" and target.get("value") is None and target.get("averageValue") is None:
        causes.append(fe.required(f"{tpath}.averageValue",
                                  "must set either a target value or averageValue"))
    if kind == "External":
        if target.get("value") is None and target.get("averageValue") is None:
            causes.append(fe.required(f"{tpath}.averageValue", "must set either a target "
                                      "value for metric or a per-pod target"))
        if target.get("value") is not None and target.get("averageValue") is not None:
            causes.append(fe.forbidden(f"{tpath}.value", "may not set both a target value "
                                       "for metric and a per-pod target"))
    if kind == "Pods" and target.get("averageValue") is None:
        causes.append(fe.required(f"{tpath}.averageValue",
                                  "must specify a positive target averageValue"))
    if kind in ("Resource", "ContainerResource"):
        causes.extend(_utilization_or_value(target, tpath))
    return causes


def _metric_spec(spec: Obj, path: str) -> list[Cause]:
    """``validateMetricSpec``: a known type, its own source and no other."""
    causes: list[Cause] = []
    kind = spec.get("type") or ""
    if not kind:
        causes.append(fe.required(f"{path}.type", "must specify a metric source type"))
    if kind not in METRIC_SOURCE_TYPES:
        causes.append(fe.not_supported(f"{path}.type", kind, METRIC_SOURCE_TYPES))
    present = []
    for source_kind, key in _SOURCE_FIELDS:
        if spec.get(key) is not None:
            present.append(key)
            if len(present) == 1:
                src = spec[key] if isinstance(spec[key], dict) else {}
                causes.extend(_source(source_kind, src, f"{path}.{key}"))
    expected = dict(_SOURCE_FIELDS).get(kind)
    if expected is not None and spec.get(expected) is None:
        causes.append(fe.required(f"{path}.{expected}", _POPULATE))
    if expected is None:
        causes.append(fe.not_supported(f"{path}.type", kind, METRIC_SOURCE_TYPES))
    if len(present) != 1:
        causes.extend(fe.forbidden(f"{path}.{key}", "must populate the given metric source only")
                      for key in present if key != expected)
    return causes


def _scaling_rules(rules: Any, path: str) -> list[Cause]:
    """``validateScalingRules`` / ``validateScalingPolicy``."""
    if not isinstance(rules, dict):
        return []
    causes: list[Cause] = []
    window = rules.get("stabilizationWindowSeconds")
    if isinstance(window, int) and window < 0:
        causes.append(fe.invalid(f"{path}.stabilizationWindowSeconds", window,
                                 "must be greater than or equal to zero"))
    if isinstance(window, int) and window > MAX_STABILIZATION_WINDOW_SECONDS:
        causes.append(fe.invalid(f"{path}.stabilizationWindowSeconds", window,
                                 f"must be less than or equal to "
                                 f"{MAX_STABILIZATION_WINDOW_SECONDS}"))
    select = rules.get("selectPolicy")
    if select is not None and select not in SELECT_POLICIES:
        causes.append(fe.not_supported(f"{path}.selectPolicy", select, SELECT_POLICIES))
    policies = rules.get("policies") or []
    if not policies:
        causes.append(fe.required(f"{path}.policies", "must specify at least one Policy"))
    for i, policy in enumerate(policies):
        ppath = fe.index(f"{path}.policies", i)
        policy = policy if isinstance(policy, dict) else {}
        if policy.get("type") not in POLICY_TYPES:
            causes.append(fe.not_supported(f"{ppath}.type", policy.get("type") or "",
                                           POLICY_TYPES))
        value, period = policy.get("value") or 0, policy.get("periodSeconds") or 0
        if value <= 0:
            causes.append(fe.invalid(f"{ppath}.value", value, "must be greater than zero"))
        if period <= 0:
            causes.append(fe.invalid(f"{ppath}.periodSeconds", period,
                                     "must be greater than zero"))
        if period > MAX_PERIOD_SECONDS:
            causes.append(fe.invalid(f"{ppath}.periodSeconds", period,
                                     f"must be less than or equal to {MAX_PERIOD_SECONDS}"))
    return causes


def _spec(spec: Obj, min_lower_bound: int) -> list[Cause]:
    """``validateHorizontalPodAutoscalerSpec``."""
    causes: list[Cause] = []
    low, high = spec.get("minReplicas"), spec.get("maxReplicas") or 0
    if isinstance(low, int) and low < min_lower_bound:
        causes.append(fe.invalid("spec.minReplicas", low,
                                 f"must be greater than or equal to {min_lower_bound}"))
    if high < 1:
        causes.append(fe.invalid("spec.maxReplicas", high, "must be greater than 0"))
    if isinstance(low, int) and high < low:
        causes.append(fe.invalid("spec.maxReplicas", high,
                                 "must be greater than or equal to `minReplicas`"))
    causes.extend(cross_version_object_reference(spec.get("scaleTargetRef"),
                                                 "spec.scaleTargetRef"))
    metrics = spec.get("metrics")
    cpu = spec.get("targetCPUUtilizationPercentage")
    if isinstance(cpu, int) and cpu < 1:
        # autoscaling/v1: Go validates the converted metric
        causes.append(fe.invalid("spec.metrics[0].resource.target.averageUtilization", cpu,
                                 "must be greater than 0"))
    has_object_or_external = False
    for i, metric in enumerate(metrics or []):
        metric = metric if isinstance(metric, dict) else {}
        causes.extend(_metric_spec(metric, fe.index("spec.metrics", i)))
        has_object_or_external |= metric.get("type") in ("Object", "External")
    if low == 0 and not has_object_or_external:
        causes.append(fe.forbidden("spec.metrics", "must specify at least one Object or "
                                   "External metric to support scaling to zero replicas"))
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        causes.extend(_scaling_rules(behavior.get("scaleUp"), "spec.behavior.scaleUp"))
        causes.extend(_scaling_rules(behavior.get("scaleDown"), "spec.behavior.scaleDown"))
    return causes


def validate_horizontal_pod_autoscaler(obj: Obj) -> list[Cause]:
    """``ValidateHorizontalPodAutoscaler`` (HPAScaleToZero is alpha and off: minReplicas
    starts at 1)."""
    return _spec(obj.get("spec") or {}, 1)


def validate_horizontal_pod_autoscaler_update(new: Obj, old: Obj) -> list[Cause]:
    """``ValidateHorizontalPodAutoscalerUpdate``: an autoscaler already at minReplicas 0
    may keep it."""
    bound = 0 if (old.get("spec") or {}).get("minReplicas") == 0 else 1
    return _spec(new.get("spec") or {}, bound)

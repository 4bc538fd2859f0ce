"""HorizontalPodAutoscalers between autoscaling/v1 and the stored autoscaling/v2.

kube-apiserver 1.32 keeps HorizontalPodAutoscalers in etcd as autoscaling/v2 and converts
every served version through the internal (v2-shaped) type. The rules are Go's:

- pkg/apis/autoscaling/v1/conversion.go: ``targetCPUUtilizationPercentage`` is the first cpu
  Resource metric with a Utilization target, ``currentCPUUtilizationPercentage`` the cpu
  Resource status; everything v1 cannot hold rides in the round-trip annotations
  (``autoscaling.alpha.kubernetes.io/metrics``, ``/current-metrics``, ``/conditions`` as
  autoscaling/v1 ``MetricSpec``/``MetricStatus``/conditions JSON, ``/behavior`` as the
  *internal* type's JSON, Go field names and all), which are read back and dropped on the
  way in; a v1 object with no metric at all gets the cpu 80% one.
- pkg/apis/autoscaling/annotations.go ``DropRoundTripHorizontalPodAutoscalerAnnotations``:
  v2 drops those annotations in both directions (pkg/apis/autoscaling/v2/conversion.go),
  so a v2 reader never sees them and a v2 writer cannot store them.
- What is read from storage is defaulted as v2 (the storage decoder defaults,
  pkg/apis/autoscaling/v2/defaults.go): a v1 write is stored with v2's defaults.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from setpoint.cluster.registry.gozero import default_unset, struct_field
from setpoint.machinery.errors import bad_request
from setpoint.machinery.objects import Obj

METRICS = "autoscaling.alpha.kubernetes.io/metrics"
CURRENT_METRICS = "autoscaling.alpha.kubernetes.io/current-metrics"
BEHAVIOR = "autoscaling.alpha.kubernetes.io/behavior"
CONDITIONS = "autoscaling.alpha.kubernetes.io/conditions"
ROUND_TRIP_ANNOTATIONS = (METRICS, BEHAVIOR, CURRENT_METRICS, CONDITIONS)
# which part of the internal object each one carries
SPEC_ANNOTATIONS = (METRICS, BEHAVIOR)
STATUS_ANNOTATIONS = (CURRENT_METRICS, CONDITIONS)

V1 = "autoscaling/v1"
V2 = "autoscaling/v2"
_DEFAULT_CPU_UTILIZATION = 80  # autoscaling.DefaultCPUUtilization
_ZERO = "0"  # a Go resource.Quantity that was never set


def _go_json(value: Any) -> str:
    """``json.Marshal``'s compact encoding (HTML-safe escapes included)."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _some(**fields: Any) -> Obj:
    """The fields that are set (``omitempty``)."""
    return {k: v for k, v in fields.items() if v is not None}


def _without_round_trip(meta: Obj) -> Obj:
    """``DropRoundTripHorizontalPodAutoscalerAnnotations`` on a copy of ``meta`` (an empty
    map is omitted, as Go's ``annotations,omitempty``)."""
    annotations = meta.get("annotations")
    if not isinstance(annotations, dict) or not any(k in annotations
                                                    for k in ROUND_TRIP_ANNOTATIONS):
        return meta
    kept = {k: v for k, v in annotations.items() if k not in ROUND_TRIP_ANNOTATIONS}
    out = {k: v for k, v in meta.items() if k != "annotations"}
    if kept:
        out["annotations"] = kept
    return _in_meta_order(out, meta)


def _in_meta_order(out: Obj, like: Obj) -> Obj:
    return {k: out[k] for k in [*[k for k in like if k in out], *[k for k in out
                                                                   if k not in like]]}


def _ref(ref: Any) -> Obj:
    ref = ref if isinstance(ref, dict) else {}
    return _some(kind=ref.get("kind", ""), name=ref.get("name", ""),
                 apiVersion=ref.get("apiVersion") or None)


def _identifier(name: Any, selector: Any) -> Obj:
    return _some(name=name or "", selector=selector)


def _dict(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


# -- metrics: autoscaling/v1 annotation shapes <-> v2 -------------------------------------

def _v1_metric_to_v2(m: Obj) -> Obj:
    """Convert_v1_MetricSpec_To_autoscaling_MetricSpec (and its sources)."""
    out: Obj = {"type": m.get("type", "")}
    if (src := m.get("object")) is not None:
        src = _dict(src)
        value = src.get("targetValue") or _ZERO
        average = src.get("averageValue")
        out["object"] = {
            "describedObject": _ref(src.get("target")),
            "target": _some(type="Value" if average is None else "AverageValue",
                            value=value, averageValue=average),
            "metric": _identifier(src.get("metricName"), src.get("selector"))}
    if (src := m.get("pods")) is not None:
        src = _dict(src)
        out["pods"] = {
            "metric": _identifier(src.get("metricName"), src.get("selector")),
            "target": {"type": "AverageValue",
                       "averageValue": src.get("targetAverageValue") or _ZERO}}
    for key in ("resource", "containerResource"):
        if (src := m.get(key)) is not None:
            src = _dict(src)
            utilization = src.get("targetAverageUtilization")
            converted = {"name": src.get("name", ""), "target": _some(
                type="AverageValue" if utilization is None else "Utilization",
                averageValue=src.get("targetAverageValue"), averageUtilization=utilization)}
            if key == "containerResource":
                converted["container"] = src.get("container", "")
            out[key] = converted
    if (src := m.get("external")) is not None:
        src = _dict(src)
        value = src.get("targetValue")
        out["external"] = {
            "metric": _identifier(src.get("metricName"), src.get("metricSelector")),
            "target": _some(type="AverageValue" if value is None else "Value", value=value,
                            averageValue=src.get("targetAverageValue"))}
    return out


def _v2_metric_to_v1(m: Obj) -> Obj:
    """Convert_autoscaling_MetricSpec_To_v1_MetricSpec (and its sources)."""
    out: Obj = {"type": m.get("type", "")}
    if (src := m.get("object")) is not None:
        src, target, metric = _dict(src), _dict(_dict(src).get("target")), \
            _dict(_dict(src).get("metric"))
        out["object"] = _some(target=_ref(src.get("describedObject")),
                              metricName=metric.get("name", ""),
                              targetValue=target.get("value") or _ZERO,
                              selector=metric.get("selector"),
                              averageValue=target.get("averageValue"))
    if (src := m.get("pods")) is not None:
        target, metric = _dict(_dict(src).get("target")), _dict(_dict(src).get("metric"))
        out["pods"] = _some(metricName=metric.get("name", ""),
                            targetAverageValue=target.get("averageValue") or _ZERO,
                            selector=metric.get("selector"))
    for key in ("resource", "containerResource"):
        if (src := m.get(key)) is not None:
            src = _dict(src)
            target = _dict(src.get("target"))
            converted = _some(name=src.get("name", ""),
                              targetAverageUtilization=target.get("averageUtilization"),
                              targetAverageValue=target.get("averageValue"))
            if key == "containerResource":
                converted["container"] = src.get("container", "")
            out[key] = converted
    if (src := m.get("external")) is not None:
        target, metric = _dict(_dict(src).get("target")), _dict(_dict(src).get("metric"))
        out["external"] = _some(metricName=metric.get("name", ""),
                                metricSelector=metric.get("selector"),
                                targetValue=target.get("value"),
                                targetAverageValue=target.get("averageValue"))
    return out


def _v1_status_to_v2(m: Obj) -> Obj:
    """Convert_v1_MetricStatus_To_autoscaling_MetricStatus (and its sources)."""
    out: Obj = {"type": m.get("type", "")}
    if (src := m.get("object")) is not None:
        src = _dict(src)
        out["object"] = {
            "metric": _identifier(src.get("metricName"), src.get("selector")),
            "current": _some(value=src.get("currentValue") or _ZERO,
                             averageValue=src.get("averageValue")),
            "describedObject": _ref(src.get("target"))}
    if (src := m.get("pods")) is not None:
        src = _dict(src)
        out["pods"] = {
            "metric": _identifier(src.get("metricName"), src.get("selector")),
            "current": {"averageValue": src.get("currentAverageValue") or _ZERO}}
    for key in ("resource", "containerResource"):
        if (src := m.get(key)) is not None:
            src = _dict(src)
            converted = {"name": src.get("name", ""), "current": _some(
                averageValue=src.get("currentAverageValue") or _ZERO,
                averageUtilization=src.get("currentAverageUtilization"))}
            if key == "containerResource":
                converted["container"] = src.get("container", "")
            out[key] = converted
    if (src := m.get("external")) is not None:
        src = _dict(src)
        out["external"] = {
            "metric": _identifier(src.get("metricName"), src.get("metricSelector")),
            "current": _some(value=src.get("currentValue") or _ZERO,
                             averageValue=src.get("currentAverageValue"))}
    return out


def _v2_status_to_v1(m: Obj) -> Obj:
    """Convert_autoscaling_MetricStatus_To_v1_MetricStatus (and its sources)."""
    out: Obj = {"type": m.get("type", "")}
    if (src := m.get("object")) is not None:
        src = _dict(src)
        current, metric = _dict(src.get("current")), _dict(src.get("metric"))
        out["object"] = _some(target=_ref(src.get("describedObject")),
                              metricName=metric.get("name", ""),
                              currentValue=current.get("value") or _ZERO,
                              selector=metric.get("selector"),
                              averageValue=current.get("averageValue"))
    if (src := m.get("pods")) is not None:
        current, metric = _dict(_dict(src).get("current")), _dict(_dict(src).get("metric"))
        out["pods"] = _some(metricName=metric.get("name", ""),
                            currentAverageValue=current.get("averageValue") or _ZERO,
                            selector=metric.get("selector"))
    for key in ("resource", "containerResource"):
        if (src := m.get(key)) is not None:
            src = _dict(src)
            current = _dict(src.get("current"))
            converted = _some(name=src.get("name", ""),
                              currentAverageUtilization=current.get("averageUtilization"),
                              currentAverageValue=current.get("averageValue") or _ZERO)
            if key == "containerResource":
                converted["container"] = src.get("container", "")
            out[key] = converted
    if (src := m.get("external")) is not None:
        current, metric = _dict(_dict(src).get("current")), _dict(_dict(src).get("metric"))
        out["external"] = _some(metricName=metric.get("name", ""),
                                metricSelector=metric.get("selector"),
                                currentValue=current.get("value") or _ZERO,
                                currentAverageValue=current.get("averageValue"))
    return out


def _condition(c: Obj) -> Obj:
    """HorizontalPodAutoscalerCondition, the same fields in v1 and v2 (a never-set
    lastTransitionTime is Go's zero metav1.Time: null)."""
    return {"type": c.get("type", ""), "status": c.get("status", ""),
            "lastTransitionTime": c.get("lastTransitionTime"),
            **_some(reason=c.get("reason") or None, message=c.get("message") or None)}


# -- behavior: the internal type's JSON (Go field names: the type has no json tags) -------

_RULES = (("StabilizationWindowSeconds", "stabilizationWindowSeconds"),
          ("SelectPolicy", "selectPolicy"), ("Policies", "policies"))
_POLICY = (("Type", "type"), ("Value", "value"), ("PeriodSeconds", "periodSeconds"))


def _behavior_to_internal_json(behavior: Obj) -> str:
    def rules(r: Any) -> Obj | None:
        if not isinstance(r, dict):
            return None
        out = {go: r.get(name) for go, name in _RULES}
        if out["Policies"] is not None:
            out["Policies"] = [{go: _dict(p).get(name, "" if go == "Type" else 0)
                                for go, name in _POLICY} for p in out["Policies"]]
        return out
    return _go_json({"ScaleUp": rules(behavior.get("scaleUp")),
                     "ScaleDown": rules(behavior.get("scaleDown"))})


def _behavior_from_internal_json(text: str) -> Obj | None:
    """The annotation's behavior, or None where Go ignores it (it does not unmarshal, or it
    is the zero behavior)."""
    try:
        raw = json.loads(text)
    except ValueError:
        return None
    if not isinstance(raw, dict):
        return None

    def field(d: Obj, go: str) -> Any:  # (encoding/json matches names case-insensitively)
        return next((v for k, v in d.items() if k.lower() == go.lower()), None)

    def rules(r: Any) -> Obj | None:
        if not isinstance(r, dict):
            return None
        out: Obj = {}
        for go, name in _RULES:
            value = field(r, go)
            if go == "Policies" and isinstance(value, list):
                value = [{name2: field(_dict(p), go2) if field(_dict(p), go2) is not None
                          else ("" if go2 == "Type" else 0) for go2, name2 in _POLICY}
                         for p in value]
            if value is not None:
                out[name] = value
        return out
    behavior = _some(scaleUp=rules(field(raw, "ScaleUp")),
                     scaleDown=rules(field(raw, "ScaleDown")))
    return behavior or None


_GO_ITEM_TYPES = {METRICS: "v1.MetricSpec", CURRENT_METRICS: "v1.MetricStatus",
                  CONDITIONS: "v1.HorizontalPodAutoscalerCondition"}


def _go_kind(value: Any) -> str:
    """How encoding/json names a JSON value in its UnmarshalTypeError."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object" if isinstance(value, dict) else "null"


def _annotation_list(annotations: Obj, key: str) -> list[Obj]:
    """The annotation's list as ``json.Unmarshal`` reads it into Go's slice; what it cannot
    read fails the conversion, which the decoder answers with a 400."""
    try:
        value = json.loads(annotations[key])
    except (ValueError, TypeError) as err:
        raise bad_request(f"{key}: {err}") from None
    item_type = _GO_ITEM_TYPES[key]
    if value is None:
        return []
    if not isinstance(value, list):
        raise bad_request(f"json: cannot unmarshal {_go_kind(value)} into Go value of type "
                          f"[]{item_type}")
    for item in value:
        if item is not None and not isinstance(item, dict):
            raise bad_request(f"json: cannot unmarshal {_go_kind(item)} into Go value of "
                              f"type {item_type}")
    return [_dict(v) for v in value]


# -- v2 defaults (also the storage decoder's: what is read from storage is defaulted) ------

def _default_rules(rules: Obj, window: int, policies: list[Obj]) -> None:
    default_unset(rules, "stabilizationWindowSeconds", window)
    default_unset(rules, "selectPolicy", "Max")
    if not rules.get("policies"):
        rules["policies"] = policies


def default_horizontal_pod_autoscaler_v2(obj: Obj) -> None:
    """pkg/apis/autoscaling/v2/defaults.go ``SetDefaults_HorizontalPodAutoscaler``:
    minReplicas 1, the cpu 80% metric when there is none, and a behavior's unset rules
    (``GenerateHPAScaleUpRules``/``GenerateHPAScaleDownRules``)."""
    spec = struct_field(obj, "spec")
    default_unset(spec, "minReplicas", 1)
    if not spec.get("metrics"):
        spec["metrics"] = [{"type": "Resource", "resource": {
            "name": "cpu", "target": {"type": "Utilization",
                                      "averageUtilization": _DEFAULT_CPU_UTILIZATION}}}]
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        _default_rules(struct_field(behavior, "scaleUp"), 0, [
            {"type": "Pods", "value": 4, "periodSeconds": 15},
            {"type": "Percent", "value": 100, "periodSeconds": 15}])
        _default_rules(struct_field(behavior, "scaleDown"), 300, [
            {"type": "Percent", "value": 100, "periodSeconds": 15}])


# -- whole objects ----------------------------------------------------------------------

def _is_cpu_resource(metric: Obj) -> bool:
    return metric.get("type") == "Resource" and isinstance(metric.get("resource"), dict) \
        and metric["resource"].get("name") == "cpu"


def hpa_v1_to_v2(obj: Obj) -> Obj:
    """An autoscaling/v1 object as stored: converted, then defaulted as the storage decoder
    defaults what it reads (v2/defaults.go)."""
    out = hpa_v1_to_internal(obj)
    default_horizontal_pod_autoscaler_v2(out)
    return hpa_to_storage(out)


def hpa_v1_to_internal(obj: Obj) -> Obj:
    """Convert_v1_HorizontalPodAutoscaler_To_autoscaling_HorizontalPodAutoscaler, in v2's
    shape (what Go validates: nothing defaulted beyond v1's own defaults)."""
    meta = _dict(obj.get("metadata"))
    annotations = _dict(meta.get("annotations"))
    spec, status = _dict(obj.get("spec")), _dict(obj.get("status"))
    metrics: list[Obj] = []
    if spec.get("targetCPUUtilizationPercentage") is not None:
        metrics = [{"type": "Resource", "resource": {"name": "cpu", "target": {
            "type": "Utilization",
            "averageUtilization": spec["targetCPUUtilizationPercentage"]}}}]
    if METRICS in annotations:
        # the annotation's metrics first, the targetCPUUtilizationPercentage one last
        metrics = [_v1_metric_to_v2(m) for m in _annotation_list(annotations, METRICS)] \
            + metrics
    behavior = _behavior_from_internal_json(annotations[BEHAVIOR]) \
        if isinstance(annotations.get(BEHAVIOR), str) else None
    current: list[Obj] = []
    if status.get("currentCPUUtilizationPercentage") is not None:
        current = [{"type": "Resource", "resource": {"name": "cpu", "current": {
            "averageUtilization": status["currentCPUUtilizationPercentage"]}}}]
    if CURRENT_METRICS in annotations:  # (it has more than the v1 field: it wins)
        current = [_v1_status_to_v2(m) for m in _annotation_list(annotations,
                                                                  CURRENT_METRICS)]
    if not metrics:
        metrics = [{"type": "Resource", "resource": {"name": "cpu", "target": {
            "type": "Utilization", "averageUtilization": _DEFAULT_CPU_UTILIZATION}}}]
    conditions = [_condition(c) for c in _annotation_list(annotations, CONDITIONS)] \
        if CONDITIONS in annotations else []
    out_spec: Obj = {"scaleTargetRef": _ref(spec.get("scaleTargetRef")),
                     **_some(minReplicas=spec.get("minReplicas")),
                     "maxReplicas": spec.get("maxReplicas", 0), "metrics": metrics,
                     **_some(behavior=behavior)}
    out_status: Obj = _some(observedGeneration=status.get("observedGeneration"),
                            lastScaleTime=status.get("lastScaleTime"),
                            currentReplicas=status.get("currentReplicas") or None)
    out_status["desiredReplicas"] = status.get("desiredReplicas", 0)
    if current:
        out_status["currentMetrics"] = current
    if conditions:
        out_status["conditions"] = conditions
    return {"kind": "HorizontalPodAutoscaler", "apiVersion": V2,
            "metadata": _without_round_trip(meta), "spec": out_spec, "status": out_status}


def hpa_v2_to_v1(obj: Obj) -> Obj:
    """Convert_autoscaling_HorizontalPodAutoscaler_To_v1_HorizontalPodAutoscaler, from v2."""
    meta = _without_round_trip(_dict(obj.get("metadata")))
    spec, status = _dict(obj.get("spec")), _dict(obj.get("status"))
    metrics = [_dict(m) for m in spec.get("metrics") or []]
    target_cpu = None
    for metric in metrics:
        if _is_cpu_resource(metric):
            target_cpu = _dict(metric["resource"].get("target")).get("averageUtilization")
            break
    other = [_v2_metric_to_v1(m) for m in metrics if not (
        _is_cpu_resource(m)
        and _dict(m["resource"].get("target")).get("averageUtilization") is not None)]
    current = [_dict(m) for m in status.get("currentMetrics") or []]
    current_cpu = None
    for metric in current:  # (no break: the last cpu one counts)
        if _is_cpu_resource(metric):
            utilization = _dict(metric["resource"].get("current")).get("averageUtilization")
            if utilization is not None:
                current_cpu = utilization
    conditions = [_condition(_dict(c)) for c in status.get("conditions") or []]
    added: Obj = {}
    if other:
        added[METRICS] = _go_json(other)
    if current:
        added[CURRENT_METRICS] = _go_json([_v2_status_to_v1(m) for m in current])
    if isinstance(spec.get("behavior"), dict):
        added[BEHAVIOR] = _behavior_to_internal_json(spec["behavior"])
    if conditions:
        added[CONDITIONS] = _go_json(conditions)
    if added:
        meta = _in_meta_order({**meta, "annotations": {
            **_dict(meta.get("annotations")), **added}}, _dict(obj.get("metadata")))
    out_spec: Obj = {"scaleTargetRef": _ref(spec.get("scaleTargetRef")),
                     **_some(minReplicas=spec.get("minReplicas")),
                     "maxReplicas": spec.get("maxReplicas", 0),
                     **_some(targetCPUUtilizationPercentage=target_cpu)}
    out_status: Obj = {**_some(observedGeneration=status.get("observedGeneration"),
                               lastScaleTime=status.get("lastScaleTime")),
                       "currentReplicas": status.get("currentReplicas", 0),
                       "desiredReplicas": status.get("desiredReplicas", 0),
                       **_some(currentCPUUtilizationPercentage=current_cpu)}
    out: Obj = {"kind": "HorizontalPodAutoscaler", "apiVersion": V1, "metadata": meta,
                "spec": out_spec, "status": out_status}
    return out


_SPEC_ORDER = ("scaleTargetRef", "minReplicas", "maxReplicas", "metrics", "behavior")
_STATUS_ORDER = ("observedGeneration", "lastScaleTime", "currentReplicas", "desiredReplicas",
                 "currentMetrics", "conditions")


def _go_order(fields: Any, order: tuple[str, ...]) -> Any:
    """``fields`` in the order of the Go struct's fields (unknown ones after)."""
    if not isinstance(fields, dict):
        return fields
    return {**{k: fields[k] for k in order if k in fields},
            **{k: v for k, v in fields.items() if k not in order}}


def hpa_to_storage(obj: Obj) -> Obj:
    """An autoscaling/v2 write as stored: the round-trip annotations dropped, the fields in
    the order Go encodes them (defaulting added some at the end)."""
    out = {**obj, "metadata": _without_round_trip(_dict(obj.get("metadata")))}
    if isinstance(spec := obj.get("spec"), dict):
        spec = _go_order(spec, _SPEC_ORDER)
        if isinstance(spec.get("behavior"), dict):
            spec["behavior"] = _go_order(spec["behavior"], ("scaleUp", "scaleDown"))
        out["spec"] = spec
    if "status" in obj:
        out["status"] = _go_order(obj["status"], _STATUS_ORDER)
    return out


def hpa_from_storage(stored: Obj) -> Obj:
    """A stored HorizontalPodAutoscaler read as autoscaling/v2 (one a server before this
    conversion stored as autoscaling/v1 is converted first)."""
    if stored.get("apiVersion") == V1:
        return hpa_v1_to_v2(stored)
    return hpa_to_storage(stored)


def hpa_v1_from_storage(stored: Obj) -> Obj:
    """A stored HorizontalPodAutoscaler read as autoscaling/v1."""
    if stored.get("apiVersion") == V1:
        stored = hpa_v1_to_v2(copy.deepcopy(stored))
    return hpa_v2_to_v1(stored)

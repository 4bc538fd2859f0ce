"""Resources served in one shape and stored in another.

autoscaling/v1 HorizontalPodAutoscalers are stored as autoscaling/v2 (conversion_autoscaling).

events.k8s.io/v1 Events share their storage with core/v1 Events, as in Kubernetes: the
stored form is the core one, and the events.k8s.io view is converted on the way in and out
(pkg/apis/events/v1 conversion). Managed fields are left as they are: each entry keeps the
API version it was written at.
"""

from __future__ import annotations

from collections.abc import Callable

from setpoint.cluster.registry.conversion_autoscaling import (
    hpa_from_storage,
    hpa_to_storage,
    hpa_v1_from_storage,
    hpa_v1_to_v2,
)
from setpoint.machinery.objects import Obj

# events.k8s.io/v1 field -> core/v1 field
_RENAMED = (
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
)
_SAME = ("eventTime", "series", "reportingInstance", "action", "reason", "related", "type")


# the fields of each version in its Go struct's order (how encoding/json writes them)
_CORE_ORDER = ("involvedObject", "reason", "message", "source", "firstTimestamp",
               "lastTimestamp", "count", "type", "eventTime", "series", "action", "related",
               "reportingComponent", "reportingInstance")
_V1_ORDER = ("eventTime", "series", "reportingController", "reportingInstance", "action",
             "reason", "regarding", "related", "note", "type", "deprecatedSource",
             "deprecatedFirstTimestamp", "deprecatedLastTimestamp", "deprecatedCount")


def _ordered(head: Obj, fields: Obj, order: tuple[str, ...]) -> Obj:
    head.update((k, fields[k]) for k in order if k in fields)
    head.update((k, v) for k, v in fields.items() if k not in order)
    return head


def event_to_core(obj: Obj) -> Obj:
    """An events.k8s.io/v1 Event in the stored core/v1 shape."""
    fields: Obj = {}
    for v1_name, core_name in _RENAMED:
        if v1_name in obj:
            fields[core_name] = obj[v1_name]
    for name in _SAME:
        if name in obj:
            fields[name] = obj[name]
    # core/v1 serializes these without omitempty
    fields.setdefault("source", {})
    fields.setdefault("firstTimestamp", None)
    fields.setdefault("lastTimestamp", None)
    fields.setdefault("eventTime", None)
    fields.setdefault("reportingComponent", "")
    fields.setdefault("reportingInstance", "")
    return _ordered({"kind": "Event", "apiVersion": "v1", "metadata": obj.get("metadata", {})},
                    fields, _CORE_ORDER)


def core_to_event(obj: Obj) -> Obj:
    """A stored core/v1 Event seen as events.k8s.io/v1."""
    fields: Obj = {"eventTime": obj.get("eventTime")}
    for name in _SAME:
        value = obj.get(name)
        if name != "eventTime" and value not in (None, ""):
            fields[name] = value
    for v1_name, core_name in _RENAMED:
        value = obj.get(core_name)
        if v1_name in ("deprecatedFirstTimestamp", "deprecatedLastTimestamp"):
            fields[v1_name] = value
        elif v1_name == "deprecatedSource":
            fields[v1_name] = value or {}
        elif value not in (None, "", 0):
            fields[v1_name] = value
    return _ordered({"kind": "Event", "apiVersion": "events.k8s.io/v1",
                     "metadata": obj.get("metadata", {})}, fields, _V1_ORDER)


Converter = tuple[Callable[[Obj], Obj], Callable[[Obj], Obj]]  # (to storage, from storage)

CONVERSIONS: dict[tuple[str, str, str], Converter] = {
    ("events.k8s.io", "v1", "Event"): (event_to_core, core_to_event),
    # stored as autoscaling/v2 (conversion_autoscaling)
    ("autoscaling", "v1", "HorizontalPodAutoscaler"): (hpa_v1_to_v2, hpa_v1_from_storage),
    ("autoscaling", "v2", "HorizontalPodAutoscaler"): (hpa_to_storage, hpa_from_storage),
}

# The storage key of resources stored with another group's objects.
SHARED_STORAGE = {("events.k8s.io", "events"): "/events"}

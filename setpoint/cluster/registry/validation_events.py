"""Validation of Events, core/v1 and events.k8s.io/v1 (pkg/apis/core/validation/events.go).

Both versions are validated as the internal (core) Event, so field paths carry the internal
names whichever version the request used: ``involvedObject``, ``message``, ``source``,
``count``, ``reportingController`` (core/v1 serializes that one as ``reportingComponent``).
The strategy (pkg/registry/core/event/strategy.go) passes the request's group version: core/v1
requests get the legacy checks only, events.k8s.io/v1 requests the strict ones too.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any

from setpoint.machinery import fielderrors as fe
from setpoint.machinery import names
from setpoint.machinery.errors import Cause
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.registry.types import ResourceType

REPORTING_INSTANCE_LENGTH_LIMIT = 128
ACTION_LENGTH_LIMIT = 128
REASON_LENGTH_LIMIT = 128
NOTE_LENGTH_LIMIT = 1024

# events.k8s.io/v1 name -> internal name, for the fields renamed by pkg/apis/events/v1
_V1_NAMES = {
    "involvedObject": "regarding", "message": "note", "source": "deprecatedSource",
    "firstTimestamp": "deprecatedFirstTimestamp", "lastTimestamp": "deprecatedLastTimestamp",
    "count": "deprecatedCount", "reportingController": "reportingController",
}
_CORE_NAMES = {"reportingController": "reportingComponent"}

# (JSON name, Go name) of the internal structs' fields, in their declaration order
_OBJECT_REFERENCE = (("kind", "Kind"), ("namespace", "Namespace"), ("name", "Name"),
                     ("uid", "UID"), ("apiVersion", "APIVersion"),
                     ("resourceVersion", "ResourceVersion"), ("fieldPath", "FieldPath"))
_EVENT_SOURCE = (("component", "Component"), ("host", "Host"))


def _is_v1(rt: ResourceType) -> bool:
    return rt.group == "events.k8s.io"


def _field(rt: ResourceType, obj: Obj, internal: str) -> Any:
    """The value of the internal field ``internal`` in ``obj`` as the request's version
    writes it."""
    names_ = _V1_NAMES if _is_v1(rt) else _CORE_NAMES
    return obj.get(names_.get(internal, internal))


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


# -- Go renderings of internal values, as field.Error prints a bad value --------------------

def _go_time(value: Any) -> fe.GoValue:
    """``time.Time.String()`` (metav1.Time and MicroTime are Stringers)."""
    text = _text(value)
    try:
        when = datetime.datetime.fromisoformat(text.replace("Z", "+00:00")) if text else None
    except ValueError:
        when = None
    if when is None:
        return fe.GoValue("0001-01-01 00:00:00 +0000 UTC")
    when = when.astimezone(datetime.UTC)
    frac = f".{when.microsecond:06d}".rstrip("0") if when.microsecond else ""
    return fe.GoValue(when.strftime("%Y-%m-%d %H:%M:%S") + frac + " +0000 UTC")


def _go_struct(type_name: str, fields: tuple[tuple[str, str], ...], value: Any) -> str:
    """``%#v`` of an internal struct whose fields are all strings."""
    obj = value if isinstance(value, dict) else {}
    parts = (f"{go}:{fe.go_quote(_text(obj.get(key)))}" for key, go in fields)
    return f"core.{type_name}{{" + ", ".join(parts) + "}"


def _go_reference(value: Any) -> fe.GoValue:
    return fe.GoValue(_go_struct("ObjectReference", _OBJECT_REFERENCE, value))


def _go_related(value: Any) -> fe.GoValue:
    """A ``*core.ObjectReference``: nil prints as null, else the struct it points to."""
    return fe.GoValue("null") if not isinstance(value, dict) else _go_reference(value)


def _go_source(value: Any) -> fe.GoValue:
    return fe.GoValue(_go_struct("EventSource", _EVENT_SOURCE, value))


def _go_count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


# -- create --------------------------------------------------------------------------------

def _legacy(rt: ResourceType, obj: Obj) -> list[Cause]:
    """``legacyValidateEvent``: every Event, whatever version it was sent at."""
    involved = _field(rt, obj, "involvedObject") or {}
    involved_ns = _text(involved.get("namespace")) if isinstance(involved, dict) else ""
    namespace = _text((obj.get("metadata") or {}).get("namespace"))
    causes: list[Cause] = []
    if not obj.get("eventTime"):
        # an old-style Event: its namespace and the involved object's agree ("default"
        # stays allowed for a cluster-scoped object, for old clients)
        if (not involved_ns and namespace not in ("", "default")) or (
                involved_ns and namespace != involved_ns):
            causes.append(fe.invalid("involvedObject.namespace", involved_ns,
                                     "does not match event.namespace"))
    else:
        if not involved_ns and namespace not in ("default", "kube-system"):
            causes.append(fe.invalid("involvedObject.namespace", involved_ns,
                                     "does not match event.namespace"))
        controller = _text(_field(rt, obj, "reportingController"))
        if not controller:
            causes.append(fe.required("reportingController"))
        causes.extend(fe.invalid("reportingController", controller, m)
                      for m in names.is_qualified_name(controller))
        for key, limit in (("reportingInstance", REPORTING_INSTANCE_LENGTH_LIMIT),
                           ("action", ACTION_LENGTH_LIMIT), ("reason", REASON_LENGTH_LIMIT)):
            value = _text(obj.get(key))
            if not value:
                causes.append(fe.required(key))
            if len(value.encode()) > limit:
                causes.append(fe.invalid(key, "", f"can have at most {limit} characters"))
        if len(_text(_field(rt, obj, "message")).encode()) > NOTE_LENGTH_LIMIT:
            causes.append(fe.invalid("message", "",
                                     f"can have at most {NOTE_LENGTH_LIMIT} characters"))
    causes.extend(fe.invalid("namespace", namespace, m)
                  for m in names.is_dns1123_subdomain(namespace))
    return causes


def _series(obj: Obj) -> list[Cause]:
    """``validateV1EventSeries``."""
    series = obj.get("series")
    if not isinstance(series, dict):
        return []
    causes: list[Cause] = []
    if _go_count(series.get("count")) < 2:
        causes.append(fe.invalid("series.count", "", "should be at least 2"))
    if not series.get("lastObservedTime"):
        causes.append(fe.required("series.lastObservedTime"))
    return causes


def validate_event(rt: ResourceType, obj: Obj) -> list[Cause]:
    """``ValidateEventCreate``: the legacy checks, then for events.k8s.io/v1 requests the
    strict ones."""
    causes = _legacy(rt, obj)
    if not _is_v1(rt):
        return causes
    causes.extend(names.validate_object_meta(obj.get("metadata"), True))
    causes.extend(_series(obj))
    if not obj.get("eventTime"):
        causes.append(fe.required("eventTime"))
    if obj.get("type") not in ("Normal", "Warning"):
        causes.append(fe.invalid("type", "", f"has invalid value: {_text(obj.get('type'))}"))
    for internal in ("firstTimestamp", "lastTimestamp"):
        if _field(rt, obj, internal):
            causes.append(fe.invalid(internal, "", "needs to be unset"))
    if _go_count(_field(rt, obj, "count")) != 0:
        causes.append(fe.invalid("count", "", "needs to be unset"))
    source = _field(rt, obj, "source") or {}
    if isinstance(source, dict) and (source.get("component") or source.get("host")):
        causes.append(fe.invalid("source", "", "needs to be unset"))
    return causes


# -- update --------------------------------------------------------------------------------

def _zeroless(value: Any) -> Any:
    """A value with Go's zero values dropped, so that an absent field and its zero value
    compare equal, as the internal structs do."""
    if isinstance(value, dict):
        kept = {k: _zeroless(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v is not None} or None
    if value in ("", 0, [], False):
        return None
    return value


# Immutable fields in ValidateEventUpdate's order (reason is checked twice there).
_IMMUTABLE = ("involvedObject", "reason", "message", "source", "firstTimestamp",
              "lastTimestamp", "count", "reason", "type", "eventTime", "action", "related",
              "reportingController", "reportingInstance")
_RENDER = {
    "involvedObject": _go_reference, "related": _go_related, "source": _go_source,
    "firstTimestamp": _go_time, "lastTimestamp": _go_time, "eventTime": _go_time,
    "count": _go_count,
}


def _same_time(new: Any, old: Any) -> bool:
    return _go_time(new) == _go_time(old)


def validate_event_update(rt: ResourceType, new: Obj, old: Obj) -> list[Cause]:
    """``ValidateEventUpdate``: core/v1 updates pass the legacy checks only; events.k8s.io/v1
    updates also validate a changed series and keep everything else immutable."""
    causes = _legacy(rt, new)
    if not _is_v1(rt):
        return causes
    causes.extend(names.validate_object_meta_update(new.get("metadata"), old.get("metadata")))
    if _zeroless(new.get("series")) != _zeroless(old.get("series")):
        causes.extend(_series(new))
    for internal in _IMMUTABLE:
        value, before = _field(rt, new, internal), _field(rt, old, internal)
        render = _RENDER.get(internal, _text)
        if render is _go_time:
            changed = not _same_time(value, before)
        else:
            changed = _zeroless(value) != _zeroless(before)
        if changed:
            causes.append(fe.invalid(internal, render(value), "field is immutable"))
    return causes

"""Events, core/v1 and events.k8s.io/v1, validated as kube-apiserver 1.32 validates them.

Sources: pkg/apis/core/validation/events.go (``ValidateEventCreate``, ``ValidateEventUpdate``,
``legacyValidateEvent``, ``validateV1EventSeries``), pkg/registry/core/event/strategy.go (the
request's group version chooses legacy or strict validation; events.k8s.io/v1 is served by the
same storage, pkg/registry/events/rest/storage_events.go) and pkg/apis/events/v1/conversion.go
(regarding/note/deprecated* are the core fields involvedObject/message/source/...). Both
versions are validated as the internal core.Event, so error paths carry the internal names.
"""

from __future__ import annotations

from typing import Any

from tests.cluster.conftest import API

CORE = "/api/v1/namespaces/default/events"
V1 = "/apis/events.k8s.io/v1/namespaces/default/events"
WHEN = "2024-01-01T00:00:00.000001Z"
REFERENCE = {"apiVersion": "v1", "kind": "ConfigMap", "name": "target", "namespace": "default"}


def _core(name: str, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name},
            "involvedObject": REFERENCE, "reason": "Tested", "message": "m", "type": "Normal",
            **fields}


def _v1(name: str, **fields: Any) -> dict[str, Any]:
    body = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": name},
            "eventTime": WHEN, "regarding": REFERENCE, "reason": "Tested", "note": "n",
            "type": "Normal", "action": "Test", "reportingController": "example.com/ctl",
            "reportingInstance": "ctl-1", **fields}
    return {k: v for k, v in body.items() if v is not None}


def _invalid(name: str, message: str, causes: list[tuple[str, str, str]]) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": f'Event "{name}" is invalid: {message}', "reason": "Invalid",
            "details": {"name": name, "kind": "Event", "causes": [
                {"reason": r, "message": m, "field": f} for r, m, f in causes]},
            "code": 422}


async def test_legacy_event_namespace_must_match_involved_object(api: API) -> None:
    """legacyValidateEvent (events.go): without eventTime, the Event's namespace equals
    involvedObject.namespace."""
    body = _core("a.1", involvedObject={**REFERENCE, "namespace": "kube-system"})
    status, answer = await api.post(CORE, body)
    assert status == 422
    assert answer == _invalid(
        "a.1", 'involvedObject.namespace: Invalid value: "kube-system": '
        "does not match event.namespace",
        [("FieldValueInvalid", 'Invalid value: "kube-system": does not match event.namespace',
          "involvedObject.namespace")])


async def test_legacy_event_about_cluster_object_may_live_in_default_only(api: API) -> None:
    """legacyValidateEvent (events.go): without eventTime, an Event about a cluster-scoped
    object (no involvedObject.namespace) lives in "" or "default", nowhere else."""
    node = {"kind": "Node", "name": "n1"}
    status, _ = await api.post(CORE, _core("n1.1", involvedObject=node))
    assert status == 201
    status, _ = await api.post("/api/v1/namespaces", {"metadata": {"name": "other"}})
    assert status == 201
    status, answer = await api.post("/api/v1/namespaces/other/events",
                                    _core("n1.2", involvedObject=node))
    assert status == 422
    assert answer == _invalid(
        "n1.2", 'involvedObject.namespace: Invalid value: "": does not match event.namespace',
        [("FieldValueInvalid", 'Invalid value: "": does not match event.namespace',
          "involvedObject.namespace")])


async def test_new_event_about_cluster_object_lives_in_default_or_kube_system(
        api: API) -> None:
    """legacyValidateEvent (events.go): with eventTime, an Event without
    involvedObject.namespace lives in "default" or "kube-system"."""
    node = {"kind": "Node", "name": "n1"}
    status, _ = await api.post(V1, _v1("n1.1", regarding=node))
    assert status == 201
    status, _ = await api.post("/api/v1/namespaces", {"metadata": {"name": "other"}})
    assert status == 201
    status, answer = await api.post("/apis/events.k8s.io/v1/namespaces/other/events",
                                    _v1("n1.2", regarding=node))
    assert status == 422
    assert answer == _invalid(
        "n1.2", 'involvedObject.namespace: Invalid value: "": does not match event.namespace',
        [("FieldValueInvalid", 'Invalid value: "": does not match event.namespace',
          "involvedObject.namespace")])


async def test_core_event_with_event_time_needs_reporting_fields(api: API) -> None:
    """legacyValidateEvent (events.go): a core/v1 Event with eventTime needs
    reportingController (reported under its internal name even though core/v1 writes it
    ``reportingComponent``), reportingInstance, action and reason."""
    status, answer = await api.post(CORE, _core("b.1", eventTime=WHEN, reason=""))
    assert status == 422
    name_msg = ("name part must consist of alphanumeric characters, '-', '_' or '.', and "
                "must start and end with an alphanumeric character (e.g. 'MyName',  or "
                "'my.name',  or '123-abc', regex used for validation is "
                "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
    assert answer == _invalid(
        "b.1", "[reportingController: Required value, reportingController: Invalid value: "
        f'"": name part must be non-empty, reportingController: Invalid value: "": {name_msg}'
        ", reportingInstance: Required value, action: Required value, reason: Required value]",
        [("FieldValueRequired", "Required value", "reportingController"),
         ("FieldValueInvalid", 'Invalid value: "": name part must be non-empty',
          "reportingController"),
         ("FieldValueInvalid", f'Invalid value: "": {name_msg}', "reportingController"),
         ("FieldValueRequired", "Required value", "reportingInstance"),
         ("FieldValueRequired", "Required value", "action"),
         ("FieldValueRequired", "Required value", "reason")])


async def test_reporting_controller_is_a_qualified_name(api: API) -> None:
    """legacyValidateEvent (events.go): reportingController passes IsQualifiedName."""
    status, answer = await api.post(V1, _v1("c.1", reportingController="a/b/c"))
    assert status == 422
    msg = ("a qualified name must consist of alphanumeric characters, '-', '_' or '.', and "
           "must start and end with an alphanumeric character (e.g. 'MyName',  or "
           "'my.name',  or '123-abc', regex used for validation is "
           "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain "
           "prefix and '/' (e.g. 'example.com/MyName')")
    assert answer == _invalid(
        "c.1", f'reportingController: Invalid value: "a/b/c": {msg}',
        [("FieldValueInvalid", f'Invalid value: "a/b/c": {msg}', "reportingController")])


async def test_reporting_instance_action_reason_note_length_limits(api: API) -> None:
    """legacyValidateEvent (events.go): reportingInstance, action and reason at most 128
    bytes, the note at most 1024 (reported as ``message``, its internal name)."""
    body = _v1("d.1", reportingInstance="i" * 129, action="a" * 129, reason="r" * 129,
               note="n" * 1025)
    status, answer = await api.post(V1, body)
    assert status == 422
    assert answer == _invalid(
        "d.1", '[reportingInstance: Invalid value: "": can have at most 128 characters, '
        'action: Invalid value: "": can have at most 128 characters, '
        'reason: Invalid value: "": can have at most 128 characters, '
        'message: Invalid value: "": can have at most 1024 characters]',
        [("FieldValueInvalid", 'Invalid value: "": can have at most 128 characters',
          "reportingInstance"),
         ("FieldValueInvalid", 'Invalid value: "": can have at most 128 characters', "action"),
         ("FieldValueInvalid", 'Invalid value: "": can have at most 128 characters', "reason"),
         ("FieldValueInvalid", 'Invalid value: "": can have at most 1024 characters',
          "message")])
    status, _ = await api.post(V1, _v1("d.2", reportingInstance="i" * 128, action="a" * 128,
                                       reason="r" * 128, note="n" * 1024))
    assert status == 201


async def test_v1_event_needs_event_time(api: API) -> None:
    """ValidateEventCreate (events.go): events.k8s.io/v1 requires eventTime; core/v1 does
    not (its strategy passes the request version, pkg/registry/core/event/strategy.go)."""
    status, answer = await api.post(V1, _v1("e.1", eventTime=None))
    assert status == 422
    assert answer == _invalid("e.1", "eventTime: Required value",
                              [("FieldValueRequired", "Required value", "eventTime")])
    status, _ = await api.post(CORE, _core("e.2"))
    assert status == 201


async def test_v1_event_type_is_normal_or_warning(api: API) -> None:
    """ValidateEventCreate (events.go): type is Normal or Warning for events.k8s.io/v1;
    core/v1 accepts any type."""
    status, answer = await api.post(V1, _v1("f.1", type="Strange"))
    assert status == 422
    assert answer == _invalid(
        "f.1", 'type: Invalid value: "": has invalid value: Strange',
        [("FieldValueInvalid", 'Invalid value: "": has invalid value: Strange', "type")])
    status, _ = await api.post(CORE, _core("f.2", type="Strange"))
    assert status == 201


async def test_v1_event_deprecated_fields_must_be_unset(api: API) -> None:
    """ValidateEventCreate (events.go): deprecatedFirstTimestamp, deprecatedLastTimestamp,
    deprecatedCount and deprecatedSource must be unset on an events.k8s.io/v1 create; they
    are reported under their internal names (pkg/apis/events/v1/conversion.go)."""
    body = _v1("g.1", deprecatedFirstTimestamp="2024-01-01T00:00:00Z",
               deprecatedLastTimestamp="2024-01-01T00:00:01Z", deprecatedCount=3,
               deprecatedSource={"host": "h"})
    status, answer = await api.post(V1, body)
    assert status == 422
    assert answer == _invalid(
        "g.1", '[firstTimestamp: Invalid value: "": needs to be unset, lastTimestamp: '
        'Invalid value: "": needs to be unset, count: Invalid value: "": needs to be unset, '
        'source: Invalid value: "": needs to be unset]',
        [("FieldValueInvalid", 'Invalid value: "": needs to be unset', f)
         for f in ("firstTimestamp", "lastTimestamp", "count", "source")])


async def test_v1_event_series_count_and_last_observed_time(api: API) -> None:
    """validateV1EventSeries (events.go): a series counts at least 2 and has a
    lastObservedTime."""
    status, answer = await api.post(V1, _v1("h.1", series={"count": 1}))
    assert status == 422
    assert answer == _invalid(
        "h.1", '[series.count: Invalid value: "": should be at least 2, '
        "series.lastObservedTime: Required value]",
        [("FieldValueInvalid", 'Invalid value: "": should be at least 2', "series.count"),
         ("FieldValueRequired", "Required value", "series.lastObservedTime")])
    status, _ = await api.post(V1, _v1("h.2", series={"count": 2, "lastObservedTime": WHEN}))
    assert status == 201


async def test_v1_event_metadata_is_validated_core_is_not(api: API) -> None:
    """ValidateEventCreate (events.go): events.k8s.io/v1 validates ObjectMeta with DNS
    subdomain names; core/v1 Events get only the generic path-segment check
    (staging/src/k8s.io/apiserver/pkg/registry/rest/create.go)."""
    status, answer = await api.post(V1, _v1("Upper.Case"))
    assert status == 422
    msg = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
           "characters, '-' or '.', and must start and end with an alphanumeric character "
           "(e.g. 'example.com', regex used for validation is "
           "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
    assert answer == _invalid(
        "Upper.Case", f'metadata.name: Invalid value: "Upper.Case": {msg}',
        [("FieldValueInvalid", f'Invalid value: "Upper.Case": {msg}', "metadata.name")])
    status, _ = await api.post(CORE, _core("Upper.Case"))
    assert status == 201


async def test_v1_event_update_keeps_fields_immutable(api: API) -> None:
    """ValidateEventUpdate (events.go): through events.k8s.io/v1 everything but the series
    is immutable; errors use internal names and Go's rendering of the new value (reason is
    checked twice in the source, so it is reported twice)."""
    status, created = await api.post(V1, _v1("i.1"))
    assert status == 201
    changed = {**created, "reason": "Other", "note": "changed",
               "regarding": {**REFERENCE, "name": "other"},
               "eventTime": "2024-02-01T00:00:00.000000Z"}
    status, answer = await api.put(f"{V1}/i.1", changed)
    assert status == 422
    ref = ('core.ObjectReference{Kind:"ConfigMap", Namespace:"default", Name:"other", '
           'UID:"", APIVersion:"v1", ResourceVersion:"", FieldPath:""}')
    causes = [
        ("FieldValueInvalid", f"Invalid value: {ref}: field is immutable", "involvedObject"),
        ("FieldValueInvalid", 'Invalid value: "Other": field is immutable', "reason"),
        ("FieldValueInvalid", 'Invalid value: "changed": field is immutable', "message"),
        ("FieldValueInvalid", 'Invalid value: "Other": field is immutable', "reason"),
        ("FieldValueInvalid", "Invalid value: 2024-02-01 00:00:00 +0000 UTC: "
         "field is immutable", "eventTime"),
    ]
    assert answer == _invalid(
        "i.1", f"[involvedObject: {causes[0][1]}, reason: {causes[1][1]}, "
        f"message: {causes[2][1]}, eventTime: {causes[4][1]}]", causes)


async def test_v1_event_update_validates_a_changed_series(api: API) -> None:
    """ValidateEventUpdate (events.go): a changed series is validated again
    (validateV1EventSeries); a valid one is accepted."""
    status, created = await api.post(V1, _v1("j.1"))
    assert status == 201
    status, answer = await api.put(f"{V1}/j.1", {**created, "series": {"count": 1,
                                                                        "lastObservedTime": WHEN}})
    assert status == 422
    assert answer == _invalid(
        "j.1", 'series.count: Invalid value: "": should be at least 2',
        [("FieldValueInvalid", 'Invalid value: "": should be at least 2', "series.count")])
    status, _ = await api.put(f"{V1}/j.1", {**created, "series": {"count": 2,
                                                                   "lastObservedTime": WHEN}})
    assert status == 200


async def test_core_event_update_passes_legacy_checks_only(api: API) -> None:
    """ValidateEventUpdate (events.go): a core/v1 update gets only legacyValidateEvent, so
    the fields events.k8s.io/v1 keeps immutable may change."""
    status, created = await api.post(CORE, _core("k.1", count=1))
    assert status == 201
    status, updated = await api.put(f"{CORE}/k.1", {**created, "reason": "Again", "count": 2,
                                                    "message": "changed"})
    assert status == 200
    assert (updated["reason"], updated["count"], updated["message"]) == ("Again", 2, "changed")


async def test_core_event_is_read_through_events_v1_with_deprecated_fields(api: API) -> None:
    """pkg/apis/events/v1/conversion.go: a core/v1 Event's source, firstTimestamp,
    lastTimestamp and count are seen through events.k8s.io/v1 as deprecatedSource,
    deprecatedFirstTimestamp, deprecatedLastTimestamp and deprecatedCount; an events.k8s.io/v1
    update that leaves them unchanged is accepted (they are only immutable)."""
    body = _core("l.1", count=4, source={"component": "kubelet", "host": "n1"},
                 firstTimestamp="2024-01-01T00:00:00Z", lastTimestamp="2024-01-01T00:00:09Z",
                 eventTime=WHEN, action="Test", reportingComponent="example.com/ctl",
                 reportingInstance="ctl-1")
    status, _ = await api.post(CORE, body)
    assert status == 201
    status, seen = await api.get(f"{V1}/l.1")
    assert status == 200
    assert {k: seen.get(k) for k in ("deprecatedCount", "deprecatedSource",
                                     "deprecatedFirstTimestamp", "deprecatedLastTimestamp",
                                     "note", "reportingController")} == {
        "deprecatedCount": 4, "deprecatedSource": {"component": "kubelet", "host": "n1"},
        "deprecatedFirstTimestamp": "2024-01-01T00:00:00Z",
        "deprecatedLastTimestamp": "2024-01-01T00:00:09Z", "note": "m",
        "reportingController": "example.com/ctl"}
    status, _ = await api.put(f"{V1}/l.1", {**seen, "series": {"count": 2,
                                                               "lastObservedTime": WHEN}})
    assert status == 200
    unconditional = {**seen, "metadata": {"name": "l.1"}}  # Events allow unconditional updates
    status, answer = await api.put(f"{V1}/l.1", {**unconditional, "deprecatedCount": 5})
    assert status == 422
    assert answer["details"]["causes"] == [
        {"reason": "FieldValueInvalid", "message": "Invalid value: 5: field is immutable",
         "field": "count"}]


async def test_converted_events_keep_the_go_field_order(api: API) -> None:
    """An Event read through the other version is written in that version's struct order
    (k8s.io/api core/v1 Event, events/v1 Event), as encoding/json writes it."""
    status, _ = await api.post(V1, _v1("ordered", related=REFERENCE,
                                       series={"count": 2, "lastObservedTime": WHEN}))
    assert status == 201
    status, core = await api.get(f"{CORE}/ordered")
    assert status == 200
    assert list(core)[3:] == ["involvedObject", "reason", "message", "source", "firstTimestamp",
                              "lastTimestamp", "type", "eventTime", "series", "action",
                              "related", "reportingComponent", "reportingInstance"]
    status, _ = await api.post(CORE, _core("ordered-core", count=2, source={"component": "c"}))
    assert status == 201
    status, v1 = await api.get(f"{V1}/ordered-core")
    assert status == 200
    assert list(v1)[3:] == ["eventTime", "reason", "regarding", "note", "type",
                            "deprecatedSource", "deprecatedFirstTimestamp",
                            "deprecatedLastTimestamp", "deprecatedCount"]

"""A timestamp written as Go writes it is taken without Go's element-by-element parse.

metav1.Time and metav1.MicroTime decode with ``time.Parse`` (apimachinery pkg/apis/meta/v1
time.go ``UnmarshalJSON``, micro_time.go; Go src/time/format.go ``parse``); Setpoint walks
the same elements (``serializer/rfc3339.py``) to give Go's errors. A text in the form Go
writes back (UTC, whole seconds or six fraction digits, ASCII digits) whose elements are in
the ranges ``parse`` checks needs no walk: an Event's ``eventTime`` is new at every write.
Everything else still takes the walk, and its errors are Go's.
"""

from __future__ import annotations

from typing import Any

import pytest

from setpoint.cluster.serializer import typeddecode
from setpoint.machinery import errors
from setpoint.machinery.schema import definitions


def _event(event_time: Any, deprecated_first: Any = None) -> dict[str, Any]:
    return {"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "e", "namespace": "default"},
            "eventTime": event_time, "deprecatedFirstTimestamp": deprecated_first,
            "reportingController": "c", "reportingInstance": "i", "action": "A",
            "reason": "R", "type": "Normal"}


def _decode(body: dict[str, Any]) -> dict[str, Any]:
    schema = definitions().for_kind("events.k8s.io", "v1", "Event")
    assert schema is not None
    out, _ = typeddecode.decode_builtin(body, schema, "Event")
    return out


def test_a_time_as_go_writes_it_is_not_walked(monkeypatch: pytest.MonkeyPatch) -> None:
    """A MicroTime and a Time in their written form, Feb 29 of a leap year included, come
    back as they are without a parse."""
    walked: list[str] = []

    def observed(value: str, *, micro: bool = False) -> str | None:
        walked.append(value)
        return None

    monkeypatch.setattr(typeddecode, "rfc3339_error", observed)
    typeddecode._CANONICAL_TIMES.clear()
    out = _decode(_event("2024-02-29T23:59:59.000123Z", "2024-12-31T00:00:59Z"))
    assert (out["eventTime"], out["deprecatedFirstTimestamp"]) == (
        "2024-02-29T23:59:59.000123Z", "2024-12-31T00:00:59Z")
    assert walked == []


@pytest.mark.parametrize(("event_time", "message"), [
    ("2023-02-29T00:00:00.000000Z", 'parsing time "2023-02-29T00:00:00.000000Z": day out of '
                                    "range"),
    ("2024-13-01T00:00:00.000000Z", 'parsing time "2024-13-01T00:00:00.000000Z": month out of '
                                    "range"),
    ("2024-01-01T24:00:00.000000Z", 'parsing time "2024-01-01T24:00:00.000000Z": hour out of '
                                    "range"),
    ("2024-01-01T00:60:00.000000Z", 'parsing time "2024-01-01T00:60:00.000000Z": minute out of'
                                    " range"),
    ("2024-01-01T00:00:00.00001Z", 'parsing time "2024-01-01T00:00:00.00001Z" as '
                                   '"2006-01-02T15:04:05.000000Z07:00": cannot parse '
                                   '".00001Z" as ".000000"'),
])
def test_a_time_out_of_range_is_gos_error(event_time: str, message: str) -> None:
    """Written like Go's text but out of ``parse``'s ranges (or one digit short): the walk
    answers, with Go's ParseError."""
    with pytest.raises(errors.StatusError) as exc:
        _decode(_event(event_time))
    assert message in str(exc.value)


@pytest.mark.parametrize(("event_time", "written"), [
    ("2024-01-01T01:00:00.000001+01:00", "2024-01-01T00:00:00.000001Z"),
    ("2024-01-01T00:00:00,000001Z", "2024-01-01T00:00:00.000001Z"),
    ("2024-01-01T1:00:00.000001Z", "2024-01-01T01:00:00.000001Z"),
])
def test_a_time_written_otherwise_is_walked_and_written_as_go_does(event_time: str,
                                                                   written: str) -> None:
    """An offset, a comma before the fraction, a one-digit hour: Go takes them and writes
    them back in UTC with six digits."""
    assert _decode(_event(event_time))["eventTime"] == written

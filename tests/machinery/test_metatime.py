"""``metav1.Time`` text: RFC 3339 to the second, UTC, as apimachinery's ``Time.MarshalJSON``
writes it (``time.RFC3339`` of the time in UTC, truncated to the second: pkg/apis/meta/v1
time.go); ``metav1.MicroTime`` the same to the microsecond (micro_time.go ``RFC3339Micro``,
``2006-01-02T15:04:05.000000Z07:00``)."""

from __future__ import annotations

from datetime import UTC, datetime

from setpoint.machinery.metatime import meta_time, micro_time


def _go(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_a_time_is_its_second_whatever_the_one_formatted_before() -> None:
    """meta_time remembers the last second it formatted: a time in the same second reads
    the same, and one in another second (after, before, or across the epoch) its own."""
    for ts in (1700000000.0, 1700000000.999, 1700000001.0, 1699999999.5, 0.0, -0.5, -1.0,
               1e9 + 0.25, 1700000000.5, 1700000000.5):
        assert meta_time(ts) == _go(ts), ts
    assert meta_time(1700000000.2) == "2023-11-14T22:13:20Z"
    assert meta_time(1700000000.9) == "2023-11-14T22:13:20Z"
    assert meta_time(1700000001.1) == "2023-11-14T22:13:21Z"
    assert meta_time(-0.5) == "1969-12-31T23:59:59Z"


def test_a_micro_time_is_datetimes_text_to_the_microsecond() -> None:
    """micro_time writes the remembered second's text and the microseconds itself: the
    same text as ``datetime``'s, the fraction rounded half to even and carried into the
    next second (before the epoch as well), whatever second was formatted before."""
    for ts in (1700000000.0, 1700000000.9999996, 1700000000.9999995, 1700000000.0000005,
               1700000000.0000015, 1700000000.123456, 1699999999.5, 0.0, 1.5, -1.25,
               -0.0000004, -0.9999996, 1e9 + 0.25, 1700000000.5, 1700000000.4999995):
        assert micro_time(ts) == datetime.fromtimestamp(ts, UTC).strftime(
            "%Y-%m-%dT%H:%M:%S.%fZ"), ts
    assert micro_time(1700000000.9999996) == "2023-11-14T22:13:21.000000Z"
    assert micro_time(-0.25) == "1969-12-31T23:59:59.750000Z"

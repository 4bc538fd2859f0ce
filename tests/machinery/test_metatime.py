"""``metav1.Time`` text: RFC 3339 to the second, UTC, as apimachinery's ``Time.MarshalJSON``
writes it (``time.RFC3339`` of the time in UTC, truncated to the second: pkg/apis/meta/v1
time.go)."""

from __future__ import annotations

from datetime import UTC, datetime

from setpoint.machinery.metatime import meta_time


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

"""``metav1.Time`` and ``metav1.MicroTime`` as the API serializes them."""

from __future__ import annotations

from datetime import UTC, datetime


def meta_time(ts: float) -> str:
    """``metav1.Time`` of a Unix timestamp: RFC 3339 to the second."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def micro_time(ts: float) -> str:
    """``metav1.MicroTime`` of a Unix timestamp."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")

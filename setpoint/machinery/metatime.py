"""``metav1.Time`` and ``metav1.MicroTime`` as the API serializes them (UTC, ``Z``; whole
seconds for Time, microseconds for MicroTime), for the SDK and the simulated workloads."""

from __future__ import annotations

import time
from datetime import UTC, datetime


def meta_time(ts: float | None = None) -> str:
    """``metav1.Time`` of a Unix timestamp (now when None): RFC 3339 to the second."""
    return datetime.fromtimestamp(time.time() if ts is None else ts, UTC).strftime(
        "%Y-%m-%dT%H:%M:%SZ")


def micro_time(ts: float | None = None) -> str:
    """``metav1.MicroTime`` of a Unix timestamp (now when None)."""
    return datetime.fromtimestamp(time.time() if ts is None else ts, UTC).strftime(
        "%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(value: str | None) -> float | None:
    """Seconds since the epoch of an RFC 3339 time (None when absent or malformed)."""
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None

"""``metav1.Time`` and ``metav1.MicroTime`` as the API serializes them (UTC, ``Z``; whole
seconds for Time, microseconds for MicroTime), for the SDK and the simulated workloads."""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime

_last_second: tuple[int, str] = (0, "1970-01-01T00:00:00Z")
"""The last second :func:`meta_time` formatted, with its text (one tuple, swapped whole, so
a reader in another thread never pairs one second with another's text): the simulated
controllers and kubelets stamp conditions and Events many times a second."""


def meta_time(ts: float | None = None) -> str:
    """``metav1.Time`` of a Unix timestamp (now when None): RFC 3339 to the second."""
    global _last_second
    second = math.floor(time.time() if ts is None else ts)
    last = _last_second
    if last[0] == second:
        return last[1]
    text = datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    _last_second = (second, text)
    return text


def micro_time(ts: float | None = None) -> str:
    """``metav1.MicroTime`` of a Unix timestamp (now when None): the second's text as
    :func:`meta_time` keeps it, and the microseconds rounded as ``datetime.fromtimestamp``
    rounds them (half to even; a fraction rounding up to a whole second carries)."""
    fraction, whole = math.modf(time.time() if ts is None else ts)
    if fraction < 0:  # before the epoch: the fraction counts up from the second below
        fraction, whole = fraction + 1.0, whole - 1.0
    micros = round(fraction * 1e6)
    if micros >= 1_000_000:
        micros, whole = micros - 1_000_000, whole + 1.0
    return f"{meta_time(whole)[:-1]}.{micros:06d}Z"


def parse_time(value: str | None) -> float | None:
    """Seconds since the epoch of an RFC 3339 time (None when absent or malformed)."""
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None

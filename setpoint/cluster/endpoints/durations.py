"""Timestamps as the apiserver's printers show them: ages and RFC 3339."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any


def rfc3339(value: Any) -> str:
    """A timestamp as Go's time.RFC3339 in UTC (the zero time when unset)."""
    ts = parse_time(value)
    if ts is None:
        return "0001-01-01T00:00:00Z"
    return ts.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        ts = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return ts if ts.tzinfo else ts.replace(tzinfo=UTC)


def age(value: Any, now: datetime) -> str:
    """The Age cell of a timestamp: ``<unknown>`` when unset, else a human duration."""
    ts = parse_time(value)
    if ts is None:
        return "<unknown>"
    return human_duration((now - ts).total_seconds())


def human_duration(seconds: float) -> str:
    """Kubernetes' duration.HumanDuration: ``45s``, ``2m5s``, ``3h10m``, ``5d2h``, ``2y3d``."""
    secs = int(seconds)
    if secs < -1:
        return "<invalid>"
    if secs < 0:
        return "0s"
    if secs < 120:
        return f"{secs}s"
    minutes = secs // 60
    if minutes < 10:
        s = secs % 60
        return f"{minutes}m" if s == 0 else f"{minutes}m{s}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = secs // 3600
    if hours < 8:
        m = minutes % 60
        return f"{hours}h" if m == 0 else f"{hours}h{m}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        h = hours % 24
        return f"{hours // 24}d" if h == 0 else f"{hours // 24}d{h}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        dy = (hours // 24) % 365
        years = hours // 24 // 365
        return f"{years}y" if dy == 0 else f"{years}y{dy}d"
    return f"{hours // 24 // 365}y"

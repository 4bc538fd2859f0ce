"""How a pod tells the simulated kubelet how to behave: the ``sim.setpoint.dev/`` annotations.

The simulation has no programs to run, so a pod says what its containers would do. Every
annotation is optional; without any, a pod behaves like a long-running server that is ready
as soon as it starts (a Job's pod: one that finishes successfully after ``run-for``).

=====================================  ========================================================
``sim.setpoint.dev/ready-after``       containers report ready this long after they start
``sim.setpoint.dev/ready``             ``"false"``: containers report not ready (a failing
                                       readiness probe) until the annotation goes
``sim.setpoint.dev/run-for``           containers exit by themselves after this long (default
                                       100ms for pods of Jobs, else they run until stopped)
``sim.setpoint.dev/exit-code``         the exit code when they do (default 0)
``sim.setpoint.dev/init-duration``     how long each init container runs (default 0)
``sim.setpoint.dev/stop-after``        how long containers take to exit after SIGTERM
                                       (default: the grace period, capped, see below)
``sim.setpoint.dev/exact-timing``      ``"true"``: honour grace periods and probe delays to the
                                       second instead of capping them
``sim.setpoint.dev/restart``           a request: restart these containers (comma-separated,
                                       ``*`` or empty: all); the kubelet removes it when done
``sim.setpoint.dev/pause``             hang these containers (comma-separated, ``*`` or
                                       empty: all) while it is there: the process runtime
                                       stops their processes (SIGSTOP) and continues them
                                       (SIGCONT) once it goes
``sim.setpoint.dev/fail``              fail the pod: phase Failed with this reason
``sim.setpoint.dev/fail-message``      the message that goes with it
``sim.setpoint.dev/usage-cpu``         simulated CPU usage of the pod (default 10% of requests)
``sim.setpoint.dev/usage-memory``      simulated memory usage (default 50% of requests)
=====================================  ========================================================

Durations are Go-style (``1m30s``, ``250ms``) or plain seconds (``2.5``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

PREFIX = "sim.setpoint.dev/"
READY_AFTER = PREFIX + "ready-after"
READY = PREFIX + "ready"
RUN_FOR = PREFIX + "run-for"
EXIT_CODE = PREFIX + "exit-code"
INIT_DURATION = PREFIX + "init-duration"
STOP_AFTER = PREFIX + "stop-after"
EXACT_TIMING = PREFIX + "exact-timing"
RESTART = PREFIX + "restart"
FAIL = PREFIX + "fail"
PAUSE = PREFIX + "pause"
FAIL_MESSAGE = PREFIX + "fail-message"
USAGE_CPU = PREFIX + "usage-cpu"
USAGE_MEMORY = PREFIX + "usage-memory"

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")


def parse_duration(text: str) -> float:
    """Seconds of a Go duration (``1m30s``, ``250ms``) or a plain number of seconds.
    Raises ``ValueError`` for anything else or a negative value."""
    text = text.strip()
    try:
        value = float(text)
    except ValueError:
        pos, value = 0, 0.0
        if not text:
            raise ValueError("empty duration") from None
        for match in _PART.finditer(text):
            if match.start() != pos:
                break
            value += float(match.group(1)) * _UNITS[match.group(2)]
            pos = match.end()
        if pos != len(text):
            raise ValueError(f"invalid duration {text!r}") from None
    if value < 0:
        raise ValueError(f"negative duration {text!r}")
    return value


def annotations_of(pod: Mapping[str, Any]) -> Mapping[str, str]:
    return (pod.get("metadata") or {}).get("annotations") or {}


def duration(pod: Mapping[str, Any], key: str) -> float | None:
    """The annotation ``key`` as seconds; None when absent or not a valid duration (a typo
    in an annotation must not stop the pod, as an unknown annotation would not)."""
    raw = annotations_of(pod).get(key)
    if raw is None:
        return None
    try:
        return parse_duration(raw)
    except ValueError:
        return None


def integer(pod: Mapping[str, Any], key: str) -> int | None:
    raw = annotations_of(pod).get(key)
    try:
        return int(raw) if raw is not None else None
    except ValueError:
        return None


def flag(pod: Mapping[str, Any], key: str) -> bool | None:
    """``"true"``/``"false"`` (any case) as a bool; None when absent or anything else."""
    raw = (annotations_of(pod).get(key) or "").strip().lower()
    return {"true": True, "false": False}.get(raw)


def restart_request(pod: Mapping[str, Any]) -> set[str] | None:
    """The containers a pending restart request names (``{"*"}`` for all), or None."""
    raw = annotations_of(pod).get(RESTART)
    if raw is None:
        return None
    names = {part.strip() for part in raw.split(",") if part.strip()}
    return names or {"*"}


def pause_request(pod: Mapping[str, Any]) -> set[str]:
    """The containers the pause fault names (``{"*"}`` for all); empty when none."""
    raw = annotations_of(pod).get(PAUSE)
    if raw is None:
        return set()
    return {part.strip() for part in raw.split(",") if part.strip()} or {"*"}

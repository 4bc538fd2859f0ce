"""When a simulated container reports started and ready: its probes and the pod's wishes.

A container with no probes is started and ready as soon as it runs. A startup probe holds
``started`` back for its ``initialDelaySeconds``; a readiness probe holds ``ready`` back for
its own after that (readiness is probed only once the container has started), and in both
cases the first success is seen a moment later, as with a real prober. Delays are capped by
:attr:`KubeletOptions.probe_delay_cap` unless the pod asks for exact timing. The pod can
delay readiness further (``sim.setpoint.dev/ready-after``, counted from the container's
start and never capped: the pod asked for it) or hold it back entirely
(``sim.setpoint.dev/ready: "false"``, a failing probe).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from setpoint.workloads.kubelet import annotations as ann
from setpoint.workloads.kubelet.options import KubeletOptions


def _probe_delay(probe: Any, pod: Mapping[str, Any], opts: KubeletOptions) -> float:
    if not isinstance(probe, Mapping):
        return 0.0
    delay = float(probe.get("initialDelaySeconds") or 0)
    if ann.flag(pod, ann.EXACT_TIMING) is not True:
        delay = min(delay, opts.probe_delay_cap)
    return delay + opts.first_probe_after


def startup_delay(pod: Mapping[str, Any], container: Mapping[str, Any],
                  opts: KubeletOptions) -> float:
    """Seconds from the container's start until it reports ``started``."""
    return _probe_delay(container.get("startupProbe"), pod, opts)


def readiness_delay(pod: Mapping[str, Any], container: Mapping[str, Any],
                    opts: KubeletOptions) -> float:
    """Seconds from the container's start until it first reports ready."""
    delay = startup_delay(pod, container, opts) + _probe_delay(
        container.get("readinessProbe"), pod, opts)
    wanted = ann.duration(pod, ann.READY_AFTER)
    return max(delay, wanted) if wanted is not None else delay


def held_unready(pod: Mapping[str, Any]) -> bool:
    """Whether the pod asks its containers to report not ready (a failing probe)."""
    return ann.flag(pod, ann.READY) is False

"""The simulated kubelet's knobs: time bounds, default behaviours, resource usage.

Real kubelets wait as long as a pod asks (a 30-second grace period, a probe's 60-second
initial delay). A simulation that serves tests should not, so waits are capped, unless a pod
asks for exact timing with ``sim.setpoint.dev/exact-timing: "true"``. The caps can be
changed through ``WorkloadSettings.extra`` (``kubelet.grace-cap: "5"``) or directly.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields

from setpoint.workloads.kubelet.annotations import parse_duration


@dataclass(frozen=True)
class KubeletOptions:
    """Bounds and defaults of the simulation (seconds unless said otherwise)."""

    grace_cap: float = 2.0
    """Longest simulated wait for containers to stop after SIGTERM."""
    probe_delay_cap: float = 5.0
    """Longest simulated ``initialDelaySeconds`` of readiness and startup probes."""
    first_probe_after: float = 0.05
    """When a probe's first success is seen after its initial delay: containers with a
    probe are not ready for at least this long, as with a real prober."""
    job_run_for: float = 0.1
    """How long the containers of a Job's pod run before exiting, by default."""
    backoff_base: float = 10.0
    """CrashLoopBackOff: the delay before the second restart (doubled each time after)."""
    backoff_cap: float = 300.0
    backoff_reset: float = 600.0
    """A container that ran this long has its back-off forgotten."""
    cpu_fraction: float = 0.10
    """Default simulated CPU usage: this fraction of the requests (else of the limits)."""
    memory_fraction: float = 0.50
    metrics_window: float = 15.0
    """The ``window`` reported in PodMetrics and NodeMetrics."""
    metrics_debounce: float = 0.2
    """How long the points a read made serve later reads while no pod starts or stops
    running (the points are made when metrics are read)."""
    metrics_resync: float = 60.0
    """With the process runtime (measured usage): how often, at most, a read measures every
    pod again, with a fresh timestamp (and at least once per ``metrics_window``)."""
    start_retry: float = 10.0
    """When a pod whose container could not start (``ErrImageNeverPull``) is synced again:
    pod_workers.go retries a failed sync after its ``backOffPeriod``."""
    metrics: bool = True
    """Serve metrics.k8s.io PodMetrics and NodeMetrics (the in-process metrics-server)."""
    lifecycle_events: bool = True
    """Record the Pulling/Pulled/Created/Started events of every container start, as a
    real kubelet does; scale benchmarks may turn them off (``kubelet.lifecycle-events:
    "false"``). Killing, BackOff and failures are recorded either way."""

    @classmethod
    def from_extra(cls, extra: Mapping[str, str]) -> KubeletOptions:
        """Options with overrides from ``kubelet.<option-name>`` keys (dashes for
        underscores), e.g. ``{"kubelet.grace-cap": "500ms", "kubelet.metrics": "false"}``."""
        values: dict[str, object] = {}
        for f in fields(cls):
            raw = extra.get("kubelet." + f.name.replace("_", "-"))
            if raw is None:
                continue
            if f.type in ("bool", bool):
                values[f.name] = raw.strip().lower() in ("1", "true", "yes", "on")
            else:
                values[f.name] = parse_duration(raw)
        # each value was parsed to its field's type above; a dict of them cannot say so
        return cls(**values)  # type: ignore[arg-type]

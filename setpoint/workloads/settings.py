"""What the simulated part of the embedded cluster looks like: nodes, zones, capacities."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class WorkloadSettings:
    """Settings of the nodes, scheduler, kubelets and controllers of the embedded cluster.

    ``nodes`` simulated nodes are created at start, named ``node-1`` … ``node-N`` and spread
    over ``zones`` round-robin, each with the given capacity (allocatable equals capacity).
    """

    nodes: int = 3
    node_cpu: str = "4"
    node_memory: str = "16Gi"
    node_pods: int = 110
    zones: tuple[str, ...] = ("zone-a", "zone-b", "zone-c")
    name_prefix: str = "node-"
    scheduler: bool = True
    kubelet: bool = True
    controllers: bool = True
    runtime: str = "simulated"
    heartbeat_seconds: float = 300.0
    """How often a kubelet posts its node's status when nothing in it changed: the
    KubeletConfiguration's ``nodeStatusReportFrequency`` (default 5m; a change is posted at
    once, and the node's Lease, renewed every 10 s, is its heartbeat). Each post is a Node
    event for every informer of Nodes, and the nodes grow with the pods."""
    node_lease_duration_seconds: int = 40
    """The ``leaseDurationSeconds`` of each kubelet's Lease in ``kube-node-lease``
    (KubeletConfiguration ``nodeLeaseDurationSeconds``, 40); the kubelet renews it every
    quarter of that (pkg/kubelet/kubelet.go ``nodeLeaseRenewIntervalFraction``), 10 s."""
    node_monitor_grace_period_seconds: float = 40.0
    """How long the node lifecycle controller lets a node go without a renewed Lease or a
    posted status before it marks the node's conditions ``Unknown``
    (kube-controller-manager's ``--node-monitor-grace-period``, 40s)."""
    node_monitor_period_seconds: float = 5.0
    """How often the node lifecycle controller looks at node health
    (``--node-monitor-period``, 5s): a node whose grace period ran out is marked
    ``Unknown`` at the next of these ticks, not at the instant it ran out."""
    node_startup_grace_period_seconds: float = 60.0
    """The same for a node that never posted a Ready condition, counted from its creation
    (``--node-startup-grace-period``, 60s)."""
    loopback_network: int = 0
    """With the process runtime: the block of loopback addresses the cluster claimed for its
    pods, Services and DNS (:mod:`setpoint.workloads.loopbacknet`)."""
    hpa_sync_period_seconds: float = 15.0
    """How often each HorizontalPodAutoscaler is synced (kube-controller-manager's
    ``--horizontal-pod-autoscaler-sync-period``, 15s)."""
    hpa_downscale_stabilization_seconds: float = 300.0
    """The window whose highest recommendation a scale-down keeps to
    (``--horizontal-pod-autoscaler-downscale-stabilization``, 5m)."""
    hpa_tolerance: float = 0.1
    """The usage ratio's distance from 1 below which nothing is scaled
    (``--horizontal-pod-autoscaler-tolerance``)."""
    hpa_cpu_initialization_seconds: float = 300.0
    """After a pod starts, how long its CPU sample counts only once a whole metrics window
    followed its last readiness change
    (``--horizontal-pod-autoscaler-cpu-initialization-period``, 5m)."""
    hpa_initial_readiness_delay_seconds: float = 30.0
    """After a pod starts, how long it is taken as never ready while unready
    (``--horizontal-pod-autoscaler-initial-readiness-delay``, 30s)."""
    extra: dict[str, str] = field(default_factory=dict)

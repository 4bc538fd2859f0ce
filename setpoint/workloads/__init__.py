"""Workloads on the embedded cluster: simulated nodes and kubelets, a scheduler, and the
built-in controllers (Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs, Endpoints,
volumes, disruption budgets). All of them are clients of the API server over HTTP."""

from setpoint.workloads.settings import WorkloadSettings

__all__ = ["WorkloadSettings"]

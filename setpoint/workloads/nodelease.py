"""The API objects a node's health is read from, shared by the kubelet's side
(:mod:`setpoint.workloads.nodes`: posts the Node's status, renews its Lease) and the
controller-manager's (:mod:`setpoint.workloads.nodelifecycle`: reads both)."""

from __future__ import annotations

from setpoint.client import Kind

NODE = Kind("v1", "Node")
LEASE = Kind("coordination.k8s.io/v1", "Lease")
# k8s.io/api core/v1 NamespaceNodeLease: where each kubelet's Lease, named for its node, lives
LEASE_NAMESPACE = "kube-node-lease"

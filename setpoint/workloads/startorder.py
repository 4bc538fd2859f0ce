"""What of the workloads waits until ``cluster up``'s nodes are Ready.

``cluster up`` says ready once its nodes are Ready and schedulable
(:mod:`setpoint.workloads.supervised`): the kubelets' registration and status, and the node
lifecycle controller's lift of the ``not-ready`` taint. Only the nodes area
(:data:`NODE_READINESS_AREAS`: the kubelets' node registration, heartbeats and Leases, the
node lifecycle and taint eviction controllers) is needed for that, and its informers are
three (Node, Lease, Pod); the other areas (the scheduler, the kubelets' pod workers, every
controller of kube-controller-manager) list and watch about twenty kinds more. As on a real
cluster, where kubelets register and go Ready whatever kube-controller-manager's and
kube-scheduler's caches hold, ``supervised.run_with`` starts the manager with the nodes
area alone and installs the others into the running manager once the nodes are reported
(:func:`split_areas`): each added controller lists its kinds then and runs once they have
synced (the kubelets' pod workers too: no pod runs before its volumes' sources are
known), so what was created meanwhile is handled, level-triggered. ``ready`` therefore
promises the nodes Ready and the rest starting, not synced; ``cluster up`` says "workloads
running" once they run (the child's ``running``).

A runnable marked :func:`after_nodes_ready` is not needed for nodes Ready either, and its
start costs the window before it: metrics-server issues its serving certificate, makes a
dozen requests to register its APIService, and the API server's aggregator then checks its
availability (and loads its proxy's HTTP client) on the same event loop that answers the
node writes. Its area is installed after the nodes are reported anyway; a marked runnable
of an area installed before (:func:`take_after_nodes_ready`) is held until then too; as on
a real cluster, where metrics-server is a pod that runs once a node takes it. A manager run
otherwise (``build_manager`` in tests) installs every area and starts them all at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from setpoint.runtime import Manager
    from setpoint.runtime._manager import Runnable

R = TypeVar("R")

_MARK = "_setpoint_after_nodes_ready"

NODE_READINESS_AREAS = frozenset({"setpoint.workloads.nodes"})
"""The areas that make the nodes Ready (their kubelets' node status and Leases, the node
lifecycle controller), started before ``cluster up``'s ready; the rest start after it."""


def split_areas(areas: list[str]) -> tuple[list[str], list[str]]:
    """``areas`` (in order) as those that make the nodes Ready and those installed once the
    nodes are reported."""
    return ([a for a in areas if a in NODE_READINESS_AREAS],
            [a for a in areas if a not in NODE_READINESS_AREAS])


def after_nodes_ready(runnable: R) -> R:
    """Mark a manager runnable as one that ``cluster up`` starts after its nodes are
    Ready (the runnable itself is returned, unchanged but for the mark)."""
    setattr(runnable, _MARK, True)
    return runnable


def is_after_nodes_ready(runnable: object) -> bool:
    return bool(getattr(runnable, _MARK, False))


def take_after_nodes_ready(manager: Manager) -> list[Runnable]:
    """Take ``manager``'s runnables marked :func:`after_nodes_ready` (added so far; call
    before it starts) out of it, to add to it once the nodes are reported: a runnable added
    to a running manager starts at once, and stops with it."""
    held = [r for r in manager.runnables if is_after_nodes_ready(r)]
    manager.runnables[:] = [r for r in manager.runnables if not is_after_nodes_ready(r)]
    return held

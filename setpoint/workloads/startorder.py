"""What of the workloads waits until ``cluster up``'s nodes are Ready.

``cluster up`` says ready once its nodes are Ready and schedulable
(:mod:`setpoint.workloads.supervised`): the kubelets' registration and status, the node
lifecycle controller's lift of the ``not-ready`` taint, and the scheduler, so that a pod
created then is placed. A runnable marked :func:`after_nodes_ready` is not needed for that,
and its start costs the window before it: metrics-server issues its serving certificate,
makes a dozen requests to register its APIService, and the API server's aggregator then
checks its availability (and loads its proxy's HTTP client) on the same event loop that
answers the node writes. Under ``supervised.run_with`` it is taken out of the manager
before its start and added to the running manager once the nodes are reported (Ready, or
not after the timeout); as on a real cluster, where metrics-server is a
pod that runs once a node takes it. A manager run otherwise (``build_manager`` in tests)
starts it with its other runnables, at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from setpoint.runtime import Manager
    from setpoint.runtime._manager import Runnable

R = TypeVar("R")

_MARK = "_setpoint_after_nodes_ready"


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

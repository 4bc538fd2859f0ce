"""What of the workloads waits until ``cluster up``'s nodes are Ready.

``cluster up`` says ready once its nodes are Ready and schedulable
(:mod:`setpoint.workloads.supervised`): the kubelets' registration and status, the node
lifecycle controller's lift of the ``not-ready`` taint, and the scheduler, so that a pod
created then is placed. A runnable marked :func:`after_nodes_ready` is not needed for that,
and its start costs the window before it: metrics-server issues its serving certificate,
makes a dozen requests to register its APIService, and the API server's aggregator then
checks its availability (and loads its proxy's HTTP client) on the same event loop that
answers the node writes. Under ``supervised.run_with`` it starts once the nodes are
reported (Ready, or not after the timeout); as on a real cluster, where metrics-server is a
pod that runs once a node takes it. A manager run otherwise (``build_manager`` in tests)
starts it with its other runnables, at once.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from setpoint.runtime import Manager

R = TypeVar("R")

_MARK = "_setpoint_after_nodes_ready"


def after_nodes_ready(runnable: R) -> R:
    """Mark a manager runnable as one that ``cluster up`` starts after its nodes are
    Ready (the runnable itself is returned, unchanged but for the mark)."""
    setattr(runnable, _MARK, True)
    return runnable


def is_after_nodes_ready(runnable: object) -> bool:
    return bool(getattr(runnable, _MARK, False))


class _Held:
    """A runnable that waits for ``reported`` before it runs; cancelled at the manager's
    stop like any runnable, waiting or running."""

    def __init__(self, runnable: Any, reported: asyncio.Event) -> None:
        self.runnable = runnable
        self.reported = reported

    def __repr__(self) -> str:
        return f"{self.runnable!r} (after the nodes are Ready)"

    async def __call__(self, manager: Manager) -> None:
        await self.reported.wait()
        await self.runnable(manager)


def hold_until_nodes_reported(manager: Manager, reported: asyncio.Event) -> None:
    """Make ``manager``'s runnables marked :func:`after_nodes_ready` (added so far; call
    before it starts) wait for ``reported``."""
    manager.runnables[:] = [_Held(r, reported) if is_after_nodes_ready(r) else r
                            for r in manager.runnables]

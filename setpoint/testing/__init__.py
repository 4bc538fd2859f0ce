"""``setpoint.testing``: test operators against a fresh cluster, with faults injected.

The pytest plugin (:mod:`setpoint.testing.plugin`, loaded automatically) gives tests the
``setpoint_cluster``, ``k8s``/``setpoint_client``, ``run_manager``, ``wait_for`` and
``faults`` fixtures. The pieces behind them are usable alone:

- :class:`SetpointCluster`, :func:`fresh_cluster`, :func:`namespaced_cluster`,
  :class:`ThreadedCluster`: the cluster a test works with;
- :class:`OperatorRunner`: an operator in the background (start, crash, restart, stop);
- :func:`wait_for`, :func:`wait_for_object`, :class:`WaitTimeout`: waiting, not sleeping;
- :func:`present`: an optional field the test requires set, narrowed for the type checker;
- :class:`ApiProxy`, :class:`Faults`, :class:`Rule`: a loopback proxy that injects API
  errors, throttling, latency and dropped watches, and counts requests;
- :func:`kill_container_process`: ``kill -9`` of a container's real process on the
  process runtime, behind the kubelet's back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from setpoint._lazy import lazy_exports

if TYPE_CHECKING:
    from setpoint.testing.clusters import (
        SetpointCluster,
        ThreadedCluster,
        fresh_cluster,
        namespaced_cluster,
    )
    from setpoint.testing.faults import Faults, Rule
    from setpoint.testing.present import present
    from setpoint.testing.processes import container_pids, kill_container_process
    from setpoint.testing.proxy import ApiProxy, RequestCounts
    from setpoint.testing.requestinfo import RequestInfo, request_info
    from setpoint.testing.runner import OperatorRunner
    from setpoint.testing.waiting import WaitTimeout, wait_for, wait_for_object

# Loaded on first use: pytest loads the plugin in every run of every project that has
# Setpoint installed, and most of those runs never touch a cluster.
_EXPORTS = {
    "SetpointCluster": "setpoint.testing.clusters",
    "ThreadedCluster": "setpoint.testing.clusters",
    "fresh_cluster": "setpoint.testing.clusters",
    "namespaced_cluster": "setpoint.testing.clusters",
    "Faults": "setpoint.testing.faults",
    "Rule": "setpoint.testing.faults",
    "present": "setpoint.testing.present",
    "container_pids": "setpoint.testing.processes",
    "kill_container_process": "setpoint.testing.processes",
    "ApiProxy": "setpoint.testing.proxy",
    "RequestCounts": "setpoint.testing.proxy",
    "RequestInfo": "setpoint.testing.requestinfo",
    "request_info": "setpoint.testing.requestinfo",
    "OperatorRunner": "setpoint.testing.runner",
    "WaitTimeout": "setpoint.testing.waiting",
    "wait_for": "setpoint.testing.waiting",
    "wait_for_object": "setpoint.testing.waiting",
}

__all__ = [
    "ApiProxy",
    "Faults",
    "OperatorRunner",
    "RequestCounts",
    "RequestInfo",
    "Rule",
    "SetpointCluster",
    "ThreadedCluster",
    "WaitTimeout",
    "container_pids",
    "fresh_cluster",
    "kill_container_process",
    "namespaced_cluster",
    "present",
    "request_info",
    "wait_for",
    "wait_for_object",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

"""``setpoint.testing``: test operators against a fresh cluster, with faults injected.

The pytest plugin (:mod:`setpoint.testing.plugin`, loaded automatically) gives tests the
``setpoint_cluster``, ``k8s``/``setpoint_client``, ``run_manager``, ``wait_for`` and
``faults`` fixtures. The pieces behind them are usable alone:

- :class:`SetpointCluster`, :func:`fresh_cluster`, :func:`namespaced_cluster`,
  :class:`ThreadedCluster`: the cluster a test works with;
- :class:`OperatorRunner`: an operator in the background (start, crash, restart, stop);
- :func:`wait_for`, :func:`wait_for_object`, :class:`WaitTimeout`: waiting, not sleeping;
- :class:`ApiProxy`, :class:`Faults`, :class:`Rule`: a loopback proxy that injects API
  errors, throttling, latency and dropped watches, and counts requests.
"""

from setpoint.testing.clusters import (
    SetpointCluster,
    ThreadedCluster,
    fresh_cluster,
    namespaced_cluster,
)
from setpoint.testing.faults import Faults, Rule
from setpoint.testing.proxy import ApiProxy, RequestCounts
from setpoint.testing.requestinfo import RequestInfo, request_info
from setpoint.testing.runner import OperatorRunner
from setpoint.testing.waiting import WaitTimeout, wait_for, wait_for_object

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
    "fresh_cluster",
    "namespaced_cluster",
    "request_info",
    "wait_for",
    "wait_for_object",
]

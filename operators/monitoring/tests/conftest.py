"""Fixtures for the monitoring operator's tests: a whole cluster (nodes, scheduler,
kubelets, the workload controllers, the endpoints controller) with the operator's CRDs,
and the operator itself running as its own service account with the RBAC
``setpoint generate manifests`` gives it."""

from __future__ import annotations

from collections.abc import Generator

import pytest
import pytest_asyncio

from operators.monitoring.operator import manager
from operators.monitoring.resources import (
    Alertmanager,
    Prometheus,
    PrometheusRule,
    RouteMonitor,
    ServiceMonitor,
)
from setpoint.runtime import Manager
from setpoint.testing import OperatorRunner, SetpointCluster
from setpoint.testing.plugin import ManagerLauncher


@pytest_asyncio.fixture
async def cluster(setpoint_cluster: SetpointCluster, setpoint_workloads: Manager | None
                  ) -> SetpointCluster:
    await setpoint_cluster.install(ServiceMonitor, PrometheusRule, Prometheus, Alertmanager,
                                   RouteMonitor)
    return setpoint_cluster


@pytest_asyncio.fixture
async def operator(cluster: SetpointCluster, run_manager: ManagerLauncher) -> OperatorRunner:
    return await run_manager(manager, leader_election=False, http_port=None, rbac=True)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Keep each phase's report on the test item, so a fixture can tell that the test
    failed and say what the servers said (test_real.py's ``diagnostics``)."""
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report

"""Fixtures for the stack operators' tests: a whole cluster (nodes, scheduler, kubelets,
workload controllers) with the stack's CRDs, and the operator running as its own service
account with exactly its generated RBAC."""

from __future__ import annotations

import pytest_asyncio

from operators.stack.operator import manager
from operators.stack.resources import Moodle, MysqlCluster
from setpoint.runtime import Manager
from setpoint.testing import OperatorRunner, SetpointCluster
from setpoint.testing.plugin import ManagerLauncher


@pytest_asyncio.fixture
async def cluster(setpoint_cluster: SetpointCluster, setpoint_workloads: Manager | None
                  ) -> SetpointCluster:
    await setpoint_cluster.install(MysqlCluster, Moodle)
    return setpoint_cluster


@pytest_asyncio.fixture
async def operator(cluster: SetpointCluster, run_manager: ManagerLauncher) -> OperatorRunner:
    return await run_manager(manager, leader_election=False, http_port=None, rbac=True)

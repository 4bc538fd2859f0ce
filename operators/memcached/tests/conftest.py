"""Fixtures for the memcached operator's tests: a whole cluster, the operator, kubectl.

Each test gets a fresh embedded cluster (the ``setpoint_cluster`` fixture) with its
workloads running beside it (``setpoint_workloads``: nodes, scheduler, simulated kubelets,
the StatefulSet, Deployment and ReplicaSet controllers), so pods really get scheduled and
become Ready.
Against an existing cluster (``pytest --kubeconfig=FILE``) the workloads are that
cluster's own.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_asyncio

from operators.memcached.operator import manager
from operators.memcached.resource import Memcached
from operators.memcached.tests.kubectl import Kubectl
from setpoint.runtime import Manager
from setpoint.testing import OperatorRunner, SetpointCluster
from setpoint.testing.plugin import ManagerLauncher


@pytest_asyncio.fixture
async def cluster(setpoint_cluster: SetpointCluster, setpoint_workloads: Manager | None
                  ) -> SetpointCluster:
    """A cluster with workloads and the Memcached CRD installed."""
    await setpoint_cluster.install(Memcached)
    return setpoint_cluster


@pytest_asyncio.fixture
async def operator(cluster: SetpointCluster, run_manager: ManagerLauncher) -> OperatorRunner:
    """The memcached operator, running as its own service account with exactly the RBAC
    `setpoint generate manifests` gives it (a single replica: no leader election to wait
    for after a crash, no probe port)."""
    return await run_manager(manager, leader_election=False, http_port=None, rbac=True)


@pytest.fixture
def kubectl(setpoint_cluster: SetpointCluster, tmp_path: Path) -> Kubectl:
    """kubectl with the test's kubeconfig, a fresh cache and a private HOME."""
    return Kubectl(setpoint_cluster.kubeconfig, tmp_path, setpoint_cluster.namespace)

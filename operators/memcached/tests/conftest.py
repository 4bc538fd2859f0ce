"""Fixtures for the memcached operator's tests: a whole cluster, the operator, kubectl.

Each test gets a fresh embedded cluster (the ``setpoint_cluster`` fixture) with its
workloads running beside it (nodes, scheduler, simulated kubelets, the StatefulSet,
Deployment and ReplicaSet controllers), so pods really get scheduled and become Ready.
Against an existing cluster (``pytest --kubeconfig FILE``) the workloads are that
cluster's own.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from operators.memcached.operator import manager
from operators.memcached.resource import Memcached
from setpoint.client import Client
from setpoint.runtime import Manager
from setpoint.testing import OperatorRunner, SetpointCluster
from setpoint.testing.plugin import ManagerLauncher

KUBECTL = "kubectl"


@pytest_asyncio.fixture
async def workloads(setpoint_cluster: SetpointCluster) -> AsyncIterator[Manager | None]:
    """The embedded cluster's nodes, scheduler, kubelets and controllers, running until
    the test ends (None on an external cluster, which has its own)."""
    if setpoint_cluster.embedded is None:
        yield None
        return
    from setpoint.workloads.manager import build_manager
    from setpoint.workloads.settings import WorkloadSettings

    client = Client(setpoint_cluster.config())
    running = build_manager(client, WorkloadSettings())
    await running.start()
    try:
        yield running
    finally:
        await running.stop()
        await client.close()


@pytest_asyncio.fixture
async def cluster(setpoint_cluster: SetpointCluster, workloads: Manager | None
                  ) -> SetpointCluster:
    """A cluster with workloads and the Memcached CRD installed."""
    await setpoint_cluster.install(Memcached)
    return setpoint_cluster


@pytest_asyncio.fixture
async def operator(cluster: SetpointCluster, run_manager: ManagerLauncher) -> OperatorRunner:
    """The memcached operator, running (a single replica: no leader election to wait for
    after a crash, no probe port)."""
    return await run_manager(manager, leader_election=False, http_port=None)


class Kubectl:
    """kubectl against the test's cluster only: its kubeconfig, a fresh discovery cache,
    a private HOME. Runs as a subprocess without blocking the event loop, which also
    serves the embedded cluster."""

    def __init__(self, kubeconfig: Path, workdir: Path, namespace: str) -> None:
        self.kubeconfig = kubeconfig
        self.namespace = namespace
        self.home = workdir / "home"
        self.home.mkdir(parents=True, exist_ok=True)
        self.cache = workdir / f"kube-cache-{uuid.uuid4().hex[:8]}"

    def __repr__(self) -> str:
        return f"Kubectl({self.kubeconfig}, namespace={self.namespace!r})"

    async def __call__(self, *args: str, stdin: str | None = None, ok: bool = True,
                       timeout: float = 30.0) -> str:
        """Run ``kubectl ARGS`` and return its standard output; ``ok`` asserts exit 0."""
        process = await asyncio.create_subprocess_exec(
            KUBECTL, "--kubeconfig", str(self.kubeconfig), "--cache-dir", str(self.cache),
            "--namespace", self.namespace, *args,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.home)})
        out, err = await asyncio.wait_for(
            process.communicate(stdin.encode() if stdin is not None else None), timeout)
        shown = f"kubectl {' '.join(args)}: exit {process.returncode}\n{out.decode()}\n" \
                f"{err.decode()}"
        if ok:
            assert process.returncode == 0, shown
        return out.decode()


@pytest.fixture
def kubectl(setpoint_cluster: SetpointCluster, tmp_path: Path) -> Any:
    return Kubectl(setpoint_cluster.kubeconfig, tmp_path, setpoint_cluster.namespace)

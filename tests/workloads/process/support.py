"""A cluster whose kubelet runs the process runtime, for the process runtime's tests.

Pods are bound with the ``binding`` subresource (no scheduler); the nodes' InternalIPs are
loopback addresses, as the node area registers them.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from setpoint.client import Client, load_kubeconfig
from setpoint.cluster import serve
from setpoint.runtime import Manager, ManagerSettings
from setpoint.workloads import kubelet
from setpoint.workloads.kubelet import KubeletOptions
from setpoint.workloads.kubelet.process import ProcessRuntime
from setpoint.workloads.settings import WorkloadSettings
from tests.workloads.test_kubelet_support import Env, node

FAST = KubeletOptions(grace_cap=1.0, probe_delay_cap=0.5, backoff_base=0.5, backoff_cap=4.0,
                      metrics_debounce=0.05)
INSTALL = "apt-get update && apt-get install -y"


def need(program: str, package: str) -> str:
    """The program's path, or skip the test saying exactly what installs it."""
    path = shutil.which(program)
    if path is None:
        pytest.skip(f"{program} is not installed: {INSTALL} {package}")
    return path


@contextlib.asynccontextmanager
async def process_env(tmp_path: Path, options: KubeletOptions = FAST,
                      extra: dict[str, str] | None = None) -> AsyncIterator[Env]:
    """A cluster with nodes ``node-a``/``node-b`` and a kubelet on the process runtime."""
    settings = WorkloadSettings(runtime="process", extra={
        "kubelet.root-dir": str(tmp_path / "kubelet"), "kubelet.volume-resync": "0.2s",
        **(extra or {})})
    async with serve() as cluster, Client(load_kubeconfig(cluster.kubeconfig),
                                          field_manager="kubelet") as client:
        for body in (node("node-a", "127.0.1.1"), node("node-b", "127.0.1.2")):
            await client.create(body)
        manager = Manager(client=client, settings=ManagerSettings(name="kubelet",
                                                                  record_events=True))
        workers = kubelet.install(manager, settings, options)
        env = Env(cluster, client, manager, workers)
        await manager.start()
        try:
            yield env
        finally:
            await env.manager.stop()


def runtime_of(env: Env) -> ProcessRuntime:
    runtime = env.workers.runtime
    assert isinstance(runtime, ProcessRuntime)
    return runtime

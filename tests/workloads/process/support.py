"""A cluster whose kubelet runs the process runtime, for the process runtime's tests.

Pods are bound with the ``binding`` subresource (no scheduler); the nodes' InternalIPs are
loopback addresses, as the node area registers them.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from setpoint.client import Client, load_kubeconfig
from setpoint.cluster import RunningCluster, serve
from setpoint.runtime import Manager, ManagerSettings
from setpoint.workloads import kubelet
from setpoint.workloads.kubelet import KubeletOptions
from setpoint.workloads.kubelet.process import ProcessRuntime
from setpoint.workloads.loopbacknet import claim_loopback_network
from setpoint.workloads.settings import WorkloadSettings
from tests.conftest import kubectl_path
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
    with claim_loopback_network() as network:
        settings = WorkloadSettings(runtime="process", loopback_network=network.index, extra={
            "kubelet.root-dir": str(tmp_path / "kubelet"), "kubelet.volume-resync": "0.2s",
            **(extra or {})})
        async with serve(service_cluster_ip_range=network.services) as cluster, \
                _running(cluster, settings, options) as env:
            yield env


@contextlib.asynccontextmanager
async def _running(cluster: RunningCluster, settings: WorkloadSettings,
                   options: KubeletOptions) -> AsyncIterator[Env]:
    async with Client(load_kubeconfig(cluster.kubeconfig), field_manager="kubelet") as client:
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


class Kubectl:
    """A kubectl of one version with a kubeconfig this test wrote and a fresh cache."""

    def __init__(self, env: Env, tmp: Path, version: str | None) -> None:
        self.binary = kubectl_path(version)
        self.kubeconfig = tmp / "kubeconfig"
        shutil.copyfile(env.cluster.kubeconfig, self.kubeconfig)
        self.kubeconfig.chmod(0o600)
        self.cache = tmp / f"cache-{version}"
        self.env = {**os.environ, "HOME": str(tmp)}

    async def start(self, *args: str, stdin: bool = False) -> asyncio.subprocess.Process:
        return await asyncio.create_subprocess_exec(
            self.binary, "--kubeconfig", str(self.kubeconfig), "--cache-dir", str(self.cache),
            "-n", "default", *args, env=self.env,
            stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)

    async def run(self, *args: str, stdin: bytes | None = None) -> tuple[int, str, str]:
        proc = await self.start(*args, stdin=stdin is not None)
        out, err = await asyncio.wait_for(proc.communicate(stdin), 60)
        assert proc.returncode is not None
        return proc.returncode, out.decode(), err.decode()

    async def ok(self, *args: str, stdin: bytes | None = None) -> str:
        code, out, err = await self.run(*args, stdin=stdin)
        assert code == 0, err
        return out

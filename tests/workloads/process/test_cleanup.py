"""Killing the cluster process (``kill -9``) leaves no container process behind: process
groups, PR_SET_PDEATHSIG and the reaper (setpoint/workloads/kubelet/process/spawn.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

from setpoint.client import Client, Kind, load_kubeconfig
from tests.waiting import wait_for
from tests.workloads.process.support import need

POD = Kind("v1", "Pod")


def processes_with(token: str) -> list[int]:
    """Processes whose environment carries ``token`` (children inherit it)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes()
        except OSError:
            continue
        if token.encode() in environ:
            found.append(int(entry))
    return found


def _cluster_process(kubeconfig: Path) -> subprocess.Popen[bytes]:
    """``setpoint cluster up`` on the process runtime, one node, as its own process (for the
    tests to kill with SIGKILL)."""
    return subprocess.Popen(
        [sys.executable, "-m", "setpoint.cli.main", "cluster", "up", "--memory", "--port", "0",
         "--kubeconfig", str(kubeconfig), "--runtime", "process", "--nodes", "1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


async def test_killing_the_cluster_process_leaves_no_container_process(
        tmp_path: Path) -> None:
    need("sh", "busybox")
    kubeconfig = tmp_path / "kubeconfig"
    token = f"SETPOINT_CLEANUP_{uuid.uuid4().hex}"
    cluster = _cluster_process(kubeconfig)
    try:
        await wait_for(kubeconfig.exists)
        async with Client(load_kubeconfig(kubeconfig)) as client:
            await client.create({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "sleeper", "namespace": "default"},
                "spec": {"containers": [{
                    "name": "app", "image": "busybox:1.36",
                    # a shell with children of its own: PDEATHSIG alone would miss them
                    "command": ["sh", "-c", "sleep 3600 & sleep 3600 & wait"],
                    "env": [{"name": token, "value": "1"}]}]}})

            async def running() -> bool:
                pod = await client.get(POD, "sleeper", namespace="default")
                return (pod.get("status") or {}).get("phase") == "Running" and \
                    len(processes_with(token)) >= 3
            await wait_for(running, timeout=60)
        os.kill(cluster.pid, signal.SIGKILL)
        cluster.wait()
        await wait_for(lambda: not processes_with(token))
    finally:
        if cluster.poll() is None:
            cluster.kill()
            cluster.wait()
        for pid in processes_with(token):
            os.kill(pid, signal.SIGKILL)


async def test_a_child_that_leaves_its_process_group_dies_with_its_container_and_cluster(
        tmp_path: Path) -> None:
    """A container's child that daemonizes into its own session (``setsid``) leaves the
    container's process group, but not the container: the kubelet's runtime kills it when
    the container ends, as the container's PID namespace (or cgroup) would: the kernel
    kills every member of a PID namespace when its init ends (pid_namespaces(7)), and the
    kubelet's killContainer (pkg/kubelet/kuberuntime/kuberuntime_container.go) stops the
    container as a whole. Checked for a deleted pod and for ``kill -9`` of the cluster."""
    need("setsid", "util-linux")
    kubeconfig = tmp_path / "kubeconfig"
    deleted, orphaned = (f"SETPOINT_ESCAPE_{uuid.uuid4().hex}" for _ in range(2))
    cluster = _cluster_process(kubeconfig)
    try:
        await wait_for(kubeconfig.exists)
        async with Client(load_kubeconfig(kubeconfig)) as client:
            for name, token in (("deleted", deleted), ("orphaned", orphaned)):
                await client.create({
                    "apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": name, "namespace": "default"},
                    "spec": {"terminationGracePeriodSeconds": 1, "containers": [{
                        "name": "app", "image": "busybox:1.36",
                        "command": ["sh", "-c", "setsid sleep 3600 & exec sleep 3600"],
                        "env": [{"name": token, "value": "1"}]}]}})

            async def running(name: str, token: str) -> bool:
                pod = await client.get(POD, name, namespace="default")
                return (pod.get("status") or {}).get("phase") == "Running" and \
                    len(processes_with(token)) >= 2
            await wait_for(lambda: running("deleted", deleted), timeout=60)
            await wait_for(lambda: running("orphaned", orphaned), timeout=60)
            await client.delete(POD, "deleted", namespace="default")
            await wait_for(lambda: not processes_with(deleted))
        os.kill(cluster.pid, signal.SIGKILL)
        cluster.wait()
        await wait_for(lambda: not processes_with(orphaned))
    finally:
        if cluster.poll() is None:
            cluster.kill()
            cluster.wait()
        for pid in processes_with(deleted) + processes_with(orphaned):
            os.kill(pid, signal.SIGKILL)

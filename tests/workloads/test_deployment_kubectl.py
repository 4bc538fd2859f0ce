"""kubectl against the Deployment and ReplicaSet controllers: ``rollout status``,
``rollout history``, ``rollout undo``, ``scale`` and ``get -w`` behave as on a real
cluster."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import kubectl_path
from tests.workloads.podsim import DEPLOYMENT, POD, WorkloadEnv, wait_for, workload_cluster
from tests.workloads.test_deployment import (
    CONTROLLERS,
    get_deployment,
    image_patch,
    make_deployment,
    replica_sets,
    wait_rolled_out,
)


class Kubectl:
    """kubectl with the test cluster's kubeconfig, a fresh cache and HOME, run without
    blocking the event loop the server and controllers share."""

    def __init__(self, env: WorkloadEnv, tmp: Path) -> None:
        self.binary = kubectl_path()
        self.kubeconfig = str(env.cluster.kubeconfig)
        self.cache = str(tmp / "kube-cache")
        self.env = {**os.environ, "HOME": str(tmp), "KUBECONFIG": self.kubeconfig}

    def argv(self, *args: str) -> list[str]:
        return [self.binary, "--kubeconfig", self.kubeconfig, "--cache-dir", self.cache,
                "-n", "default", *args]

    async def __call__(self, *args: str, timeout: float = 30.0) -> tuple[int, str, str]:
        proc = await asyncio.create_subprocess_exec(
            *self.argv(*args), stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=self.env)
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
        assert proc.returncode is not None
        return proc.returncode, out.decode(), err.decode()

    async def ok(self, *args: str) -> str:
        code, out, err = await self(*args)
        assert code == 0, err
        return out


@pytest.fixture
def kubectl_available() -> None:
    kubectl_path()


async def test_kubectl_rollout_status_returns_when_the_rollout_is_done(
        tmp_path: Path, kubectl_available: None) -> None:
    # pods turn ready slowly enough that kubectl, however slowly it starts, sees the wait
    async with workload_cluster(CONTROLLERS, ready_after=3.0) as env:
        kubectl = Kubectl(env, tmp_path)
        await env.client.create(make_deployment("web", replicas=4))
        out = await kubectl.ok("rollout", "status", "deployment/web", "--timeout=30s")
        assert out.strip().endswith('deployment "web" successfully rolled out')
        assert "Waiting for deployment" in out
        d = await get_deployment(env.client, "web")
        assert d["status"]["availableReplicas"] == 4


async def test_kubectl_rollout_history_and_undo(tmp_path: Path,
                                                kubectl_available: None) -> None:
    async with workload_cluster(CONTROLLERS) as env:
        kubectl = Kubectl(env, tmp_path)
        await env.client.create(make_deployment("app", replicas=2, image="nginx:1"))
        await wait_rolled_out(env.client, "app")
        await env.client.patch(DEPLOYMENT, "app", {
            "metadata": {"annotations": {"kubernetes.io/change-cause": "image to 2"}},
            **image_patch("nginx:2")}, namespace="default")
        await kubectl.ok("rollout", "status", "deployment/app", "--timeout=30s")

        history = await kubectl.ok("rollout", "history", "deployment/app")
        lines = [line.split(None, 1) for line in history.splitlines()[2:] if line.strip()]
        assert lines == [["1", "<none>"], ["2", "image to 2"]], history
        detail = await kubectl.ok("rollout", "history", "deployment/app", "--revision=1")
        assert "nginx:1" in detail and "pod-template-hash" in detail

        out = await kubectl.ok("rollout", "undo", "deployment/app")
        assert out.strip() == "deployment.apps/app rolled back"
        await kubectl.ok("rollout", "status", "deployment/app", "--timeout=30s")
        d = await get_deployment(env.client, "app")
        assert d["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1"
        assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"
        second, first = await replica_sets(env.client, "app")  # by revision: 2, 3
        assert first["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1"
        # the first ReplicaSet serves again, as revision 3, remembering it was 1
        notes = first["metadata"]["annotations"]
        assert notes["deployment.kubernetes.io/revision"] == "3"
        assert notes["deployment.kubernetes.io/revision-history"] == "1"
        assert first["spec"]["replicas"] == 2 and second["spec"]["replicas"] == 0
        history = await kubectl.ok("rollout", "history", "deployment/app")
        revisions = [line.split()[0] for line in history.splitlines()[2:] if line.strip()]
        assert revisions == ["2", "3"]

        code, out, err = await kubectl("rollout", "undo", "deployment/app",
                                       "--to-revision=9")
        assert code != 0 and "unable to find specified revision 9 in history" in err


async def test_kubectl_scale_deployment(tmp_path: Path, kubectl_available: None) -> None:
    async with workload_cluster(CONTROLLERS) as env:
        kubectl = Kubectl(env, tmp_path)
        await env.client.create(make_deployment("api", replicas=2))
        await wait_rolled_out(env.client, "api")
        out = await kubectl.ok("scale", "deployment", "api", "--replicas=5")
        assert out.strip() == "deployment.apps/api scaled"
        d = await wait_rolled_out(env.client, "api")
        assert d["status"]["readyReplicas"] == 5
        [rs] = await replica_sets(env.client, "api")
        assert rs["spec"]["replicas"] == 5
        await kubectl.ok("scale", "deployment", "api", "--replicas=1")
        d = await wait_rolled_out(env.client, "api")
        assert d["status"]["replicas"] == 1


async def test_kubectl_get_watch_shows_the_deployment_becoming_ready(
        tmp_path: Path, kubectl_available: None) -> None:
    # Pods stay unready until the test has seen kubectl print the 0/3 row, however late
    # kubectl starts; then they become ready and the 3/3 row must follow.
    may_be_ready = False
    async with workload_cluster(CONTROLLERS, ready=lambda pod: may_be_ready) as env:
        kubectl = Kubectl(env, tmp_path)
        proc = await asyncio.create_subprocess_exec(
            *kubectl.argv("get", "deployments", "-w"), stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=kubectl.env)
        try:
            await env.client.create(make_deployment("watched", replicas=3))
            assert proc.stdout is not None
            seen: list[str] = []

            def row_reads(ready: str) -> Callable[[], Awaitable[bool]]:
                async def next_row() -> bool:
                    assert proc.stdout is not None
                    line = (await proc.stdout.readline()).decode()
                    seen.append(line)
                    return line.split()[:2] == ["watched", ready]
                return next_row

            await wait_for(row_reads("0/3"))

            async def all_running_unready() -> list[dict[str, Any]]:
                pods = (await env.client.list(POD, namespace="default")).items
                running = [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]
                return running if len(running) == 3 else []

            pods = await wait_for(all_running_unready)
            may_be_ready = True
            for pod in pods:
                await env.pods.make_ready(pod)
            await wait_for(row_reads("3/3"))
            assert seen[0].split()[:4] == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE"]
        finally:
            proc.kill()
            await proc.wait()

"""Simulated resource usage, served as metrics.k8s.io v1beta1 by the workloads'
metrics-server (from memory, as kubernetes-sigs/metrics-server serves its scrapes) and read
by kubectl top."""

from __future__ import annotations

import asyncio
import os
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from setpoint.client import NotFoundError, ServiceUnavailableError
from setpoint.runtime import Manager
from setpoint.workloads.kubelet import MetricsPublisher
from tests.conftest import kubectl_path
from tests.waiting import quiet_period
from tests.workloads.metrics_server_support import MetricsReader, metrics_env
from tests.workloads.test_kubelet_support import FAST, POD, Env, kubelet_env, pod, ready, wait_for

Obj = dict[str, Any]
PODS = "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods"
NODES = "/apis/metrics.k8s.io/v1beta1/nodes"


def with_requests(name: str, cpu: str, memory: str, **labels: str) -> Obj:
    body = pod(name)
    body["metadata"]["labels"] = labels
    body["spec"]["containers"][0]["resources"] = {"requests": {"cpu": cpu, "memory": memory}}
    return body


async def _listed(reader: MetricsReader, path: str, count: int) -> list[list[Obj]] | None:
    """``[items]`` once there are ``count`` items (wrapped: true even when empty)."""
    items = (await reader.get(path)).get("items") or []
    return [items] if len(items) == count else None


async def test_pod_metrics_have_metrics_server_shape_and_default_usage(tmp_path: Path) -> None:
    async with metrics_env() as (env, reader):
        await env.run(with_requests("web", "200m", "256Mi", app="web"))
        await env.until("web", ready)
        [items] = await wait_for(lambda: _listed(reader, PODS, 1))
        metrics = items[0]
        assert metrics["kind"] == "PodMetrics"
        assert metrics["metadata"]["labels"] == {"app": "web"}
        assert metrics["window"] == "15s"
        assert metrics["timestamp"].endswith("Z")
        # 10% of the CPU request, 50% of the memory request
        assert metrics["containers"] == [{"name": "app", "usage": {"cpu": "20000000n",
                                                                   "memory": "131072Ki"}}]
        one = await reader.get(f"{PODS}/web")
        assert one["containers"] == metrics["containers"]


async def test_node_metrics_add_up_the_pods_on_the_node(tmp_path: Path) -> None:
    async with metrics_env() as (env, reader):
        await env.run(with_requests("a", "1", "1Gi"))
        await env.run(with_requests("b", "1", "1Gi"))
        await env.until("a", ready)
        await env.until("b", ready)

        async def node_a() -> Obj | None:
            try:
                got = await reader.get(f"{NODES}/node-a")
            except NotFoundError:  # the kubelets publish node metrics a moment later
                return None
            return got if got["usage"]["cpu"] == "250000000n" else None  # 2x100m + 50m

        got = await wait_for(node_a)
        assert got["usage"]["memory"] == f"{(1024 + 256) * 1024}Ki"
        assert got["metadata"]["labels"] == {"kubernetes.io/hostname": "node-a"}


async def test_metrics_of_a_deleted_pod_go_away(tmp_path: Path) -> None:
    async with metrics_env() as (env, reader):
        await env.run(pod("short"))
        await env.until("short", ready)
        await wait_for(lambda: _listed(reader, PODS, 1))
        await env.client.delete(POD, "short", namespace="default",
                                grace_period_seconds=0)
        assert await wait_for(lambda: _listed(reader, PODS, 0)) == [[]]


QUIET_PERIOD_TO_PROVE_NO_REWRITE = 1.5
"""Thirty resync periods of the options below: long enough for a rewrite to show."""


async def test_usage_is_kept_in_memory_and_costs_no_api_writes(tmp_path: Path) -> None:
    """metrics-server writes nothing to the API server: it keeps its scrapes in memory and
    serves them (kubernetes-sigs/metrics-server pkg/storage/pod.go, pkg/api/pod.go). The
    kubelets' usage is served the same way: no request of theirs touches metrics.k8s.io
    (they were PodMetrics/NodeMetrics objects, written as pods changed), and unchanged
    simulated usage keeps the timestamp of when it was last measured within a window."""
    options = replace(FAST, metrics_resync=0.05)
    async with metrics_env(options) as (env, reader):
        await env.run(with_requests("steady", "100m", "64Mi"))
        await env.until("steady", ready)
        [items] = await wait_for(lambda: _listed(reader, PODS, 1))
        await quiet_period(QUIET_PERIOD_TO_PROVE_NO_REWRITE)
        again = await reader.get(f"{PODS}/steady")
        assert again["timestamp"] == items[0]["timestamp"]
        assert again["containers"] == items[0]["containers"]
        # the kubelets' client is the test's too: its reads of the metrics are no writes
        assert [r.path for r in env.requests if r.method != "GET"
                and r.path.startswith("/apis/metrics.k8s.io")] == []


async def test_unchanged_simulated_usage_is_measured_again_each_window() -> None:
    """metrics-server scrapes every resolution period, so a point's timestamp advances even
    when the usage does not; the HPA controller relies on it (kubernetes
    pkg/controller/podautoscaler/replica_calculator.go groupPods: a pod's CPU counts once a
    sample was taken a whole window after its readiness changed)."""
    options = replace(FAST, metrics_window=0.5)
    async with metrics_env(options) as (env, reader):
        await env.run(with_requests("steady", "100m", "64Mi"))
        await env.until("steady", ready)
        [items] = await wait_for(lambda: _listed(reader, PODS, 1))
        first = items[0]

        async def measured_again() -> Obj | None:
            again: Obj = await reader.get(f"{PODS}/steady")
            return again if again["timestamp"] > first["timestamp"] else None
        again = await wait_for(measured_again)
        assert again["containers"] == first["containers"]
        assert again["window"] == "0.5s"


async def test_metrics_are_made_when_read_not_each_time_a_pod_changes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """metrics-server makes its points per scrape, not per change of a pod; here they are
    made when read (setpoint/workloads/kubelet/metrics.py): pods that start cost no walk
    over every pod, which made the workloads' CPU grow with pods times changes (issue 12,
    docs/benchmarks.md, Workloads, fifth pass: 10,000 pods)."""
    made: list[int] = []
    desired = MetricsPublisher.desired

    def counted(self: MetricsPublisher, manager: Manager) -> dict[Any, Any]:
        made.append(len(self.workers.records))
        return desired(self, manager)

    monkeypatch.setattr(MetricsPublisher, "desired", counted)
    async with metrics_env() as (env, reader):
        names = [f"p{i}" for i in range(4)]
        for name in names:
            await env.run(pod(name))
        for name in names:
            await env.until(name, ready)
        assert made == []  # four pods started and nobody read their metrics
        await wait_for(lambda: _listed(reader, PODS, len(names)))
        assert made


async def test_a_restarted_workloads_process_is_served_again() -> None:
    """A new workloads process has a new port and a new CA: it rewrites the Endpoints and
    the APIService's caBundle (setpoint/workloads/metricsserver/registration.py), and the
    aggregator reaches it with them, as after a metrics-server pod is replaced."""
    async with metrics_env() as (env, reader):
        await env.run(with_requests("kept", "100m", "64Mi"))
        await env.until("kept", ready)
        await wait_for(lambda: _listed(reader, PODS, 1))
        await env.restart_kubelet()
        [items] = await wait_for(lambda: _listed_through_the_api_server(env, PODS, 1))
        assert items[0]["metadata"]["name"] == "kept"


def _kubectl(env: Env, tmp: Path, *args: str) -> str:
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    proc = subprocess.run(
        [kubectl_path(), "--kubeconfig", str(env.cluster.kubeconfig),
         "--cache-dir", str(tmp / "cache"), *args],
        capture_output=True, text=True, timeout=60, check=False,
        env={"HOME": str(home), "PATH": os.environ.get("PATH", "")})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


async def test_kubectl_top_pods_and_nodes(tmp_path: Path) -> None:
    async with kubelet_env() as env:
        await env.run(with_requests("web", "500m", "512Mi"))
        await env.run(pod("idle", annotations={"sim.setpoint.dev/usage-cpu": "3m",
                                               "sim.setpoint.dev/usage-memory": "20Mi"}),
                      "node-b")
        await env.until("web", ready)
        await env.until("idle", ready)
        await wait_for(lambda: _listed_through_the_api_server(env, PODS, 2))
        top_pods = await asyncio.to_thread(_kubectl, env, tmp_path, "top", "pods")
        lines = [line.split() for line in top_pods.strip().splitlines()]
        assert lines[0] == ["NAME", "CPU(cores)", "MEMORY(bytes)"]
        assert sorted(lines[1:]) == [["idle", "3m", "20Mi"], ["web", "50m", "256Mi"]]
        top_nodes = await asyncio.to_thread(_kubectl, env, tmp_path, "top", "nodes")
        lines = [line.split() for line in top_nodes.strip().splitlines()]
        assert lines[0] == ["NAME", "CPU(cores)", "CPU(%)", "MEMORY(bytes)", "MEMORY(%)"]
        by_node = {line[0]: line[1:] for line in lines[1:]}
        assert by_node["node-a"] == ["100m", "2%", "512Mi", "3%"]  # 50m+50m of 4 CPUs
        assert by_node["node-b"] == ["53m", "1%", "276Mi", "1%"]
        # kubectl get asks for a Table, which metrics-server converts (pkg/api/table.go)
        got = await asyncio.to_thread(_kubectl, env, tmp_path, "get", "podmetrics", "web")
        assert [line.split() for line in got.strip().splitlines()] == [
            ["NAME", "CPU", "MEMORY", "WINDOW"], ["web", "50m", "256Mi", "15s"]]


async def _listed_through_the_api_server(env: Env, path: str, count: int
                                         ) -> list[list[Obj]] | None:
    """As :func:`_listed`, through the API server's aggregator."""
    try:
        items = (await env.client.request("GET", path)).get("items") or []
    except ServiceUnavailableError:  # until the APIService is Available
        return None
    return [items] if len(items) == count else None

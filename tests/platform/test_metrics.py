"""``setpoint metrics``: a stack's figures (requests, limits, metrics.k8s.io usage, PVC
storage) and the Prometheus exporter for chargeback, parsed by prometheus_client's parser.

PodMetrics has metrics-server's shape (k8s.io/metrics pkg/apis/metrics/v1beta1 types.go);
the exposition format is Prometheus's text format 0.0.4.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import sys
from typing import Any

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from setpoint.client import Client, Kind
from setpoint.platform.usage import quantity
from tests.platform.stacks import obj

POD_METRICS = Kind("metrics.k8s.io/v1beta1", "PodMetrics")
POD = Kind("v1", "Pod")
PVC = Kind("v1", "PersistentVolumeClaim")


async def _run(cluster: Any, *args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "setpoint.cli.main", "metrics", *args,
        "--kubeconfig", str(cluster.kubeconfig),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def _web_stack(k8s: Client, wait_for: Any) -> list[dict[str, Any]]:
    await k8s.create(obj("v1", "PersistentVolumeClaim", "data", spec={
        "accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "2Gi"}}}))
    container = {"name": "app", "image": "nginx", "resources": {
        "requests": {"cpu": "250m", "memory": "64Mi"},
        "limits": {"cpu": "500m", "memory": "128Mi"}}}
    sidecar = {"name": "log", "image": "busybox", "resources": {"limits": {"cpu": "100m",
                                                                           "memory": "32Mi"}}}
    await k8s.create(obj("apps/v1", "Deployment", "web", spec={
        "replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": {
            "metadata": {"labels": {"app": "web"}}, "spec": {
                "containers": [container, sidecar],
                "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]}}}))
    await k8s.create(obj("apps/v1", "Deployment", "other", spec={
        "replicas": 1, "selector": {"matchLabels": {"app": "other"}}, "template": {
            "metadata": {"labels": {"app": "other"}}, "spec": {"containers": [container]}}}))

    async def measured() -> list[dict[str, Any]] | None:
        pods = [p for p in (await k8s.list(POD)).items
                if p["metadata"]["labels"].get("app") == "web"]
        found = {m["metadata"]["name"] for m in (await k8s.list(POD_METRICS)).items
                 if len(m.get("containers") or ()) == 2}
        bound = (await k8s.get(PVC, "data")).get("status", {}).get("phase") == "Bound"
        ok = len(pods) == 2 and bound and {p["metadata"]["name"] for p in pods} <= found
        return pods if ok else None

    return await wait_for(measured)  # type: ignore[no-any-return]


async def test_a_stacks_figures_in_each_format(
        setpoint_cluster: Any, setpoint_workloads: Any, k8s: Client, wait_for: Any) -> None:
    pods = await _web_stack(k8s, wait_for)

    code, out, err = await _run(setpoint_cluster, "deployment", "web", "-o", "json")
    assert code == 0, err
    data = json.loads(out)
    assert {p["name"] for p in data["pods"]} == {p["metadata"]["name"] for p in pods}
    total = data["total"]
    # requests: 2 x (250m + the sidecar's limit standing for its request, 100m)
    assert total["cpu_requests"] == 0.7 and total["cpu_limits"] == 1.2
    assert total["memory_requests"] == 2 * (64 + 32) * 2**20
    assert total["memory_limits"] == 2 * (128 + 32) * 2**20
    assert data["storageBytes"] == 2 * 2**30
    # usage is metrics.k8s.io's, summed over the stack's containers
    assert total["cpu_usage"] == sum(c["cpu_usage"] for p in data["pods"]
                                     for c in p["containers"]) > 0
    assert total["memory_usage"] == sum(p["total"]["memory_usage"] for p in data["pods"]) > 0

    code, out, err = await _run(setpoint_cluster, "deployment", "web", "-o", "prometheus")
    assert code == 0, err
    families = {f.name: f for f in text_string_to_metric_families(out)}
    assert "# HELP setpoint_stack_cpu_usage_cores" in out
    assert "# TYPE setpoint_stack_cpu_usage_cores gauge" in out
    (sample,) = families["setpoint_stack_cpu_requests_cores"].samples
    assert sample.labels == {"kind": "Deployment", "namespace": "default", "name": "web"}
    assert sample.value == 0.7
    assert families["setpoint_stack_storage_bytes"].samples[0].value == 2 * 2**30
    assert families["setpoint_stack_pods"].samples[0].value == 2

    code, out, err = await _run(setpoint_cluster, "deployment", "web")
    assert code == 0, err
    assert out.startswith("Stack Deployment/default/web\n")
    assert "TOTAL" in out and "700m" in out and "1200m" in out and "STORAGE 2.0Gi" in out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_serve_exposes_every_stack_and_accumulates_cpu_and_byte_seconds(
        setpoint_cluster: Any, setpoint_workloads: Any, k8s: Client, wait_for: Any) -> None:
    await _web_stack(k8s, wait_for)
    port = _free_port()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "setpoint.cli.main", "metrics", "--serve", f"127.0.0.1:{port}",
        "--interval", "0.2", "--kubeconfig", str(setpoint_cluster.kubeconfig),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
    try:
        async def charged() -> dict[str, Any] | None:
            try:
                async with aiohttp.ClientSession() as session, \
                        session.get(f"http://127.0.0.1:{port}/metrics") as resp:
                    text = await resp.text()
            except aiohttp.ClientError:
                return None
            families = {f.name: f for f in text_string_to_metric_families(text)}
            cpu = families.get("setpoint_stack_cpu_seconds")
            web = [s for s in cpu.samples if s.labels.get("name") == "web"] if cpu else []
            return {"text": text, "families": families} if web and web[0].value > 0 else None

        found = await wait_for(charged)
        families = found["families"]
        assert "# TYPE setpoint_stack_cpu_seconds_total counter" in found["text"]
        roots = {(s.labels["kind"], s.labels["name"])
                 for s in families["setpoint_stack_memory_usage_bytes"].samples}
        assert {("Deployment", "web"), ("Deployment", "other")} <= roots
        # ReplicaSets and Pods are owned: not roots
        assert not any(kind in ("ReplicaSet", "Pod") for kind, _ in roots)
        byte_seconds = [s for s in families["setpoint_stack_memory_byte_seconds"].samples
                        if s.labels["name"] == "web" and s.name.endswith("_total")]
        assert byte_seconds[0].value > 0
    finally:
        proc.terminate()
        await proc.wait()


async def test_serve_refuses_an_address_that_is_not_loopback(setpoint_cluster: Any) -> None:
    code, _, err = await _run(setpoint_cluster, "--serve", "0.0.0.0:9")
    assert code == 2
    assert "is not a loopback address" in err


def test_quantities_in_base_units() -> None:
    assert quantity("250m") == 0.25 and quantity("64Mi") == 64 * 2**20
    assert quantity("1G") == 1e9 and quantity(None) == 0 and quantity("bogus") == 0


async def test_the_prometheus_output_passes_promtool_check_metrics(
        setpoint_cluster: Any, setpoint_workloads: Any, k8s: Client, wait_for: Any) -> None:
    """Prometheus's own linter (``promtool check metrics``: HELP and TYPE on every family,
    base units in names, counters ending ``_total``) finds nothing in the exposition."""
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed: apt-get install -y prometheus")
    await _web_stack(k8s, wait_for)
    code, out, err = await _run(setpoint_cluster, "deployment", "web", "-o", "prometheus")
    assert code == 0, err
    proc = await asyncio.create_subprocess_exec(
        promtool, "check", "metrics", stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    lint_out, lint_err = await asyncio.wait_for(proc.communicate(out.encode()), 60)
    assert proc.returncode == 0, (lint_out + lint_err).decode()
    assert not (lint_out + lint_err).strip(), (lint_out + lint_err).decode()

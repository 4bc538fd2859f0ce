"""``setpoint cluster up`` says ready, and writes its kubeconfig, only once its nodes are
Ready: real kubectl, run the moment the command prints so, lists every node Ready and
without the not-ready taint (as
``kind create cluster --wait`` waits for the control-plane node's Ready condition:
sigs.k8s.io/kind pkg/cluster/internal/create/actions/waitforready/waitforready.go)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.conftest import kubectl_path


async def until_ready(process: subprocess.Popen[str]) -> list[str]:
    """What ``cluster up`` printed up to its last line once ready."""
    assert process.stdout is not None
    lines: list[str] = []
    while not lines or lines[-1] != "Press Ctrl+C to stop.\n":
        line = await asyncio.wait_for(asyncio.to_thread(process.stdout.readline), 60)
        assert line, f"cluster up ended: {lines}"
        lines.append(line)
    return lines


async def test_kubectl_get_nodes_right_after_ready_shows_them_ready(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    env = {**os.environ, "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data")}
    env.pop("KUBECONFIG", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "setpoint.cli.main", "cluster", "up", "--memory", "--port", "0",
         "--nodes", "3", "--kubeconfig", str(kubeconfig)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        lines = await until_ready(process)
        got = subprocess.run(
            [kubectl_path(), "--kubeconfig", str(kubeconfig), "--cache-dir",
             str(tmp_path / "cache"), "get", "nodes", "-o", "json"],
            capture_output=True, text=True, timeout=60, check=True)
        nodes = json.loads(got.stdout)["items"]
        assert sorted(n["metadata"]["name"] for n in nodes) == ["node-1", "node-2", "node-3"]
        for node in nodes:
            (ready,) = [c for c in node["status"]["conditions"] if c["type"] == "Ready"]
            assert ready["status"] == "True", node["metadata"]["name"]
            # and schedulable: the not-ready:NoSchedule taint every node is created with
            # (plugin/pkg/admission/nodetaint/admission.go) is lifted by the node lifecycle
            # controller (node_lifecycle_controller.go doNoScheduleTaintingPass)
            assert not [t for t in node["spec"].get("taints") or ()
                        if t["key"] == "node.kubernetes.io/not-ready"], node["spec"]
        assert f"kubeconfig: {kubeconfig}\n" in lines and "ready\n" in lines
        assert oct(kubeconfig.stat().st_mode & 0o777) == "0o600"
    finally:
        process.send_signal(signal.SIGTERM)
        out, err = await asyncio.to_thread(process.communicate, timeout=30)
    assert process.returncode == 0, err
    assert out.endswith("stopped\n")


DEPLOYMENT = {
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "at-ready", "namespace": "default"},
    "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "at-ready"}},
             "template": {"metadata": {"labels": {"app": "at-ready"}},
                          "spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
}


async def test_a_deployment_created_at_ready_becomes_available_and_top_answers_after(
        tmp_path: Path) -> None:
    """What waits until the nodes are reported (metrics-server's start:
    setpoint/workloads/startorder.py) is not what a workload needs: a Deployment applied
    with real kubectl the moment ``cluster up`` says ready is scheduled and becomes
    available (the controllers and the scheduler, started once the nodes are reported, list
    it when their caches fill), and metrics-server
    then registers, so ``kubectl top nodes`` answers (after its first usage window) without
    anything else being done."""
    from tests.waiting import wait_for

    kubeconfig = tmp_path / "kubeconfig"
    env = {**os.environ, "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data")}
    env.pop("KUBECONFIG", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "setpoint.cli.main", "cluster", "up", "--memory", "--port", "0",
         "--kubeconfig", str(kubeconfig)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)

    def kubectl(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [kubectl_path(), "--kubeconfig", str(kubeconfig), "--cache-dir",
             str(tmp_path / "cache"), *args],
            input=stdin, capture_output=True, text=True, timeout=60)

    try:
        await until_ready(process)
        applied = kubectl("apply", "-f", "-", stdin=json.dumps(DEPLOYMENT))
        assert applied.returncode == 0, applied.stderr

        def available() -> bool:
            got = kubectl("get", "deployment", "at-ready", "-o", "json")
            status = json.loads(got.stdout).get("status") or {} if got.returncode == 0 else {}
            return status.get("availableReplicas") == 2

        await wait_for(lambda: asyncio.to_thread(available), 60)
        pods = json.loads(kubectl("get", "pods", "-l", "app=at-ready", "-o", "json").stdout)
        assert all(p["spec"].get("nodeName", "").startswith("node-") for p in pods["items"])

        def top_nodes() -> str | None:
            got = kubectl("top", "nodes", "--no-headers")
            return got.stdout if got.returncode == 0 else None

        top = await wait_for(lambda: asyncio.to_thread(top_nodes), 90)
        assert sorted(row.split()[0] for row in top.splitlines()) == \
            ["node-1", "node-2", "node-3"]
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = await asyncio.to_thread(process.communicate, timeout=30)
    assert process.returncode == 0, err

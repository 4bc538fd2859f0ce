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


async def test_kubectl_get_nodes_right_after_ready_shows_them_ready(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    env = {**os.environ, "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data")}
    env.pop("KUBECONFIG", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "setpoint.cli.main", "cluster", "up", "--memory", "--port", "0",
         "--nodes", "3", "--kubeconfig", str(kubeconfig)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert process.stdout is not None
        lines: list[str] = []
        while not lines or lines[-1] != "Press Ctrl+C to stop.\n":
            line = await asyncio.wait_for(asyncio.to_thread(process.stdout.readline), 60)
            assert line, f"cluster up ended: {lines}"
            lines.append(line)
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

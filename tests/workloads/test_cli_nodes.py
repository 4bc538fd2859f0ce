"""``setpoint node …`` and ``setpoint cluster up --nodes``: the command lines over a cluster."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from setpoint.cli.main import cli
from setpoint.client import Client, Kind, load_kubeconfig
from setpoint.cluster import RunningCluster, serve
from setpoint.workloads import nodes
from setpoint.workloads.settings import WorkloadSettings
from tests.waiting import wait_for

NODE = Kind("v1", "Node")
# what TaintNodesByCondition admission gives every node created (the fixture's cluster runs
# no node lifecycle controller to lift it)
NOT_READY = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}


@pytest.fixture
async def cluster() -> AsyncIterator[RunningCluster]:
    async with serve() as running:
        async with Client(load_kubeconfig(running.kubeconfig)) as client:
            await nodes.register_nodes(client, WorkloadSettings(nodes=2))
        yield running


async def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    """Run the CLI in a thread (it runs its own event loop) while the server serves."""
    runner = CliRunner()
    return await asyncio.to_thread(runner.invoke, cli, list(args), env=env)


async def get_node(cluster: RunningCluster, name: str) -> Any:
    async with Client(load_kubeconfig(cluster.kubeconfig)) as client:
        return await client.get(NODE, name)


async def test_node_add_with_resources_zone_labels_and_taints(cluster: RunningCluster) -> None:
    result = await invoke("node", "add", "--cpu", "2", "--memory", "4Gi", "--pods", "20",
                          "--zone", "zone-x", "--label", "disk=ssd",
                          "--taint", "gpu=yes:NoSchedule", "--kubeconfig",
                          str(cluster.kubeconfig))
    assert result.exit_code == 0, result.output
    assert result.output == "node/node-3 added\n"
    node = await get_node(cluster, "node-3")
    assert node["status"]["allocatable"] == {**node["status"]["allocatable"], "cpu": "2",
                                             "memory": "4Gi", "pods": "20"}
    assert node["metadata"]["labels"]["topology.kubernetes.io/zone"] == "zone-x"
    assert node["metadata"]["labels"]["disk"] == "ssd"
    # TaintNodesByCondition (plugin/pkg/admission/nodetaint/admission.go) appends
    # not-ready:NoSchedule; with no node lifecycle controller running it stays
    assert node["spec"]["taints"] == [{"key": "gpu", "value": "yes", "effect": "NoSchedule"},
                                      NOT_READY]


async def test_cordon_taint_and_readiness_use_kubeconfig_from_the_environment(
        cluster: RunningCluster) -> None:
    env = {"KUBECONFIG": str(cluster.kubeconfig)}
    assert (await invoke("node", "cordon", "node-1", env=env)).output == "node/node-1 cordoned\n"
    assert (await get_node(cluster, "node-1"))["spec"]["unschedulable"] is True
    assert (await invoke("node", "uncordon", "node-1", env=env)).exit_code == 0
    assert not (await get_node(cluster, "node-1"))["spec"].get("unschedulable")

    result = await invoke("node", "taint", "node-2", "a=b:NoSchedule", "c:NoExecute", env=env)
    assert result.exit_code == 0, result.output
    taints = (await get_node(cluster, "node-2"))["spec"]["taints"]
    assert {(t["key"], t["effect"]) for t in taints} == {
        ("a", "NoSchedule"), ("c", "NoExecute"), (NOT_READY["key"], "NoSchedule")}
    assert (await invoke("node", "taint", "node-2", "a-", "c:NoExecute-", env=env)).exit_code == 0
    assert (await get_node(cluster, "node-2"))["spec"]["taints"] == [NOT_READY]

    assert (await invoke("node", "notready", "node-2", env=env)).exit_code == 0
    annotations = (await get_node(cluster, "node-2"))["metadata"]["annotations"]
    assert annotations[nodes.READY_ANNOTATION] == nodes.GONE
    assert (await invoke("node", "notready", "node-2", "--mode", "not-ready",
                         env=env)).exit_code == 0
    annotations = (await get_node(cluster, "node-2"))["metadata"]["annotations"]
    assert annotations[nodes.READY_ANNOTATION] == nodes.NOT_READY
    assert (await invoke("node", "ready", "node-2", env=env)).exit_code == 0
    annotations = (await get_node(cluster, "node-2"))["metadata"]["annotations"]
    assert nodes.READY_ANNOTATION not in annotations


async def test_user_mistakes_get_one_clean_line(cluster: RunningCluster,
                                                tmp_path: Path) -> None:
    kubeconfig = str(cluster.kubeconfig)
    missing = await invoke("node", "cordon", "nope", "--kubeconfig", kubeconfig)
    assert missing.exit_code == 1
    assert missing.output == 'error: nodes "nope" not found\n'
    taken = await invoke("node", "add", "node-1", "--kubeconfig", kubeconfig)
    assert taken.exit_code == 1 and taken.output == 'error: nodes "node-1" already exists\n'
    bad_taint = await invoke("node", "taint", "node-1", "k=v:Sometimes",
                             "--kubeconfig", kubeconfig)
    assert bad_taint.exit_code == 2
    assert "invalid taint effect: Sometimes" in bad_taint.output
    bad_cpu = await invoke("node", "add", "--cpu", "lots", "--kubeconfig", kubeconfig)
    assert bad_cpu.exit_code == 2 and "'lots' is not a quantity" in bad_cpu.output
    absent = await invoke("node", "cordon", "node-1", "--kubeconfig",
                          str(tmp_path / "none.yaml"))
    assert absent.output == f"error: kubeconfig {tmp_path / 'none.yaml'} does not exist\n"


# -- setpoint cluster up -----------------------------------------------------------------------

def _start(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data")}
    env.pop("KUBECONFIG", None)
    return subprocess.Popen(
        [sys.executable, "-m", "setpoint.cli.main", "cluster", "up", "--memory", "--port", "0",
         "--kubeconfig", str(tmp_path / "kubeconfig"), *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


async def _read_until(process: subprocess.Popen[str], marker: str) -> list[str]:
    assert process.stdout is not None
    lines: list[str] = []
    while not any(marker in line for line in lines):
        line = await asyncio.wait_for(asyncio.to_thread(process.stdout.readline), 30)
        if not line:
            stderr = process.stderr.read() if process.stderr else ""
            raise AssertionError(f"cluster up ended: {lines} {stderr}")
        lines.append(line)
    return lines


async def _stop(process: subprocess.Popen[str]) -> str:
    process.send_signal(signal.SIGTERM)
    out, err = await asyncio.to_thread(process.communicate, timeout=30)
    assert process.returncode == 0, err
    return out


async def test_cluster_up_runs_the_nodes_and_stops_them_cleanly(tmp_path: Path) -> None:
    process = _start(tmp_path, "--nodes", "2", "--node-cpu", "2", "--node-memory", "8Gi")
    try:
        lines = await _read_until(process, "ready\n")
        assert lines[0].startswith("setpoint cluster serving at https://127.0.0.1:")
        # the nodes' part runs first; the scheduler and controllers are said to run when
        # they do, after their caches synced (setpoint/workloads/startorder.py)
        assert lines[1] == "nodes starting: 2 node(s), kubelets (simulated runtime)\n"
        assert not any(line.startswith("workloads running") for line in lines)
        later = await _read_until(process, "workloads running:")
        assert later[-1] == ("workloads running: 2 node(s), scheduler, kubelets (simulated "
                             "runtime), controllers\n")
        async with Client(load_kubeconfig(tmp_path / "kubeconfig")) as client:
            async def registered() -> list[Any]:
                items = (await client.list(NODE)).items
                return items if len(items) >= 2 else []
            listed = await wait_for(registered)
        assert sorted(n["metadata"]["name"] for n in listed) == ["node-1", "node-2"]
        assert listed[0]["status"]["capacity"]["memory"] == "8Gi"
    finally:
        out = await _stop(process)
    assert out.endswith("stopped\n")


async def test_cluster_up_without_workloads_is_a_bare_api_server(tmp_path: Path) -> None:
    process = _start(tmp_path, "--no-workloads")
    try:
        await _read_until(process, "Press Ctrl+C to stop.")
        async with Client(load_kubeconfig(tmp_path / "kubeconfig")) as client:
            assert (await client.list(NODE)).items == []
    finally:
        out = await _stop(process)
    assert "workloads" not in out


async def test_node_and_pod_commands_find_the_cluster_that_cluster_up_started(
        tmp_path: Path) -> None:
    """Without --kubeconfig or KUBECONFIG, the commands use the kubeconfig `setpoint cluster
    up` writes by default ($XDG_DATA_HOME/setpoint/cluster/kubeconfig)."""
    env = {"XDG_DATA_HOME": str(tmp_path), "KUBECONFIG": None}
    result = await invoke("node", "cordon", "node-1", env=env)  # type: ignore[arg-type]
    assert result.exit_code == 1
    assert result.output.startswith(
        f"error: no cluster: no kubeconfig at {tmp_path}/setpoint/cluster/kubeconfig (start "
        "one with `setpoint cluster up`)")
    async with serve(tmp_path / "setpoint" / "cluster") as running:  # as `cluster up` does
        async with Client(load_kubeconfig(running.kubeconfig)) as client:
            await nodes.register_nodes(client, WorkloadSettings(nodes=1))
        result = await invoke("node", "cordon", "node-1", env=env)  # type: ignore[arg-type]
        assert result.exit_code == 0, result.output
        assert (await get_node(running, "node-1"))["spec"]["unschedulable"] is True
        result = await invoke("pod", "fail", "nope", env=env)  # type: ignore[arg-type]
        assert result.output == 'error: pods "nope" not found\n'


async def test_a_missing_kubeconfig_passed_is_named_without_advice_to_pass_one(
        tmp_path: Path) -> None:
    missing = tmp_path / "nonexistent"
    for args in (["node", "cordon", "node-1"], ["pod", "fail", "web-0"]):
        result = await invoke(*args, "--kubeconfig", str(missing))
        assert result.output == f"error: kubeconfig {missing} does not exist\n"
    result = await invoke("run", "examples.widget.operator:manager", "--kubeconfig",
                          str(missing))
    assert result.exit_code == 2
    assert "--kubeconfig FILE" not in result.output and str(missing) in result.output
    assert len(result.output.strip().splitlines()) == 1, result.output

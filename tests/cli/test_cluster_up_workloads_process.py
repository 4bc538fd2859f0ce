"""``setpoint cluster up`` runs its workloads in a child process, which never outlives it.

kube-apiserver, kube-scheduler, kube-controller-manager and the kubelets are separate
programs (cmd/kube-apiserver, cmd/kube-scheduler, cmd/kube-controller-manager, cmd/kubelet in
kubernetes/kubernetes), each an API client of the server but the server itself; ``cluster up``
runs the simulated ones in one child, so that they and the server each get a core. Whatever
ends ``cluster up`` (SIGTERM, SIGKILL, a failure to start) ends that child too: nothing is
left behind that still writes to a server that is gone.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import ServerProcess
from tests.waiting import wait_for

GONE_TIMEOUT = 60.0
"""Generous: a loaded machine may take a while to stop the workloads' controllers."""


def children(pid: int) -> list[int]:
    found: list[int] = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as f:
            found += [int(c) for c in f.read().split()]
    return found


def workloads_child(pid: int) -> int:
    """The pid of ``cluster up``'s workloads process (its only such child)."""
    found = []
    for child in children(pid):
        with open(f"/proc/{child}/cmdline", "rb") as f:
            if b"setpoint.workloads.supervised" in f.read():
                found.append(child)
    assert len(found) == 1, f"workloads children of {pid}: {found}"
    return found[0]


def wait_gone(pid: int) -> None:
    """Wait (by pidfd, no polling) until the process ``pid`` has ended."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        readable, _, _ = select.select([fd], [], [], GONE_TIMEOUT)
        assert readable, f"process {pid} still runs after {GONE_TIMEOUT} s"
    finally:
        os.close(fd)


def test_the_workloads_run_in_a_child_process_without_aiohttp(tmp_path: Path) -> None:
    """The child's requests and watches go over ``setpoint.client.http1``: with its nodes
    Ready and its informers watching, it has not loaded aiohttp (0.12-0.19 s of its
    start, the critical path of ``cluster up``: issue 12), whose compiled parser would be
    mapped into it."""
    with ServerProcess(tmp_path) as server:
        assert server.proc is not None
        child = workloads_child(server.proc.pid)
        with open(f"/proc/{child}/status") as f:
            assert f"PPid:\t{server.proc.pid}\n" in f.read()
        with open(f"/proc/{child}/maps") as f:
            assert [line for line in f if "/aiohttp/" in line] == []


def test_sigterm_stops_the_workloads_child_with_the_server(tmp_path: Path) -> None:
    with ServerProcess(tmp_path) as server:  # stops the server whatever fails
        assert server.proc is not None
        child = workloads_child(server.proc.pid)
        server.proc.send_signal(signal.SIGTERM)
        assert server.proc.wait(timeout=GONE_TIMEOUT) == 0
        wait_gone(child)
    assert (tmp_path / "server.log").read_text().endswith("stopped\n")


def test_a_killed_server_takes_its_workloads_child_along(tmp_path: Path) -> None:
    """SIGKILL runs no handler: the child learns it from its stdin, a pipe whose only
    writer was the server."""
    with ServerProcess(tmp_path) as server:  # stops the server whatever fails
        assert server.proc is not None
        child = workloads_child(server.proc.pid)
        server.proc.kill()
        server.proc.wait(timeout=GONE_TIMEOUT)
        wait_gone(child)


ORPHANS = """
import ctypes, json, os, subprocess, sys
ctypes.CDLL(None, use_errno=True).prctl(36, 1)  # PR_SET_CHILD_SUBREAPER: orphans come here
done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
left = []
for task in os.listdir("/proc/self/task"):
    with open(f"/proc/self/task/{task}/children") as f:
        left += [int(c) for c in f.read().split()]
print(json.dumps({"code": done.returncode, "err": done.stderr, "left": left}))
"""
"""Runs a command as a child subreaper (prctl(2)): what the command leaves running becomes
this script's child, listed when the command has ended."""


def test_a_server_that_cannot_listen_leaves_no_workloads_child(tmp_path: Path) -> None:
    """The child is spawned before the server binds its port (to import while the server
    starts); when binding fails, the child goes too."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        got = subprocess.run(
            [sys.executable, "-c", ORPHANS, sys.executable, "-m", "setpoint.cli.main",
             "cluster", "up", "--memory", "--port", str(port),
             "--kubeconfig", str(tmp_path / "kubeconfig")],
            capture_output=True, text=True, timeout=GONE_TIMEOUT, check=True)
    outcome = json.loads(got.stdout)
    assert outcome["code"] == 1
    assert "cannot listen" in outcome["err"]
    assert outcome["left"] == []


@pytest.mark.parametrize("extra", [[], ["--workloads-in-process"]])
async def test_nodes_are_ready_in_either_mode(tmp_path: Path, extra: list[str]) -> None:
    """Either mode says its nodes start, then ready, then that the scheduler and
    controllers run, once they do."""
    with ServerProcess(tmp_path, "--nodes", "2", *extra) as server:
        assert server.proc is not None
        if extra:
            assert not [c for c in children(server.proc.pid)]
        def running_said() -> str | None:
            text = (tmp_path / "server.log").read_text()
            return text if "workloads running:" in text else None

        log = await wait_for(running_said)
        lines = log.splitlines()
        assert lines.index("nodes starting: 2 node(s), kubelets (simulated runtime)") \
            < lines.index("ready") < lines.index(
                "workloads running: 2 node(s), scheduler, kubelets (simulated runtime), "
                "controllers"), log


def test_the_workloads_process_imports_neither_pydantic_nor_the_generated_models() -> None:
    """The workloads manage dicts: importing what their process imports must not load the
    SDK's typed models (pydantic and `setpoint.resources.models`, 0.25 s of CPU at every
    `cluster up`), which the runtime once pulled in through `setpoint.resources`' eager
    `__init__` for its RBAC Permissions (issue 12); nor aiohttp, which the SDK's HTTP
    client loads only for proxies, HEAD and connections it could not open itself."""
    code = ("import importlib, json, sys\n"
            "from setpoint.workloads import supervised\n"
            "from setpoint.workloads.settings import WorkloadSettings\n"
            "for name in supervised.enabled_areas(WorkloadSettings()):\n"
            "    importlib.import_module(name)\n"
            "print(json.dumps(sorted(m for m in sys.modules if m in ('pydantic', 'aiohttp')\n"
            "                        or m.startswith('setpoint.resources.models'))))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=Path(__file__).resolve().parents[2])
    assert json.loads(done.stdout) == []


def test_the_workloads_process_loads_the_metrics_server_only_when_it_starts() -> None:
    """metrics-server starts once the nodes are reported (setpoint/workloads/startorder.py,
    tests/workloads/test_supervised.py::test_metrics_server_starts_once_the_nodes_are_reported),
    so the workloads' start imports neither its server, authentication and registration nor
    ``cryptography`` (for its serving certificate and client certificates), about a fifth
    of the child's imports before (docs/benchmarks.md, Start-up, issue 12); the kubelets'
    usage store still loads with the package, and ``MetricsServer`` on first use. Nor are
    prometheus_client's exposition servers (``http.server``, ``wsgiref``), which its package
    ``__init__`` loads and the runtime's metric classes do not need before a scrape
    (setpoint/machinery/packageinit.py; docs/benchmarks.md, Start-up, eighteenth pass), nor
    PyYAML, which reads no kubeconfig here (``cluster up`` writes the workloads' as JSON)."""
    code = ("import importlib, json, sys\n"
            "from setpoint.workloads import supervised\n"
            "from setpoint.workloads.settings import WorkloadSettings\n"
            "for name in supervised.enabled_areas(WorkloadSettings()):\n"
            "    importlib.import_module(name)\n"
            "heavy = ('cryptography', 'setpoint.workloads.metricsserver.server',\n"
            "         'setpoint.workloads.metricsserver.authentication',\n"
            "         'setpoint.workloads.metricsserver.registration',\n"
            "         'prometheus_client.exposition', 'http.server', 'wsgiref', 'yaml')\n"
            "at_start = sorted(m for m in heavy if m in sys.modules)\n"
            "store = 'setpoint.workloads.metricsserver.storage' in sys.modules\n"
            "from setpoint.workloads.metricsserver import MetricsServer\n"
            "print(json.dumps([at_start, store, MetricsServer.__module__]))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=Path(__file__).resolve().parents[2])
    assert json.loads(done.stdout) == [[], True, "setpoint.workloads.metricsserver.server"]


def test_the_workloads_child_is_spawned_before_the_event_loop_and_the_server_load() -> None:
    """The child's start is the critical path of ``cluster up`` (issue 12): it is spawned
    once the command line is parsed, so what ``cluster up`` has imported by then (the
    command line, ``setpoint.cli.cluster``, ``setpoint.cli.spawn``) must not load asyncio
    (about 25 ms), the SDK or the server."""
    code = ("import json, sys\n"
            "import setpoint.cli.main, setpoint.cli.cluster, setpoint.cli.spawn\n"
            "print(json.dumps(sorted(m for m in sys.modules if m in ('asyncio', 'uvloop')\n"
            "                        or m.startswith(('setpoint.cluster', 'setpoint.client',\n"
            "                                         'setpoint.runtime')))))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=Path(__file__).resolve().parents[2])
    assert json.loads(done.stdout) == []


async def test_cluster_up_says_when_the_workloads_run_and_why_they_stopped(
        capsys: pytest.CaptureFixture[str]) -> None:
    """After ``ready``, ``cluster up`` follows the workloads' messages: ``running`` is the
    "workloads running" line, and an ``error`` (a manager stopped by a controller whose
    caches never synced) is one line on stderr naming it, after which nothing more is said
    (the child's exit that follows is that same stop)."""
    import asyncio

    from setpoint.cli.cluster import WorkloadOptions, _report_running

    messages: asyncio.Queue[str] = asyncio.Queue()
    for message in ("running", 'error controller "x": timed out after 0.5s waiting for '
                    "cache to be synced for Kind Missing.example.com/v1", "exited 0"):
        messages.put_nowait(message)
    options = WorkloadOptions(nodes=2, node_cpu="4", node_memory="8Gi", node_pods=110)
    await asyncio.wait_for(_report_running(messages, options, asyncio.Event()), 5)
    out, err = capsys.readouterr()
    assert out == ("workloads running: 2 node(s), scheduler, kubelets (simulated runtime), "
                   "controllers\n")
    assert err == ('error: workloads stopped: controller "x": timed out after 0.5s waiting '
                   "for cache to be synced for Kind Missing.example.com/v1\n")
    assert messages.qsize() == 1  # the exit was not waited for

"""``setpoint run --leader-elect``: of two runs of one operator against one cluster, only the
one holding the Lease reconciles, and the other takes over when it stops.

kubebuilder's generated cmd/main.go has ``--leader-elect`` (``LeaderElection:
enableLeaderElection`` in controller-runtime's ``manager.Options``, with
``LeaderElectionID`` and ``LeaderElectionNamespace``: pkg/manager/manager.go); the elector is
client-go's tools/leaderelection/leaderelection.go, whose holder is the Lease's
``spec.holderIdentity``. Real processes, the example operator, the embedded server.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from examples.widget.api import Widget, WidgetSpec
from setpoint.client import Client, Kind
from setpoint.testing import SetpointCluster
from setpoint.testing.plugin import Waiter
from tests.waiting import wait_for as wait_until

ROOT = Path(__file__).resolve().parents[2]
LEASE = Kind("coordination.k8s.io/v1", "Lease")
LEASE_NAME = "widget-run-leader"
EXIT_TIMEOUT = 30.0


class Run:
    """A ``setpoint run`` process and the log lines it has written so far."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.lines: list[str] = []
        self._reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            self.lines.append(line.decode(errors="replace"))

    async def line(self, pattern: str) -> re.Match[str]:
        """The first log line matching ``pattern``, once written."""
        def found() -> re.Match[str] | None:
            return next((m for line in self.lines if (m := re.search(pattern, line))), None)
        match: re.Match[str] = await wait_until(found)
        return match

    async def metric(self, metric: str, **labels: str) -> float:
        port = (await self.line(r"probe_server_started address=127\.0\.0\.1:(\d+)"))[1]
        text = await asyncio.to_thread(
            lambda: urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10)
            .read().decode())
        for sample in text.splitlines():
            if sample.startswith(metric + "{") and all(
                    f'{k}="{v}"' in sample for k, v in labels.items()):
                return float(sample.rsplit(" ", 1)[1])
        return 0.0

    async def stop(self) -> str:
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(self.proc.wait(), EXIT_TIMEOUT)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()
        await self._reader
        return "".join(self.lines)


@pytest.fixture
async def runs(setpoint_cluster: SetpointCluster, k8s: Client) -> AsyncIterator[
        Callable[[], Awaitable[Run]]]:
    await setpoint_cluster.install(Widget)
    started: list[Run] = []

    async def start() -> Run:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "setpoint.cli.main", "run", "examples.widget.operator:manager",
            "--kubeconfig", str(setpoint_cluster.kubeconfig), "--namespace", k8s.namespace,
            "--http-address", "127.0.0.1:0", "--leader-elect",
            "--leader-election-id", LEASE_NAME, "--leader-election-namespace", k8s.namespace,
            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        started.append(Run(proc))
        return started[-1]

    yield start
    for run in started:
        await run.stop()


RECONCILES = "controller_runtime_reconcile_total"


async def test_only_the_lease_holder_reconciles_and_another_takes_over(
        runs: Callable[[], Awaitable[Run]], k8s: Client, wait_for: Waiter) -> None:
    first = await runs()
    leader = (await first.line(r"leader_elected lease=\S+ identity=(\S+)"))[1]
    second = await runs()
    await second.line("manager_started")  # a candidate now, its caches synced
    lease = await k8s.get(LEASE, LEASE_NAME, namespace=k8s.namespace)
    assert lease["spec"]["holderIdentity"] == leader

    await k8s.create(Widget(name="one", spec=WidgetSpec(message="m")))
    await wait_for(Widget, "one", lambda w: w.status.ready, timeout=30)

    async def first_reconciled() -> bool:
        return await first.metric(RECONCILES, controller="widget", result="success") > 0

    await wait_until(first_reconciled)
    assert await first.metric("leader_election_master_status", name=LEASE_NAME) == 1
    # the second's workers never started: its series exist, at 0 (the first's reconcile,
    # already counted, is the one the second would have made)
    assert await second.metric("leader_election_master_status", name=LEASE_NAME) == 0
    assert await second.metric(RECONCILES, controller="widget", result="success") == 0
    assert "leader_elected" not in "".join(second.lines)

    out = await first.stop()
    assert first.proc.returncode == 0, out
    assert "leader_released" in out
    successor = (await second.line(r"leader_elected lease=\S+ identity=(\S+)"))[1]
    assert successor != leader
    lease = await k8s.get(LEASE, LEASE_NAME, namespace=k8s.namespace)
    assert lease["spec"]["holderIdentity"] == successor

    await k8s.create(Widget(name="two", spec=WidgetSpec(message="m")))
    await wait_for(Widget, "two", lambda w: w.status.ready, timeout=30)
    assert await second.metric(RECONCILES, controller="widget", result="success") > 0

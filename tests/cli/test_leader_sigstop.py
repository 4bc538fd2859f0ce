"""A leader stopped by a real SIGSTOP, whose lease another process took while it slept,
sends no write once SIGCONT wakes it: its renew deadline has passed, so it checks the lease
before writing and finds it lost (client-go's leaderelection stops a leader that cannot
renew within RenewDeadline; controller-runtime exits on losing the lease). Two ``setpoint
run`` processes against the embedded server, as an operator runs in two pods."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from setpoint.client import Client, Kind
from setpoint.testing import SetpointCluster
from setpoint.testing.plugin import Waiter
from tests.waiting import quiet_period

ROOT = Path(__file__).resolve().parents[2]
LEASE = Kind("coordination.k8s.io/v1", "Lease")
CONFIGMAP = Kind("v1", "ConfigMap")
# The stale leader's writes, were it to send any, follow within moments of SIGCONT (its
# queue holds the change, its watch the buffered events): generously longer than that.
STALE_LEADER_QUIET_PERIOD = 5.0
EXIT_BOUND = 45.0


async def run_stamper(kubeconfig: Path, identity: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "setpoint.cli.main", "run", "tests.cli.stamping_target:manager",
        "--kubeconfig", str(kubeconfig), "--namespace", "default",
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), "STAMPING_IDENTITY": identity},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)


async def stop(proc: asyncio.subprocess.Process) -> str:
    if proc.returncode is None:
        proc.send_signal(signal.SIGCONT)
        proc.send_signal(signal.SIGTERM)
    try:
        output, _ = await asyncio.wait_for(proc.communicate(), EXIT_BOUND)
    except TimeoutError:
        proc.kill()
        output, _ = await proc.communicate()
    return output.decode()


@pytest.fixture
async def stampers(setpoint_cluster: SetpointCluster) -> AsyncIterator[
        dict[str, asyncio.subprocess.Process]]:
    procs: dict[str, asyncio.subprocess.Process] = {}
    yield procs
    for proc in procs.values():
        await stop(proc)


async def test_a_sigstopped_leader_sends_no_write_after_another_took_the_lease(
        setpoint_cluster: SetpointCluster, k8s: Client, wait_for: Waiter,
        stampers: dict[str, asyncio.subprocess.Process],
        monkeypatch: pytest.MonkeyPatch) -> None:
    running = setpoint_cluster.embedded
    assert running is not None  # the writes are observed where the server stores them
    store = running.api.store
    stamped_by: list[tuple[str, str]] = []  # (identity, v) of every ConfigMap write stored
    put = store.put

    def observed(resource: str, obj: dict[str, Any]) -> dict[str, Any]:
        annotations = obj["metadata"].get("annotations") or {}
        if resource.endswith("configmaps") and "reconciled-by" in annotations:
            stamped_by.append((annotations["reconciled-by"], annotations["reconciled-v"]))
        stored: dict[str, Any] = put(resource, obj)
        return stored

    monkeypatch.setattr(store, "put", observed)
    kubeconfig = setpoint_cluster.kubeconfig
    stampers["a"] = await run_stamper(kubeconfig, "a")
    await wait_for(LEASE, "stamping-leader",
                   lambda lease: lease["spec"].get("holderIdentity") == "a", timeout=60)
    stampers["b"] = await run_stamper(kubeconfig, "b")
    await k8s.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "watched", "namespace": "default", "labels": {"stamp": "true"}},
        "data": {"v": "1"}})
    await wait_for(CONFIGMAP, "watched", lambda cm: (cm["metadata"].get("annotations") or {})
                   .get("reconciled-v") == "1", timeout=60)
    assert stamped_by == [("a", "1")]

    stampers["a"].send_signal(signal.SIGSTOP)
    await wait_for(LEASE, "stamping-leader",
                   lambda lease: lease["spec"].get("holderIdentity") == "b", timeout=60)
    # a merge patch, as `kubectl patch` sends: the new leader may be stamping the object it
    # took over at this very moment, and an update from an earlier read would conflict
    await k8s.patch(CONFIGMAP, "watched", {"data": {"v": "2"}}, namespace="default")
    await wait_for(CONFIGMAP, "watched", lambda cm: cm["metadata"]["annotations"]
                   == {"reconciled-by": "b", "reconciled-v": "2"}, timeout=60)
    after_b = len(stamped_by)

    stampers["a"].send_signal(signal.SIGCONT)
    await quiet_period(STALE_LEADER_QUIET_PERIOD)
    assert "a" not in [who for who, _ in stamped_by[after_b:]], stamped_by
    # nor did it take the lease back
    lease = await k8s.get(LEASE, "stamping-leader", namespace="default")
    assert lease["spec"]["holderIdentity"] == "b"
    # a noticed: it stops leading (and exits, as controller-runtime does on a lost lease)
    output = await asyncio.wait_for(stampers["a"].communicate(), EXIT_BOUND)
    text = output[0].decode()
    assert "leader_election_lost" in text, text

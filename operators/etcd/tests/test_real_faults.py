"""Real etcd through failures a node sees, on the process runtime: a member's etcd process
killed with ``kill -9`` behind the kubelet's back, and membership shrunk and grown again
with etcd's own member list agreeing with the operator's status at each step.

A killed container is restarted by the kubelet in place (restartPolicy Always;
pkg/kubelet/kuberuntime/kuberuntime_manager.go ``computePodActions``): same pod, same
claim, so etcd starts from its data directory as the same member and catches up from the
leader; the operator must not replace it."""

from __future__ import annotations

import pytest

from operators.etcd.etcdclient import EtcdClient
from operators.etcd.resource import EtcdCluster, EtcdClusterSpec
from operators.etcd.tests.test_real import (
    TIMEOUT,
    V34,
    assert_every_member_has,
    keys,
    member_pods,
    running,
    through_service,
    write,
)
from setpoint.client import Client
from setpoint.resources.models.core_v1 import Pod
from setpoint.testing import OperatorRunner, kill_container_process, present
from setpoint.testing.plugin import Waiter

pytestmark = [pytest.mark.setpoint_runtime("process"), pytest.mark.timeout(300),
              pytest.mark.usefixtures("etcd_installed")]


def ready(pod: Pod) -> bool:
    return any(c.type == "Ready" and c.status == "True"
               for c in (pod.status.conditions if pod.status else None) or ())


def restarts(pod: Pod) -> int:
    return sum(c.restart_count or 0 for c in present(pod.status).container_statuses or ())


async def assert_member_list_agrees(k8s: Client, cluster: EtcdCluster) -> None:
    """etcd's own member list (linearizable, through the leader) names exactly the members
    the status lists, with the same ids, none a learner."""
    listed = await through_service(k8s, present(cluster.metadata.name),
                                   EtcdClient.member_list)
    assert {m.name: f"{m.id:x}" for m in listed} == {
        m.name: m.id for m in cluster.status.members or ()}, listed
    assert not any(m.is_learner for m in listed), listed


async def test_a_member_killed_by_sigkill_is_restarted_in_place_and_rejoins_with_its_data(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter) -> None:
    await k8s.create(EtcdCluster(name="e", spec=EtcdClusterSpec(size=3, version=V34)))
    before = await wait_for(EtcdCluster, "e", running(3), timeout=TIMEOUT)
    await assert_member_list_agrees(k8s, before)
    data = keys("before-kill")
    await write(k8s, "e", data)
    victim = (await member_pods(k8s, "e"))["e-1"]

    kill_container_process(str(present(victim.status).pod_ip), "etcd")
    restarted = await wait_for(Pod, "e-1", lambda p: restarts(p) > restarts(victim)
                               and ready(p), timeout=TIMEOUT)
    assert restarted.metadata.uid == victim.metadata.uid  # restarted in place, not replaced
    (status,) = present(restarted.status).container_statuses or ()
    terminated = present(present(status.last_state).terminated)
    assert (terminated.exit_code, terminated.reason) == (137, "Error")

    # writes while it was down or catching up reach it too
    data |= keys("after-kill")
    await write(k8s, "e", data)
    after = await wait_for(EtcdCluster, "e", running(3), timeout=TIMEOUT)
    assert {m.name: m.id for m in after.status.members or ()} == {
        m.name: m.id for m in before.status.members or ()}
    await assert_member_list_agrees(k8s, after)
    await assert_every_member_has(k8s, "e", data)

"""Real etcd through failures a node sees, on the process runtime: a member's etcd process
killed with ``kill -9`` behind the kubelet's back, and membership shrunk and grown again
with etcd's own member list agreeing with the operator's status at each step.

A killed container is restarted by the kubelet in place (restartPolicy Always;
pkg/kubelet/kuberuntime/kuberuntime_manager.go ``computePodActions``): same pod, same
claim, so etcd starts from its data directory as the same member and catches up from the
leader; the operator must not replace it."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from operators.etcd import objects
from operators.etcd.etcdclient import EtcdClient
from operators.etcd.resource import (
    EtcdBackup,
    EtcdBackupSpec,
    EtcdCluster,
    EtcdClusterSpec,
    RestoreSpec,
)
from operators.etcd.tests.test_real import (
    TIMEOUT,
    V34,
    assert_every_member_has,
    assert_member_list_agrees,
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
from setpoint.testing.waiting import wait_for as wait_until

OLDER = "3.4.22"
"""A 3.4 patch release before the machine's etcd (3.4.23)."""
BACKOFF = "5s"
"""The kubelet's first crash-loop back-off where a test only needs one to be seen (the
kubelet's setting ``kubelet.backoff-base``): the operator reports the member within a
reconcile, a fraction of it. The tests that must act while a member is down (an upgrade,
a backup) keep the kubelet's 10 s."""

pytestmark = [pytest.mark.setpoint_runtime("process"), pytest.mark.timeout(300),
              pytest.mark.usefixtures("etcd_installed")]


def ready(pod: Pod) -> bool:
    return any(c.type == "Ready" and c.status == "True"
               for c in (pod.status.conditions if pod.status else None) or ())


def crash_looping(pod: Pod) -> bool:
    return any(c.state is not None and c.state.waiting is not None
               and c.state.waiting.reason == "CrashLoopBackOff"
               for c in present(pod.status).container_statuses or ())


def restarts(pod: Pod) -> int:
    return sum(c.restart_count or 0 for c in present(pod.status).container_statuses or ())


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
    (status,) = present(present(restarted.status).container_statuses)
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


async def leader_name(k8s: Client, cluster: EtcdCluster) -> str:
    """The member the others follow, as etcd itself says (Maintenance/Status)."""
    status = await through_service(k8s, present(cluster.metadata.name), EtcdClient.status)
    return next(m.name for m in cluster.status.members or () if m.id == f"{status.leader:x}")


async def test_the_leader_and_one_more_killed_lose_the_quorum_until_the_kubelet_restarts_them(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter) -> None:
    """Two of three members' processes killed at once, the leader among them: the quorum
    is lost while their data is intact, so the way back is the kubelet restarting them
    and etcd electing a leader again, the same three members (etcd's disaster-recovery
    guide keeps ``--force-new-cluster`` for a majority that lost its data)."""
    await k8s.create(EtcdCluster(name="e", spec=EtcdClusterSpec(size=3, version=V34)))
    before = await wait_for(EtcdCluster, "e", running(3), timeout=TIMEOUT)
    data = keys("quorum")
    await write(k8s, "e", data)
    leader = await leader_name(k8s, before)
    pods = await member_pods(k8s, "e")
    victims = [leader, next(n for n in sorted(pods) if n != leader)]

    for name in victims:
        kill_container_process(str(present(pods[name].status).pod_ip), "etcd")

    for name in victims:
        await wait_for(Pod, name, lambda p, old=pods[name]: restarts(p) > restarts(old)
                       and ready(p), timeout=TIMEOUT)
    after = await wait_for(EtcdCluster, "e", running(3), timeout=TIMEOUT)
    assert {m.name: m.id for m in after.status.members or ()} == {
        m.name: m.id for m in before.status.members or ()}
    assert {n: p.metadata.uid for n, p in (await member_pods(k8s, "e")).items()} == {
        n: p.metadata.uid for n, p in pods.items()}
    await assert_member_list_agrees(k8s, after)
    data |= keys("after")
    await write(k8s, "e", data)
    await assert_every_member_has(k8s, "e", data)


async def test_every_member_killed_at_once_comes_back_as_the_same_cluster_with_its_data(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter) -> None:
    """All three etcd processes killed together (a power cut, as far as etcd can tell):
    every claim still holds its member's data, so nothing is to be recovered or restored
    (status.recovery stays unset); the kubelet restarts the three and they elect a
    leader among themselves."""
    await k8s.create(EtcdCluster(name="e", spec=EtcdClusterSpec(size=3, version=V34)))
    before = await wait_for(EtcdCluster, "e", running(3), timeout=TIMEOUT)
    data = keys("power-cut")
    await write(k8s, "e", data)
    pods = await member_pods(k8s, "e")

    for pod in pods.values():
        kill_container_process(str(present(pod.status).pod_ip), "etcd")
    for name, pod in pods.items():
        await wait_for(Pod, name, lambda p, old=pod: restarts(p) > restarts(old) and ready(p),
                       timeout=TIMEOUT)
    after = await wait_for(EtcdCluster, "e", running(3), timeout=TIMEOUT)
    assert after.status.recovery is None, after.status.recovery
    assert {m.name: m.id for m in after.status.members or ()} == {
        m.name: m.id for m in before.status.members or ()}
    await assert_member_list_agrees(k8s, after)
    await assert_every_member_has(k8s, "e", data)


@pytest.mark.setpoint_workload_settings(extra={"kubelet.backoff-base": BACKOFF})
async def test_a_member_crash_looping_is_reported_degraded_and_not_replaced(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter) -> None:
    """A member killed again soon after its restart waits out the kubelet's back-off
    (10 s by default, doubling: pkg/kubelet/kuberuntime/kuberuntime_manager.go
    ``doBackOff``; the container waits as ``CrashLoopBackOff``; :data:`BACKOFF` here).
    Meanwhile the operator reports what a person must see: the member not healthy,
    Degraded True, still Available with two of three voting; then it recovers by itself
    as the same member."""
    await k8s.create(EtcdCluster(name="e", spec=EtcdClusterSpec(size=3, version=V34)))
    before = await wait_for(EtcdCluster, "e", running(3), timeout=TIMEOUT)
    victim = (await member_pods(k8s, "e"))["e-2"]

    kill_container_process(str(present(victim.status).pod_ip), "etcd")
    once = await wait_for(Pod, "e-2", lambda p: restarts(p) > restarts(victim) and any(
        c.state is not None and c.state.running is not None
        for c in present(p.status).container_statuses or ()), timeout=TIMEOUT)
    kill_container_process(str(present(victim.status).pod_ip), "etcd")
    await wait_for(Pod, "e-2", crash_looping, timeout=TIMEOUT)

    def degraded(cluster: EtcdCluster) -> bool:
        members = {m.name: m for m in cluster.status.members or ()}
        return (cluster.status.is_true("Degraded") and cluster.status.is_true("Available")
                and cluster.status.ready_members == 2 and not members["e-2"].healthy)

    await wait_for(EtcdCluster, "e", degraded, timeout=TIMEOUT)
    await wait_for(Pod, "e-2", lambda p: restarts(p) > restarts(once) and ready(p),
                   timeout=TIMEOUT)
    after = await wait_for(EtcdCluster, "e", lambda c: running(3)(c)
                           and not c.status.is_true("Degraded"), timeout=TIMEOUT)
    assert {m.name: m.id for m in after.status.members or ()} == {
        m.name: m.id for m in before.status.members or ()}


def etcd_running(pod: Pod) -> bool:
    """The pod is not being deleted and its etcd container runs."""
    return not pod.metadata.deletion_timestamp and any(
        c.name == "etcd" and c.state is not None and c.state.running is not None
        for c in (pod.status.container_statuses if pod.status else None) or ())


async def test_an_upgrade_asked_while_a_member_crash_loops_never_takes_a_second_one_down(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter) -> None:
    """The quorum an upgrade must keep: asked for while e-2 waits out its back-off, the
    upgrade takes no healthy member down until e-2 is back (etcd's upgrade guide: one
    member at a time, each healthy before the next). Checked from one watch of the pods,
    whose events are in the order the server made the changes: at no point are two members
    without a running etcd. A patch upgrade within 3.4 (the machine's etcd runs for both
    images) so that it runs without etcd 3.5; the rolling is the same."""
    await k8s.create(EtcdCluster(name="e", spec=EtcdClusterSpec(size=3, version=OLDER)))
    await wait_for(EtcdCluster, "e", running(3), timeout=TIMEOUT)
    pods = await member_pods(k8s, "e")
    victim = pods["e-2"]
    kill_container_process(str(present(victim.status).pod_ip), "etcd")
    await wait_for(Pod, "e-2", lambda p: restarts(p) > restarts(victim) and etcd_running(p),
                   timeout=TIMEOUT)
    kill_container_process(str(present(victim.status).pod_ip), "etcd")
    await wait_for(Pod, "e-2", crash_looping, timeout=TIMEOUT)

    async with members_down(k8s, "e") as worst:
        await k8s.patch(EtcdCluster, "e", {"spec": {"version": V34}})

        async def upgraded() -> bool:
            cluster = await k8s.get(EtcdCluster, "e")
            images = [c.image for p in (await member_pods(k8s, "e")).values()
                      for c in present(p.spec).containers or () if c.name == "etcd"]
            return running(3)(cluster) and len(images) == 3 and all(
                str(i).endswith(V34) for i in images)

        await wait_until(upgraded, timeout=TIMEOUT, message=f"every member on {V34}")
    assert len(worst) <= 1, f"members down together: {sorted(worst)}"


async def etcdctl(*args: str) -> str:
    """Real ``etcdctl`` (v3 API; the distribution's 3.4, which speaks to 3.4 and 3.5
    members alike): its output, or the test fails with its error."""
    program = shutil.which("etcdctl")
    if program is None:
        pytest.skip("etcdctl is not installed: apt-get install -y etcd-client")
    process = await asyncio.create_subprocess_exec(
        program, "--dial-timeout=2s", "--command-timeout=5s", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "ETCDCTL_API": "3"})
    out, err = await process.communicate()
    assert process.returncode == 0, f"etcdctl {' '.join(args)}: {err.decode()}"
    return out.decode()


async def urls(k8s: Client, name: str) -> list[str]:
    return [url for pod in (await member_pods(k8s, name)).values()
            if (url := objects.client_url(pod)) is not None]


async def etcdctl_put(k8s: Client, name: str, data: dict[str, str]) -> None:
    """Write ``data`` with etcdctl, given every member (it fails over between them)."""
    endpoints = ",".join(await urls(k8s, name))
    for key, value in data.items():
        await etcdctl(f"--endpoints={endpoints}", "put", key, value)


async def etcdctl_get(url: str) -> dict[str, str]:
    """Every key under /test/ in the member at ``url``'s own copy (a serializable read:
    what this member holds, not what the leader says)."""
    answer = json.loads(await etcdctl(f"--endpoints={url}", "get", "/test/", "--prefix",
                                      "--consistency=s", "-w", "json"))
    return {base64.b64decode(kv["key"]).decode(): base64.b64decode(kv["value"]).decode()
            for kv in answer.get("kvs") or ()}


async def assert_etcdctl_reads_on_every_member(k8s: Client, name: str,
                                               data: dict[str, str]) -> None:
    """etcdctl reads exactly ``data`` from each member's own copy (waiting for a member
    that just caught up to apply the last commits)."""
    for url in await urls(k8s, name):
        async def holds(url: str = url) -> bool:
            return await etcdctl_get(url) == data
        await wait_until(holds, timeout=30.0, message=f"{url} holds every key, no other")


def etcd_image(pod: Pod) -> str:
    return next(str(c.image) for c in present(present(pod.spec).containers) if c.name == "etcd")


async def test_a_member_killed_during_an_upgrade_is_waited_for_and_the_upgrade_finishes(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter) -> None:
    """The first member upgraded is killed (``kill -9``) as soon as its new etcd runs,
    before it serves: the operator takes no other member down until the kubelet has
    restarted it and its pod is Ready again (etcd's upgrade guide: one member at a time,
    each healthy before the next; a StatefulSet's rolling update likewise waits for each
    pod Ready, pkg/controller/statefulset/stateful_set_control.go ``updateStatefulSet``),
    so at no point of one watch of the pods are two members down; the upgrade then
    finishes with the same members, and etcdctl reads every key written before it, and
    one written after, from each member's own copy. A patch upgrade within 3.4, as in
    the test above."""
    await k8s.create(EtcdCluster(name="e", spec=EtcdClusterSpec(size=3, version=OLDER)))
    before = await wait_for(EtcdCluster, "e", running(3), timeout=TIMEOUT)
    data = keys("before-upgrade")
    await etcdctl_put(k8s, "e", data)
    leader = await leader_name(k8s, before)
    pods = await member_pods(k8s, "e")
    first = next(n for n in sorted(pods) if n != leader)  # followers go first, by ordinal

    async with members_down(k8s, "e") as worst:
        await k8s.patch(EtcdCluster, "e", {"spec": {"version": V34}})
        upgraded = await wait_for(Pod, first, lambda p: p.metadata.uid != pods[first].metadata.uid
                                  and etcd_running(p), timeout=TIMEOUT)
        assert etcd_image(upgraded).endswith(V34)
        kill_container_process(str(present(upgraded.status).pod_ip), "etcd")
        await wait_for(Pod, first, lambda p: restarts(p) > restarts(upgraded) and ready(p),
                       timeout=TIMEOUT)

        async def finished() -> bool:
            cluster = await k8s.get(EtcdCluster, "e")
            now = await member_pods(k8s, "e")
            return running(3)(cluster) and len(now) == 3 and all(
                etcd_image(p).endswith(V34) for p in now.values())

        await wait_until(finished, timeout=TIMEOUT, message=f"every member on {V34}")
    assert len(worst) <= 1, f"members down together: {sorted(worst)}"
    after = await k8s.get(EtcdCluster, "e")
    assert {m.name: m.id for m in after.status.members or ()} == {
        m.name: m.id for m in before.status.members or ()}
    assert (await k8s.get(Pod, first)).metadata.uid == upgraded.metadata.uid  # in place
    await assert_member_list_agrees(k8s, after)
    data |= keys("after-upgrade")
    await etcdctl_put(k8s, "e", data)
    await assert_etcdctl_reads_on_every_member(k8s, "e", data)


async def test_a_backup_taken_while_a_member_is_down_comes_from_a_healthy_one_and_restores(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter, tmp_path: Path) -> None:
    """The leader is killed twice, so it waits out the kubelet's back-off
    (``CrashLoopBackOff``, 10 s) without etcd; a backup asked for meanwhile is taken from
    a member that answers now (the snapshot source is chosen by asking each member its
    status, as etcd-operator's ``getMaxRevision`` does), not from the one that led. A new
    cluster restored from it holds, as etcdctl reads it, exactly the keys written before
    the backup: none written after."""
    await k8s.create(EtcdCluster(name="e", spec=EtcdClusterSpec(size=3, version=V34)))
    before = await wait_for(EtcdCluster, "e", running(3), timeout=TIMEOUT)
    data = keys("backed-up")
    await etcdctl_put(k8s, "e", data)
    victim_name = await leader_name(k8s, before)
    victim = (await member_pods(k8s, "e"))[victim_name]
    address = str(present(victim.status).pod_ip)

    kill_container_process(address, "etcd")
    await wait_for(Pod, victim_name, lambda p: restarts(p) > restarts(victim)
                   and etcd_running(p), timeout=TIMEOUT)
    kill_container_process(address, "etcd")
    await wait_for(Pod, victim_name, crash_looping, timeout=TIMEOUT)

    await k8s.create(EtcdBackup(name="b", spec=EtcdBackupSpec(
        cluster_name="e", directory=str(tmp_path))))
    taken = await wait_for(EtcdBackup, "b", lambda b: b.status.phase == "Complete",
                           timeout=TIMEOUT)
    assert taken.status.member in {"e-0", "e-1", "e-2"} - {victim_name}, taken.status.member

    healthy = ",".join(url for name, pod in (await member_pods(k8s, "e")).items()
                       if name != victim_name and (url := objects.client_url(pod)))

    async def written_while_down() -> bool:
        # to the two members left (etcdctl 3.4 may wait out its command timeout on the
        # restarting one), which may still be electing a new leader on a loaded machine
        await etcdctl(f"--endpoints={healthy}", "put", "/test/after-the-backup", "x")
        return True

    await wait_until(written_while_down, timeout=TIMEOUT,
                     message="a write with the leader down")

    await k8s.create(EtcdCluster(name="copy", spec=EtcdClusterSpec(
        size=1, version=V34, restore=RestoreSpec(backup_name="b"))))
    await wait_for(EtcdCluster, "copy", running(1), timeout=TIMEOUT)
    await assert_etcdctl_reads_on_every_member(k8s, "copy", data)
    # and the source comes back whole: the member that was down has every key
    await wait_for(EtcdCluster, "e", running(3), timeout=TIMEOUT)
    await assert_etcdctl_reads_on_every_member(k8s, "e", data | {"/test/after-the-backup": "x"})


@contextlib.asynccontextmanager
async def members_down(k8s: Client, cluster: str) -> AsyncIterator[set[str]]:
    """The most members of ``cluster`` seen down together on one watch of its pods, from
    the moment this is entered until it is left (the watch must last the whole while)."""
    listed = await k8s.list(Pod, label_selector=f"{objects.INSTANCE}={cluster}")
    down = {present(p.metadata.name) for p in listed.items if not etcd_running(p)}
    worst = set(down)

    async def follow() -> None:
        async with k8s.watch(Pod, label_selector=f"{objects.INSTANCE}={cluster}",
                             resource_version=listed.resource_version) as events:
            async for kind, pod in events:
                if kind == "BOOKMARK" or not isinstance(pod, Pod):
                    continue
                name = present(pod.metadata.name)
                if kind == "DELETED" or not etcd_running(pod):
                    down.add(name)
                else:
                    down.discard(name)
                if len(down) > len(worst):
                    worst.clear()
                    worst.update(down)

    watcher = asyncio.create_task(follow())
    try:
        yield worst
    finally:
        watcher.cancel()
    # the watch followed the whole while (it ends only by the cancellation)
    assert (await asyncio.gather(watcher, return_exceptions=True))[0].__class__ \
        is asyncio.CancelledError

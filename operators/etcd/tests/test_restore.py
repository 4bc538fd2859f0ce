"""EtcdRestore (operators/etcd/restore.py): a new EtcdCluster seeded from a Complete
EtcdBackup, never one that exists already. The restore controller runs alone here (the
cluster it makes is not started; test_real.py restores into real etcd), so the test says
when a backup is Complete and when the cluster runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from operators.etcd import restore
from operators.etcd.resource import (
    EtcdBackup,
    EtcdBackupSpec,
    EtcdCluster,
    EtcdClusterSpec,
    EtcdRestore,
    EtcdRestoreSpec,
)
from setpoint.client import Client, InvalidError
from setpoint.runtime import Manager, ManagerSettings
from setpoint.testing import SetpointCluster, present
from setpoint.testing.plugin import ManagerLauncher, Waiter

TIMEOUT = 30.0


def phase(wanted: str) -> object:
    return lambda r: r.status.phase == wanted


async def test_a_restore_waits_for_its_backup_makes_the_cluster_and_completes_when_it_runs(
        k8s: Client, cluster: SetpointCluster, run_manager: ManagerLauncher, wait_for: Waiter,
        tmp_path: Path) -> None:
    await run_manager(Manager([restore.restore], settings=ManagerSettings(
        name="etcd-restore")), leader_election=False, http_port=None, rbac=True)
    await k8s.create(EtcdRestore(name="r", spec=EtcdRestoreSpec(
        backup_name="b", cluster_name="copy", size=1)))
    pending = await wait_for(EtcdRestore, "r", phase("Pending"), timeout=TIMEOUT)
    assert pending.status.get_condition("Restored").reason == "BackupNotFound"

    await k8s.create(EtcdBackup(name="b", spec=EtcdBackupSpec(cluster_name="src",
                                                              directory=str(tmp_path))))
    await k8s.patch_status(EtcdBackup, "b", {"status": {
        "phase": "Complete", "path": str(tmp_path / "default-b.db"), "revision": 42,
        "etcdVersion": "3.4.23"}})
    restoring = await wait_for(EtcdRestore, "r", phase("Restoring"), timeout=TIMEOUT)
    made = await k8s.get(EtcdCluster, "copy")
    assert restoring.status.cluster_uid == made.metadata.uid
    assert restoring.status.revision == 42
    assert (made.spec.size, made.spec.version) == (1, "3.4.23")  # the backup's version
    assert made.spec.restore is not None and made.spec.restore.backup_name == "b"
    assert present(made.metadata.labels)[restore.RESTORE] == "r"
    assert not made.metadata.owner_references  # the cluster outlives the EtcdRestore

    await k8s.patch_status(EtcdCluster, "copy", {"status": {"phase": "Running",
                                                            "readyMembers": 1}})
    done = await wait_for(EtcdRestore, "r", phase("Complete"), timeout=TIMEOUT)
    assert done.status.is_true("Restored")
    with pytest.raises(InvalidError) as refused:
        await k8s.patch(EtcdRestore, "r", {"spec": {"size": 3}})
    assert "its spec cannot change" in str(refused.value)


async def test_a_restore_never_takes_over_an_existing_cluster(
        k8s: Client, cluster: SetpointCluster, run_manager: ManagerLauncher, wait_for: Waiter,
        tmp_path: Path) -> None:
    await k8s.create(EtcdCluster(name="live", spec=EtcdClusterSpec(size=1)))
    await run_manager(Manager([restore.restore], settings=ManagerSettings(
        name="etcd-restore")), leader_election=False, http_port=None, rbac=True)
    await k8s.create(EtcdRestore(name="r", spec=EtcdRestoreSpec(
        backup_name="b", cluster_name="live")))
    failed = await wait_for(EtcdRestore, "r", phase("Failed"), timeout=TIMEOUT)
    assert failed.status.get_condition("Restored").reason == "ClusterExists"
    assert (await k8s.get(EtcdCluster, "live")).spec.restore is None

"""The backup policy (operators/etcd/backuppolicy.py): EtcdBackups on a cron schedule,
named from their time (CronJob's naming, kubernetes pkg/controller/cronjob/utils.go
``getJobName``), made once, and pruned beyond ``keep`` with their files.

The schedule controller runs alone here (no EtcdBackup controller to take the snapshots,
so the test says when a backup is Complete) and its clock is the test's."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from operators.etcd import backuppolicy
from operators.etcd.resource import BackupPolicy, EtcdBackup, EtcdCluster, EtcdClusterSpec
from setpoint.client import Client, InvalidError
from setpoint.runtime import Manager, ManagerSettings
from setpoint.testing import SetpointCluster
from setpoint.testing.plugin import ManagerLauncher, Waiter

TIMEOUT = 30.0


def test_schedule_times_include_a_time_that_is_now() -> None:
    at = datetime(2025, 3, 1, 10, 5, tzinfo=UTC)
    assert backuppolicy.schedule_times("*/5 * * * *", at) == (at, at + timedelta(minutes=5))
    assert backuppolicy.schedule_times("*/5 * * * *", at + timedelta(seconds=1))[0] == at
    with pytest.raises(ValueError):
        backuppolicy.schedule_times("61 * * * *", at)


async def backups(k8s: Client) -> dict[str, EtcdBackup]:
    return {str(b.metadata.name): b for b in (await k8s.list(EtcdBackup)).items}


async def test_scheduled_backups_are_made_once_per_time_and_pruned_beyond_keep(
        k8s: Client, cluster: SetpointCluster, run_manager: ManagerLauncher, wait_for: Waiter,
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    start = datetime.now(UTC).replace(second=0, microsecond=0) + timedelta(minutes=5)
    now = [start + timedelta(seconds=30)]
    monkeypatch.setattr(backuppolicy, "clock", lambda: now[0])
    runner = await run_manager(Manager([backuppolicy.schedule], settings=ManagerSettings(
        name="etcd-backup-schedule")), leader_election=False, http_port=None, rbac=True)
    await k8s.create(EtcdCluster(name="e", spec=EtcdClusterSpec(size=1, backup=BackupPolicy(
        schedule="* * * * *", keep=2, directory=str(tmp_path)))))

    names = []
    for minute in range(3):
        when = start + timedelta(minutes=minute)
        now[0] = when + timedelta(seconds=30)
        name = f"e-{int(when.timestamp()) // 60}"
        names.append(name)
        if minute:  # wake the controller as a backup's completion does
            await k8s.patch(EtcdCluster, "e", {"metadata": {"annotations": {"t": name}}})
        made = await wait_for(EtcdBackup, name, timeout=TIMEOUT)
        assert made.metadata.owner_references[0].name == "e"
        assert made.spec.directory == str(tmp_path)
        (tmp_path / f"{k8s.namespace}-{name}.db").write_bytes(b"snapshot")
        await k8s.patch_status(EtcdBackup, name, {"status": {"phase": "Complete"}})
    e = await wait_for(EtcdCluster, "e", lambda c: c.status.last_schedule_time is not None
                       and c.status.is_true("BackupScheduled"), timeout=TIMEOUT)
    assert e.status.get_condition("BackupScheduled").message.startswith("next backup at")

    # the oldest of three complete backups goes, its file first; the two newest stay
    await wait_for(EtcdBackup, names[0], gone=True, timeout=TIMEOUT)
    assert sorted(await backups(k8s)) == sorted(names[1:])
    assert sorted(p.name for p in tmp_path.iterdir()) == \
        sorted(f"{k8s.namespace}-{n}.db" for n in names[1:])

    # a restarted operator at the same time makes no second backup of that time
    await runner.restart(crash=True)
    await k8s.patch(EtcdCluster, "e", {"metadata": {"annotations": {"t": "restarted"}}})
    await wait_for(EtcdCluster, "e", lambda c: c.status.last_schedule_time is not None,
                   timeout=TIMEOUT)
    assert sorted(await backups(k8s)) == sorted(names[1:])


async def test_a_schedule_that_is_not_cron_is_refused_or_reported(
        k8s: Client, cluster: SetpointCluster, run_manager: ManagerLauncher, wait_for: Waiter,
        tmp_path: Path) -> None:
    """The CRD's pattern refuses what has not the shape of five fields or a macro; a
    field out of range (minute 61) is reported by the condition BackupScheduled."""
    with pytest.raises(InvalidError) as refused:
        await k8s.create({"apiVersion": "etcd.setpoint.dev/v1alpha1", "kind": "EtcdCluster",
                          "metadata": {"name": "bad"}, "spec": {"backup": {
                              "schedule": "every day", "directory": str(tmp_path)}}})
    assert "spec.backup.schedule" in str(refused.value)
    await run_manager(Manager([backuppolicy.schedule], settings=ManagerSettings(
        name="etcd-backup-schedule")), leader_election=False, http_port=None, rbac=True)
    await k8s.create(EtcdCluster(name="e", spec=EtcdClusterSpec(backup=BackupPolicy(
        schedule="61 * * * *", directory=str(tmp_path)))))
    e = await wait_for(EtcdCluster, "e", lambda c: c.status.get_condition("BackupScheduled")
                       is not None, timeout=TIMEOUT)
    condition = e.status.get_condition("BackupScheduled")
    assert (condition.status, condition.reason) == ("False", "InvalidSchedule")
    assert "'61 * * * *'" in condition.message
    assert await backups(k8s) == {}

"""An EtcdCluster's backup policy (``spec.backup``): backups on a cron schedule and before
every upgrade, and the ``keep`` newest complete ones kept.

The operator makes each backup as an ``EtcdBackup`` owned by the cluster (the EtcdBackup
controller, :mod:`.backup`, takes it), named from what it is for, so that an operator
restarted at any point finds the backup it made rather than making another:

- scheduled: ``<cluster>-<scheduled time in minutes since the epoch>``, the naming of
  CronJob's Jobs (kubernetes ``pkg/controller/cronjob/utils.go``, ``getJobName``), the
  time also recorded in ``status.lastScheduleTime`` (as CronJob's status does) so a time
  whose backup was since deleted by retention is not taken again;
- before an upgrade: ``<cluster>-upgrade-<from>-to-<to>``, before the first member is
  upgraded (:func:`before_upgrade`).

Like CronJob, only the most recent missed time is taken (a stopped operator does not
catch up on every time it missed), and none from before the cluster existed. Between
times the controller is woken for the next one (``requeue_after``), not by polling.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from croniter import croniter

from operators.etcd import health
from operators.etcd.backup import PRUNE, snapshot_path
from operators.etcd.members import Step
from operators.etcd.observe import Reading
from operators.etcd.resource import GROUP, EtcdBackup, EtcdBackupSpec, EtcdCluster
from setpoint.resources.models.meta_v1 import ObjectMeta
from setpoint.runtime import Context, Controller, Result

CLUSTER = f"{GROUP}/cluster"
"""On a backup the operator made: the cluster's name."""
TAKEN_FOR = f"{GROUP}/taken-for"
"""On a backup the operator made: ``schedule`` or ``upgrade``."""
SCHEDULED_TIME = f"{GROUP}/scheduled-time"

schedule = Controller.for_(EtcdCluster, name="etcdbackupschedule").owns(EtcdBackup)


def clock() -> datetime:
    """Now, in UTC (the tests move it)."""
    return datetime.now(UTC)


def parse_time(value: str | datetime | None) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def rfc3339(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def schedule_times(expression: str, now: datetime) -> tuple[datetime, datetime]:
    """The last scheduled time at or before ``now`` and the next one after it (ValueError
    for an expression croniter refuses)."""
    if not croniter.is_valid(expression):
        raise ValueError(f"{expression!r} is not a cron expression")
    # cron times are whole minutes: from just after now, the previous one may be now itself
    previous = croniter(expression, now + timedelta(microseconds=1)).get_prev(datetime)
    return previous, croniter(expression, now).get_next(datetime)


def scheduled_name(cluster: EtcdCluster, when: datetime) -> str:
    return f"{cluster.metadata.name}-{int(when.timestamp()) // 60}"


def upgrade_name(cluster: EtcdCluster, current: str) -> str:
    def dashed(version: str) -> str:
        return version.replace(".", "-")
    return f"{cluster.metadata.name}-upgrade-{dashed(current)}-to-{dashed(cluster.spec.version)}"


def backup_for(cluster: EtcdCluster, name: str, taken_for: str,
               scheduled: datetime | None = None) -> EtcdBackup:
    assert cluster.spec.backup is not None
    annotations = {SCHEDULED_TIME: rfc3339(scheduled)} if scheduled is not None else None
    return EtcdBackup(
        metadata=ObjectMeta(name=name, labels={CLUSTER: str(cluster.metadata.name),
                                               TAKEN_FOR: taken_for},
                            annotations=annotations),
        spec=EtcdBackupSpec(cluster_name=str(cluster.metadata.name),
                            directory=cluster.spec.backup.directory,
                            volume=cluster.spec.backup.volume))


@schedule.reconcile
async def reconcile(ctx: Context[EtcdCluster], cluster: EtcdCluster) -> Result:
    policy = cluster.spec.backup
    if ctx.deleting or policy is None:
        return Result()
    now = clock()
    try:
        previous, following = schedule_times(policy.schedule, now)
    except ValueError as exc:
        ctx.set_condition("BackupScheduled", False, reason="InvalidSchedule",
                          message=f"spec.backup.schedule: {exc}: five fields (minute hour "
                          "day-of-month month day-of-week) such as '0 */6 * * *', or @daily",
                          obj=cluster)
        await ctx.update_status(cluster)
        return Result()
    created = parse_time(cluster.metadata.creation_timestamp)
    last = parse_time(cluster.status.last_schedule_time)
    if (created is None or previous >= created.replace(second=0, microsecond=0)) \
            and (last is None or previous > last):
        name = scheduled_name(cluster, previous)
        await ctx.apply(backup_for(cluster, name, "schedule", previous))
        ctx.events.normal("BackupScheduled", f"EtcdBackup {name} for {rfc3339(previous)}",
                          action="Backup")
        cluster.status.last_schedule_time = rfc3339(previous)
    ctx.set_condition("BackupScheduled", True, reason="Scheduled",
                      message=f"next backup at {rfc3339(following)}", obj=cluster)
    await ctx.update_status(cluster)
    await prune(ctx, cluster, policy.keep)
    return Result(requeue_after=max((following - now).total_seconds(), 1.0))


async def prune(ctx: Context[EtcdCluster], cluster: EtcdCluster, keep: int) -> None:
    """Delete the backups this operator made for ``cluster`` that are older than its
    ``keep`` newest complete ones, each file before its object (a file never outlives
    the object that names it unnoticed, and a failed delete is tried again). A file in a
    claim is deleted by a pod (the EtcdBackup controller's, asked by the annotation
    ``etcd.setpoint.dev/prune``), which then deletes the object."""
    made = sorted((b for b in ctx.owned(EtcdBackup)
                   if (b.metadata.labels or {}).get(CLUSTER) == cluster.metadata.name
                   and b.metadata.deletion_timestamp is None),
                  key=lambda b: (str(b.metadata.creation_timestamp), str(b.metadata.name)),
                  reverse=True)
    complete = [b for b in made if b.status.phase == "Complete"]
    if len(complete) <= keep:
        return
    oldest_kept = made.index(complete[keep - 1])
    for old in made[oldest_kept + 1:]:
        if old.spec.volume is not None:
            if (old.metadata.annotations or {}).get(PRUNE) != "true":
                await ctx.client.patch(EtcdBackup, str(old.metadata.name), {
                    "metadata": {"annotations": {PRUNE: "true"}}},
                    namespace=old.metadata.namespace)
                ctx.events.normal("BackupDeleted", f"EtcdBackup {old.metadata.name}: its "
                                  f"file in PersistentVolumeClaim {old.spec.volume.claim_name}"
                                  f" is deleted, then it: {keep} newer complete backup(s) "
                                  "are kept", action="Prune")
            continue
        path = snapshot_path(old)
        for leftover in (path, path.with_name(path.name + ".part")):
            leftover.unlink(missing_ok=True)
        await ctx.delete(old)
        ctx.events.normal("BackupDeleted", f"EtcdBackup {old.metadata.name} and its file "
                          f"{path}: {keep} newer complete backup(s) are kept", action="Prune")


async def before_upgrade(ctx: Context[EtcdCluster], cluster: EtcdCluster, reading: Reading,
                         step: Step) -> Step:
    """With a backup policy, the first member is upgraded only once a backup taken for
    this upgrade is Complete; a failed backup stops the upgrade, saying why."""
    if cluster.spec.backup is None or step.action != "UpgradeMember":
        return step
    wanted = cluster.spec.version
    if any(p.version == wanted for p in reading.observed.pods.values()):
        return step  # under way: its backup was taken before the first member
    current = health.current_version(reading) or "unknown"
    name = upgrade_name(cluster, current)
    backup = ctx.get(EtcdBackup, name)
    if backup is None:
        await ctx.apply(backup_for(cluster, name, "upgrade"))
        ctx.events.normal("BackupBeforeUpgrade", f"EtcdBackup {name} before upgrading "
                          f"from {current} to {wanted}", action="Backup")
        return Step("Wait", "BackupBeforeUpgrade",
                    f"taking EtcdBackup {name} before upgrading to {wanted}")
    if backup.status.phase == "Complete":
        return step
    condition = backup.status.get_condition("Complete")
    why = f"{condition.reason}: {condition.message}" if condition is not None else "not taken yet"
    if backup.status.phase == "Failed":
        policy = cluster.spec.backup
        if (backup.spec.directory, backup.spec.volume) != (policy.directory, policy.volume):
            # the policy's destination was changed since: take it again there
            await ctx.delete(backup)
            return Step("Wait", "BackupBeforeUpgrade", f"taking EtcdBackup {name} again "
                        f"in {policy.directory or policy.volume}")
        message = (f"the backup before the upgrade to {wanted} failed ({why}); fix that "
                   f"(a new spec.backup.directory or volume, or delete EtcdBackup {name}) "
                   "to take it again, or remove spec.backup to upgrade without a backup")
        ctx.events.warning("BackupFailed", message, action="Upgrade")
        return Step("Wait", "BackupFailed", message)
    return Step("Wait", "BackupBeforeUpgrade",
                f"waiting for EtcdBackup {name} before upgrading to {wanted} ({why})")

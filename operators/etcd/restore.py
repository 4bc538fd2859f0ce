"""The EtcdRestore controller: a new EtcdCluster seeded from a Complete EtcdBackup.

The cluster is made with ``spec.restore.backupName`` (its founding member restores the
snapshot, :mod:`.steps`) and the label ``etcd.setpoint.dev/restore: <restore>``, which
both tells it apart from a namesake the restore must not touch and wakes the restore
when the cluster changes. It is created, never applied: an existing cluster of that name
is not taken over (``Failed``, ``ClusterExists``). It is not owned by the EtcdRestore, so
deleting the EtcdRestore (a record of a one-off act) leaves the cluster running.

Phases: ``Pending`` (the backup is missing or not Complete yet), ``Restoring`` (the
cluster is made and not yet Running), ``Complete``, ``Failed``.
"""

from __future__ import annotations

import re

from operators.etcd.resource import (
    DEFAULT_VERSION,
    GROUP,
    EtcdBackup,
    EtcdCluster,
    EtcdClusterSpec,
    EtcdRestore,
    RestoreSpec,
)
from setpoint.client import AlreadyExistsError
from setpoint.resources.models.meta_v1 import ObjectMeta
from setpoint.runtime import Context, Controller, Result

RESTORE = f"{GROUP}/restore"
"""On a cluster an EtcdRestore made: the EtcdRestore's name."""
RETRY_INTERVAL = 2.0
"""Seconds between looks while the backup is not Complete (backups do not wake this)."""
_SUPPORTED = re.compile(r"^3\.[45]\.(0|[1-9][0-9]{0,2})$")

restore = (Controller.for_(EtcdRestore, name="etcdrestore")
           .reads(EtcdBackup)
           .watches(EtcdCluster, map_to_owner_by_label=RESTORE)
           .permits({"apiGroups": [GROUP], "resources": ["etcdclusters"],
                     "verbs": ["create"]}))


def cluster_for(wanted: EtcdRestore, backup: EtcdBackup) -> EtcdCluster:
    made_by = backup.status.etcd_version or ""
    version = wanted.spec.version or (made_by if _SUPPORTED.match(made_by)
                                      else DEFAULT_VERSION)
    return EtcdCluster(
        metadata=ObjectMeta(name=wanted.spec.cluster_name,
                            namespace=wanted.metadata.namespace,
                            labels={RESTORE: str(wanted.metadata.name)}),
        spec=EtcdClusterSpec(size=wanted.spec.size, version=version,
                             restore=RestoreSpec(backup_name=wanted.spec.backup_name)))


async def _finish(ctx: Context[EtcdRestore], wanted: EtcdRestore, phase: str, status: bool,
                  reason: str, message: str) -> None:
    wanted.status.phase = phase  # type: ignore[assignment]
    wanted.status.observed_generation = wanted.metadata.generation
    ctx.set_condition("Restored", status, reason=reason, message=message, obj=wanted)
    await ctx.update_status(wanted)


@restore.reconcile
async def reconcile(ctx: Context[EtcdRestore], wanted: EtcdRestore) -> Result:
    status = wanted.status
    if ctx.deleting or status.phase in ("Complete", "Failed"):
        return Result()
    name, backup_name = wanted.spec.cluster_name, wanted.spec.backup_name
    existing = ctx.get(EtcdCluster, name)
    if existing is not None:
        ours = (existing.metadata.labels or {}).get(RESTORE) == wanted.metadata.name \
            and status.cluster_uid in (None, existing.metadata.uid)
        if not ours:
            await _finish(ctx, wanted, "Failed", False, "ClusterExists",
                          f"EtcdCluster {name} exists and was not made by this restore: "
                          "choose another spec.clusterName (a new EtcdRestore)")
            return Result()
        status.cluster_name, status.cluster_uid = name, existing.metadata.uid
        if existing.status.phase == "Running":
            ctx.events.normal("Restored", f"EtcdCluster {name} runs on EtcdBackup "
                              f"{backup_name}", action="Restore")
            await _finish(ctx, wanted, "Complete", True, "ClusterRunning",
                          f"EtcdCluster {name} runs {existing.status.ready_members} "
                          f"member(s) restored from EtcdBackup {backup_name}")
            return Result()
        progress = existing.status.get_condition("Progressing")
        await _finish(ctx, wanted, "Restoring", False, "ClusterStarting",
                      f"EtcdCluster {name} is {existing.status.phase or 'starting'}"
                      + (f": {progress.message}" if progress is not None else ""))
        return Result()
    if status.cluster_uid is not None:
        await _finish(ctx, wanted, "Failed", False, "ClusterDeleted",
                      f"EtcdCluster {name} was deleted before it ran")
        return Result()

    backup = ctx.get(EtcdBackup, backup_name)
    if backup is None or backup.status.phase != "Complete":
        if backup is not None and backup.status.phase == "Failed":
            await _finish(ctx, wanted, "Failed", False, "BackupFailed",
                          f"EtcdBackup {backup_name} failed: restore another backup")
            return Result()
        await _finish(ctx, wanted, "Pending", False,
                      "BackupNotFound" if backup is None else "BackupNotComplete",
                      f"EtcdBackup {backup_name} "
                      + ("does not exist" if backup is None else "is not Complete yet"))
        return Result(requeue_after=RETRY_INTERVAL)

    try:
        made = await ctx.client.create(cluster_for(wanted, backup))
    except AlreadyExistsError:  # made a moment ago: the cache has not seen it yet
        return Result(requeue_after=RETRY_INTERVAL)
    status.cluster_name, status.cluster_uid = name, made.metadata.uid
    status.revision = backup.status.revision
    ctx.events.normal("ClusterCreated", f"EtcdCluster {name} from EtcdBackup {backup_name} "
                      f"(revision {backup.status.revision})", action="Restore")
    await _finish(ctx, wanted, "Restoring", False, "ClusterStarting",
                  f"EtcdCluster {name} created from EtcdBackup {backup_name}")
    return Result()

"""The EtcdBackup controller: one snapshot of a cluster, streamed from a healthy member.

etcd's ``Maintenance.Snapshot`` streams the member's backend database; through the v3
gateway it arrives as base64 chunks (:meth:`EtcdClient.snapshot_chunks`). The file is
written beside its final name and renamed once complete and checksummed, so a reader never
sees half a snapshot; it is 0600 in a 0700 directory (it holds every key). A backup is
done once: Complete or Failed (its file cannot be written), it is not taken again.
"""

from __future__ import annotations

import hashlib
import os
import ssl
from pathlib import Path

from operators.etcd import metrics, objects, tlssecrets
from operators.etcd.etcdclient import EtcdClient, EtcdError
from operators.etcd.resource import EtcdBackup, EtcdCluster
from setpoint.resources.models.core_v1 import Pod
from setpoint.runtime import Context, Controller, Result

RETRY_INTERVAL = 2.0
"""Seconds between tries while the cluster has no member to take the snapshot from."""

backup = Controller.for_(EtcdBackup, name="etcdbackup")


def snapshot_path(backup: EtcdBackup) -> Path:
    return Path(backup.spec.directory) / f"{backup.metadata.namespace}-{backup.metadata.name}.db"


async def take_snapshot(url: str, path: Path, tls: ssl.SSLContext | None = None
                        ) -> tuple[int, int, str, str]:
    """Stream a snapshot from the member at ``url`` into ``path``: (revision, size,
    sha256, version). ``tls``: the cluster's client context, for an https member. A stream
    that fails half-way raises :class:`EtcdError` and leaves no file behind, neither
    ``path`` nor the partial one."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    partial = path.with_name(path.name + ".part")
    try:
        async with EtcdClient(url, tls=tls) as etcd:
            status = await etcd.status()
            digest, size = hashlib.sha256(), 0
            fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as out:
                async for chunk in etcd.snapshot_chunks():
                    out.write(chunk)
                    digest.update(chunk)
                    size += len(chunk)
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return status.revision, size, digest.hexdigest(), status.version


@backup.reconcile
async def reconcile(ctx: Context[EtcdBackup], wanted: EtcdBackup) -> Result:
    if ctx.deleting or wanted.status.phase in ("Complete", "Failed"):
        return Result()
    status = wanted.status
    status.observed_generation = wanted.metadata.generation
    cluster = ctx.get(EtcdCluster, wanted.spec.cluster_name)
    if cluster is None:
        status.phase = "Pending"
        ctx.set_condition("Complete", False, reason="ClusterNotFound",
                          message=f"EtcdCluster {wanted.spec.cluster_name} does not exist",
                          obj=wanted)
        await ctx.update_status(wanted)
        return Result(requeue_after=RETRY_INTERVAL)
    healthy = {m.name for m in cluster.status.members or () if m.healthy and not m.learner}
    pods = ctx.list(Pod, labels=objects.selector(cluster))
    sources = [(str(p.metadata.name), url) for p in sorted(pods, key=lambda p: (
        not any(m.leader and m.name == p.metadata.name for m in cluster.status.members or ()),
        str(p.metadata.name))) if p.metadata.name in healthy
        and (url := objects.client_url(p)) is not None]
    tls = None
    if tlssecrets.enabled(cluster):  # members serve https and want a client certificate
        tls = tlssecrets.cached_client_context(ctx, cluster)
        if tls is None:
            status.phase = "Pending"
            ctx.set_condition("Complete", False, reason="ClientCertificateMissing",
                              message=f"the Secret {tlssecrets.client_secret_name(cluster)} "
                              "(the operator's client certificate) is not there yet",
                              obj=wanted)
            await ctx.update_status(wanted)
            return Result(requeue_after=RETRY_INTERVAL)
    errors: list[str] = []
    for member, url in sources:
        path = snapshot_path(wanted)
        try:
            revision, size, digest, version = await take_snapshot(url, path, tls)
        except EtcdError as exc:
            errors.append(f"{member}: {exc}")
            continue
        except OSError as exc:  # the directory, not the member: another member won't help
            status.phase = "Failed"
            ctx.set_condition("Complete", False, reason="WriteFailed",
                              message=f"cannot write {path}: {exc}", obj=wanted)
            ctx.events.warning("WriteFailed", f"cannot write {path}: {exc}",
                               action="Snapshot")
            metrics.collector.backup_failed(str(wanted.metadata.namespace),
                                            wanted.spec.cluster_name)
            await ctx.update_status(wanted)
            return Result()
        status.phase, status.path, status.member = "Complete", str(path), member
        status.revision, status.size, status.sha256 = revision, size, digest
        status.etcd_version = version
        ctx.set_condition("Complete", True, reason="SnapshotTaken",
                          message=f"{size} bytes from {member} at revision {revision}",
                          obj=wanted)
        ctx.events.normal("SnapshotTaken", f"snapshot of {cluster.metadata.name} from "
                          f"{member} (revision {revision}, {size} bytes) in {path}",
                          action="Snapshot")
        metrics.collector.backup_taken(str(wanted.metadata.namespace), wanted.spec.cluster_name)
        await ctx.update_status(wanted)
        return Result()
    status.phase = "Pending"  # taken again: a member restarting or a stream cut passes
    if errors:
        metrics.collector.backup_failed(str(wanted.metadata.namespace),
                                        wanted.spec.cluster_name)
    ctx.set_condition("Complete", False,
                      reason="SnapshotFailed" if errors else "NoHealthyMember",
                      message="; ".join(errors) or "no healthy member to take it from",
                      obj=wanted)
    await ctx.update_status(wanted)
    return Result(requeue_after=RETRY_INTERVAL)

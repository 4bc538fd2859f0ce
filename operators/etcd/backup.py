"""The EtcdBackup controller: one snapshot of a cluster, streamed from a healthy member.

etcd's ``Maintenance.Snapshot`` streams the member's backend database; through the v3
gateway it arrives as base64 chunks (:meth:`EtcdClient.snapshot_chunks`). The file is
written beside its final name and renamed once complete and checksummed, so a reader never
sees half a snapshot; it is 0600 in a 0700 directory (it holds every key). A backup is
done once: Complete or Failed (its file cannot be written), it is not taken again.

With ``spec.volume`` (a PersistentVolumeClaim) the snapshot is taken by a pod that mounts
the claim (:mod:`.snapshotpod`): the operator makes it, reads its results from its logs
and deletes it.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import ssl
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from operators.etcd import metrics, objects, snapshotpod, tlssecrets
from operators.etcd.etcdclient import EtcdClient, EtcdError
from operators.etcd.resource import GROUP, EtcdBackup, EtcdCluster
from setpoint.resources.models.core_v1 import Pod
from setpoint.runtime import Context, Controller, Result

PRUNE = f"{GROUP}/prune"
"""On an EtcdBackup into a claim that retention dropped (``"true"``): its file is deleted
by a pod, then the object."""
BACKOFF_LIMIT = 6
"""Failed snapshot pods before the backup is Failed: a Job's default ``backoffLimit``."""
BACKOFF = 10.0
"""Seconds before the pod after the first failure, doubled per failure up to
:data:`MAX_BACKOFF`, as a Job's controller waits (kubernetes pkg/controller/job/
backoff_utils.go, ``DefaultJobPodFailureBackOff``, ``MaxJobPodFailureBackOff``)."""
MAX_BACKOFF = 360.0
RETRY_INTERVAL = 2.0
"""Seconds between tries while the cluster has no member to take the snapshot from."""

backup = (Controller.for_(EtcdBackup, name="etcdbackup").owns(Pod)
          .permits({"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]}))


def snapshot_path(backup: EtcdBackup) -> Path:
    """The file of a backup into ``spec.directory``."""
    assert backup.spec.directory is not None
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


def parse_time(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value.replace("Z", "+00:00")) if value else None


SOURCE_TIMEOUT = 2.0
"""Seconds a member has to answer its status before a backup passes it over."""


@dataclass(frozen=True)
class Source:
    """A member a snapshot can be taken from, as it answered just now."""

    name: str
    url: str
    revision: int
    version: str


async def _answer(name: str, url: str, tls: ssl.SSLContext | None) -> Source | None:
    try:
        async with EtcdClient(url, tls=tls, timeout=SOURCE_TIMEOUT) as etcd:
            status = await etcd.status()
    except EtcdError:
        return None
    if status.is_learner:  # a learner may not have every committed write yet
        return None
    return Source(name, url, status.revision, status.version)


async def snapshot_sources(ctx: Context[EtcdBackup], cluster: EtcdCluster,
                           tls: ssl.SSLContext | None) -> list[Source]:
    """The voting members that answer their status now, the highest revision first (the
    leader first among equals): the member a snapshot is taken from is chosen by asking,
    as etcd-operator's backup does (pkg/backup/backup_manager.go ``getMaxRevision``: the
    status of every endpoint, the one with the highest revision, errors passed over), not
    from the cluster's status, which is a reconcile old: a member killed since (the leader
    too) must not be the one a backup waits on."""
    members = {m.name: m for m in cluster.status.members or () if not m.learner}
    pods = [p for p in ctx.list(Pod, labels=objects.selector(cluster))
            if p.metadata.name in members and p.metadata.deletion_timestamp is None]
    asked = [(str(p.metadata.name), url) for p in pods
             if (url := objects.client_url(p)) is not None]
    answers = await asyncio.gather(*(_answer(name, url, tls) for name, url in asked))
    return sorted((a for a in answers if a is not None), key=lambda a: (
        -a.revision, not members[a.name].leader, a.name))


@backup.reconcile
async def reconcile(ctx: Context[EtcdBackup], wanted: EtcdBackup) -> Result:
    if ctx.deleting:
        return Result()
    if wanted.spec.volume is not None and \
            (wanted.metadata.annotations or {}).get(PRUNE) == "true":
        return await _prune_claim_file(ctx, wanted)
    if wanted.status.phase in ("Complete", "Failed"):
        if wanted.spec.volume is not None:  # a pod left by an operator stopped after status
            leftover = ctx.get(Pod, snapshotpod.pod_name(wanted))
            if leftover is not None and leftover.metadata.deletion_timestamp is None:
                await ctx.delete(leftover)
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
    if wanted.spec.volume is not None:
        return await _into_claim(ctx, wanted, cluster, tls)
    errors: list[str] = []
    for source in await snapshot_sources(ctx, cluster, tls):
        member, url = source.name, source.url
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
            metrics.collector.backup_failed(cluster)
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
        metrics.collector.backup_taken(cluster)
        await ctx.update_status(wanted)
        return Result()
    status.phase = "Pending"  # taken again: a member restarting or a stream cut passes
    if errors:
        metrics.collector.backup_failed(cluster)
    ctx.set_condition("Complete", False,
                      reason="SnapshotFailed" if errors else "NoHealthyMember",
                      message="; ".join(errors) or "no healthy member to take it from",
                      obj=wanted)
    await ctx.update_status(wanted)
    return Result(requeue_after=RETRY_INTERVAL)


async def _pending(ctx: Context[EtcdBackup], wanted: EtcdBackup, reason: str, message: str,
                   retry: bool = False) -> Result:
    wanted.status.phase = "Pending"
    ctx.set_condition("Complete", False, reason=reason, message=message, obj=wanted)
    await ctx.update_status(wanted)
    return Result(requeue_after=RETRY_INTERVAL) if retry else Result()


async def _log(ctx: Context[EtcdBackup], pod: Pod, container: str,
               tail: int | None = None) -> Any:
    params: dict[str, str | int | bool | None] = {"container": container}
    if tail is not None:
        params["tailLines"] = tail
    return await ctx.client.request(
        "GET", f"/api/v1/namespaces/{pod.metadata.namespace}/pods/{pod.metadata.name}/log",
        params=params)


async def _into_claim(ctx: Context[EtcdBackup], wanted: EtcdBackup, cluster: EtcdCluster,
                      tls: ssl.SSLContext | None) -> Result:
    """One step of a snapshot into a claim: make the pod, wait for it, read it, delete it.
    A failed pod is deleted and a new one made (from the healthy member then first), as a
    Job's controller replaces a failed pod; the backup stays Pending meanwhile."""
    assert wanted.spec.volume is not None
    status = wanted.status
    name = snapshotpod.pod_name(wanted)
    pod = ctx.get(Pod, name)
    if pod is None:
        failed_at = parse_time(status.last_failure_time)
        if failed_at is not None and status.failures:
            wait = min(BACKOFF * 2 ** (status.failures - 1), MAX_BACKOFF)
            left = (failed_at + timedelta(seconds=wait) - datetime.now(UTC)).total_seconds()
            if left > 0:
                return Result(requeue_after=left)
        sources = await snapshot_sources(ctx, cluster, tls)
        if not sources:
            return await _pending(ctx, wanted, "NoHealthyMember",
                                  "no healthy member to take it from", retry=True)
        member = sources[0].name
        await ctx.apply(snapshotpod.snapshot_pod(wanted, cluster, member,
                                                 sources[0].version))
        return await _pending(ctx, wanted, "SnapshotRunning",
                              f"pod {name} takes the snapshot from {member} into "
                              f"PersistentVolumeClaim {wanted.spec.volume.claim_name}")
    if pod.metadata.deletion_timestamp is not None:  # the last try's pod is going
        return Result(requeue_after=RETRY_INTERVAL)
    phase = pod.status.phase if pod.status is not None else None
    annotations = pod.metadata.annotations or {}
    member = annotations.get(snapshotpod.MEMBER, "")
    if phase == "Failed":
        statuses = [*(pod.status.init_container_statuses or ()),
                    *(pod.status.container_statuses or ())] if pod.status is not None else []
        failed = [str(c.name) for c in statuses
                  if c.state is not None and c.state.terminated is not None
                  and c.state.terminated.exit_code != 0]
        why = f"pod {name} failed"
        if failed:
            log = await _log(ctx, pod, failed[0], tail=5)
            why += f" in container {failed[0]}: {str(log).strip()[-400:]}"
        ctx.events.warning("SnapshotFailed", why, action="Snapshot")
        metrics.collector.backup_failed(cluster)
        await ctx.delete(pod)
        status.failures = (status.failures or 0) + 1
        status.last_failure_time = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        if status.failures >= BACKOFF_LIMIT:
            status.phase = "Failed"
            ctx.set_condition("Complete", False, reason="BackoffLimitExceeded",
                              message=f"{status.failures} snapshot pods failed, the last: "
                              f"{why}", obj=wanted)
            await ctx.update_status(wanted)
            return Result()
        return await _pending(ctx, wanted, "SnapshotFailed", why)
    if phase != "Succeeded":
        return await _pending(ctx, wanted, "SnapshotRunning",
                              f"pod {name} ({phase or 'Pending'}) takes the snapshot from "
                              f"{member or 'a member'}")
    try:
        taken = snapshotpod.parse_results(
            await _log(ctx, pod, snapshotpod.STATUS_CONTAINER),
            await _log(ctx, pod, snapshotpod.CHECKSUM_CONTAINER))
    except ValueError as exc:  # not what the tools print: take it again, saying why
        await ctx.delete(pod)
        return await _pending(ctx, wanted, "SnapshotFailed", f"pod {name}: {exc}",
                              retry=True)
    path = snapshotpod.file_in_claim(wanted)
    status.phase, status.path, status.member = "Complete", path, member
    status.revision, status.size, status.sha256 = taken.revision, taken.size, taken.sha256
    status.etcd_version = annotations.get(snapshotpod.ETCD_VERSION)
    ctx.set_condition("Complete", True, reason="SnapshotTaken",
                      message=f"{taken.size} bytes from {member} at revision "
                      f"{taken.revision}", obj=wanted)
    ctx.events.normal("SnapshotTaken", f"snapshot of {cluster.metadata.name} from {member} "
                      f"(revision {taken.revision}, {taken.size} bytes) in "
                      f"PersistentVolumeClaim {wanted.spec.volume.claim_name} at {path}",
                      action="Snapshot")
    metrics.collector.backup_taken(cluster)
    await ctx.update_status(wanted)
    await ctx.delete(pod)
    return Result()


async def _prune_claim_file(ctx: Context[EtcdBackup], wanted: EtcdBackup) -> Result:
    """Delete the file of a backup retention dropped, by a pod mounting its claim, then the
    EtcdBackup (so the object is never gone while its file stays unnoticed)."""
    name = snapshotpod.prune_pod_name(wanted)
    pod = ctx.get(Pod, name)
    if pod is None:
        await ctx.apply(snapshotpod.prune_pod(wanted))
        return Result()
    phase = pod.status.phase if pod.status is not None else None
    if phase == "Succeeded":
        await ctx.delete(wanted)  # the pod goes with it (owner reference)
        return Result()
    if phase == "Failed" and pod.metadata.deletion_timestamp is None:
        ctx.events.warning("PruneFailed", f"pod {name} could not delete "
                           f"{snapshotpod.file_in_claim(wanted)}: trying again",
                           action="Prune")
        await ctx.delete(pod)
    return Result(requeue_after=RETRY_INTERVAL) if phase == "Failed" else Result()

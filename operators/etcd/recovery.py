"""Quorum-loss recovery and what it could not recover.

:mod:`.members` recovers a lost quorum from the newest survivor with data
(``--force-new-cluster``). When no member has data left (every claim lost, or a quorum
lost with no claim holding its member's data), this module turns the plan into a restore
from the cluster's latest Complete EtcdBackup: the members' leftover pods and claims are
deleted, then the founding member is made again with the snapshot restored into its
empty data directory (the ``spec.restore`` path, etcd's disaster-recovery guide), and the
others join as usual. With no backup at all the cluster stops (phase QuorumLost, reason
``RestoreNeeded``) until a person names a backup in ``spec.restore`` or consents to
starting it empty (the annotation ``etcd.setpoint.dev/accept-data-loss``): an etcd that
silently comes back empty looks healthy to every client that had data in it.

Either way ``status.recovery`` records the source, its revision and what is lost: the
highest revision the operator had observed (``status.revision``, kept from every reading)
minus the source's revision. etcd's revision counts every write, so this is the number of
writes (transactions) acknowledged to clients that the recovered cluster does not hold;
for a backup it is at most that (the backup's revision is read just before its snapshot).
"""

from __future__ import annotations

from operators.etcd.backuppolicy import clock, rfc3339
from operators.etcd.members import Step, _has_data_of
from operators.etcd.observe import Reading
from operators.etcd.resource import GROUP, EtcdBackup, EtcdCluster, RecoveryStatus
from setpoint.runtime import Context

ACCEPT_DATA_LOSS = f"{GROUP}/accept-data-loss"
"""On an EtcdCluster whose every member lost its data with no backup: a person's consent to
start it empty (``"true"``); removed by the operator once it has done so."""
RESTORE_NEEDED = "RestoreNeeded"
"""The reason while every member lost its data and there is no backup (phase QuorumLost)."""
STARTING_EMPTY = "StartingEmpty"


def latest_backup(ctx: Context[EtcdCluster], cluster: EtcdCluster) -> EtcdBackup | None:
    """The newest Complete EtcdBackup of this cluster (scheduled, before an upgrade or by
    hand), not one of an earlier cluster of the same name."""
    created = str(cluster.metadata.creation_timestamp or "")
    found = [b for b in ctx.list(EtcdBackup)
             if b.spec.cluster_name == cluster.metadata.name and b.status.phase == "Complete"
             and b.status.path and str(b.metadata.creation_timestamp or "") >= created]
    return max(found, key=lambda b: (str(b.metadata.creation_timestamp),
                                     b.status.revision or 0), default=None)


def source_backup(ctx: Context[EtcdCluster], cluster: EtcdCluster) -> EtcdBackup | None:
    """What a cluster whose every member lost its data is restored from: its latest backup,
    else the Complete EtcdBackup ``spec.restore`` names (the one it was seeded from, or one
    a person named for this recovery)."""
    found = latest_backup(ctx, cluster)
    if found is not None or cluster.spec.restore is None:
        return found
    named = cluster.spec.restore.backup_name
    return next((b for b in ctx.list(EtcdBackup) if b.metadata.name == named
                 and b.status.phase == "Complete" and b.status.path), None)


def _no_member_has_data(reading: Reading) -> bool:
    obs = reading.observed
    live = {o: c for o, c in obs.claims.items() if not c.terminating}
    voters = [m for m in obs.local_members or () if not m.is_learner]
    return not any(_has_data_of(live.get(obs.member_ordinals.get(m.id, -1)), m)
                   for m in voters)


def _members_lost(reading: Reading) -> int:
    obs = reading.observed
    live = {o: c for o, c in obs.claims.items() if not c.terminating}
    voters = [m for m in obs.local_members or () if not m.is_learner]
    return sum(1 for m in voters
               if not _has_data_of(live.get(obs.member_ordinals.get(m.id, -1)), m))


async def plan(ctx: Context[EtcdCluster], cluster: EtcdCluster, reading: Reading,
               step: Step) -> Step:
    """``step``, or the step of a restore from the latest backup when no member has data;
    records a recovery about to be carried out in ``cluster.status.recovery``."""
    status = cluster.status
    if step.action == "ForceNewCluster" and step.ordinal is not None \
            and not reading.observed.claims[step.ordinal].forced:  # not yet recorded
        assert step.member is not None
        answer = reading.statuses.get(step.member.id)
        revision = answer.revision if answer is not None else 0
        _record(ctx, cluster, RecoveryStatus(
            time=rfc3339(clock()), source="Survivor", member=step.member.name,
            revision=revision, members_lost=_members_lost(reading)))
        return step
    ran_before = status.revision is not None
    lost_all = (step.action == "Bootstrap" and ran_before) or \
        (step.action == "Wait" and step.reason == "QuorumLost"
         and reading.observed.local_members is not None and _no_member_has_data(reading))
    if not lost_all:
        return step
    backup = source_backup(ctx, cluster)
    if backup is None:
        return _without_backup(ctx, cluster, reading, step)
    name = backup.metadata.name
    if step.action == "Wait":  # clear what is left of the old members, then bootstrap
        return _clear_leftovers(reading, f"to restore the cluster from EtcdBackup {name}")
    revision = backup.status.revision or 0
    _record(ctx, cluster, RecoveryStatus(
        time=rfc3339(clock()), source="Backup", backup_name=name, revision=revision,
        members_lost=len(status.members or ()) or None))
    return Step("Bootstrap", "RestoringFromBackup",
                f"every member lost its data: restoring EtcdBackup {name} (revision "
                f"{revision})", 0, backup=name)


def _clear_leftovers(reading: Reading, why: str) -> Step:
    """Delete the old members' pods and claims one at a time; wait for them to go."""
    obs = reading.observed
    left = sorted(o for o in set(obs.pods) | set(obs.claims)
                  if not (obs.pods.get(o) is None or obs.pods[o].terminating)
                  or not (obs.claims.get(o) is None or obs.claims[o].terminating))
    if not left:
        return Step("Wait", "QuorumLost", "no member has data: waiting for the old "
                    f"members' pods and claims to go {why}")
    return Step("DeleteMemberObjects", "QuorumLost",
                f"no member has data: deleting the pod and claim of ordinal {left[0]} {why}",
                left[0])


def _without_backup(ctx: Context[EtcdCluster], cluster: EtcdCluster, reading: Reading,
                    step: Step) -> Step:
    """Every member lost its data and no backup holds it: only a person can choose between
    finding a backup and losing every key, so the cluster waits (phase QuorumLost) until
    spec.restore names a Complete EtcdBackup or the EtcdCluster carries the annotation
    ``etcd.setpoint.dev/accept-data-loss: "true"``, which is removed once the empty
    cluster is started (consent for this loss, not the next one)."""
    name = cluster.metadata.name
    if (cluster.metadata.annotations or {}).get(ACCEPT_DATA_LOSS) != "true":
        return Step("Wait", RESTORE_NEEDED,
                    f"every member lost its data and there is no Complete EtcdBackup of "
                    f"{name}: to restore one, set spec.restore.backupName to a Complete "
                    "EtcdBackup in this namespace; to start the cluster empty, losing every "
                    f"key, run: kubectl annotate etcdcluster {name} {ACCEPT_DATA_LOSS}=true")
    if step.action == "Wait":
        return _clear_leftovers(reading, f"to start it empty ({ACCEPT_DATA_LOSS})")
    _record(ctx, cluster, RecoveryStatus(
        time=rfc3339(clock()), source="Empty", revision=0,
        members_lost=len(cluster.status.members or ()) or None))
    ctx.events.warning("DataLost", "every member lost its data and there is no Complete "
                       f"EtcdBackup of {name}: starting it empty, as {ACCEPT_DATA_LOSS} says",
                       action="Bootstrap")
    return Step("Bootstrap", STARTING_EMPTY, "every member lost its data: starting the "
                f"cluster empty ({ACCEPT_DATA_LOSS})", 0)


def _record(ctx: Context[EtcdCluster], cluster: EtcdCluster, recovery: RecoveryStatus) -> None:
    last = cluster.status.revision
    recovery.last_observed_revision = last
    recovery.revisions_lost = max(0, last - recovery.revision) if last is not None else None
    cluster.status.recovery = recovery
    cluster.status.revision = recovery.revision  # what is seen from now on is measured anew
    source = {"Survivor": f"member {recovery.member}",
              "Backup": f"EtcdBackup {recovery.backup_name}",
              "Empty": "nothing (started empty)"}[recovery.source]
    lost = (f"{recovery.revisions_lost} revision(s) the operator had seen (up to "
            f"{last}) are not in it" if recovery.revisions_lost else
            "every revision the operator had seen is in it")
    ctx.events.warning("QuorumRecovery", f"recovering {cluster.metadata.name} from {source} "
                       f"at revision {recovery.revision}: {lost}", action="Recover")


def track_revision(cluster: EtcdCluster, reading: Reading) -> None:
    """Keep the highest revision any member reported (the measure of a later loss)."""
    seen = [s.revision for s in reading.statuses.values() if s.revision]
    if seen:
        cluster.status.revision = max(cluster.status.revision or 0, *seen)


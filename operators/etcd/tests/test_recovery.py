"""Quorum-loss recovery (operators/etcd/recovery.py): from the latest Complete backup when
no member has data (etcd Documentation/op-guide/recovery.md: restore a snapshot into new
members), from the newest survivor otherwise, with what could not be recovered counted
against the highest revision the operator had seen.

The planning reads the cache and records events only: a stand-in for the Context keeps
these tests to the decision (the real restore is in test_real.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from operators.etcd import health, recovery
from operators.etcd.etcdclient import MemberStatus
from operators.etcd.members import ClaimView, Observed, PodView, Step, plan
from operators.etcd.observe import Reading
from operators.etcd.resource import (
    EtcdBackup,
    EtcdBackupSpec,
    EtcdBackupStatus,
    EtcdCluster,
    EtcdClusterSpec,
    RestoreSpec,
)
from operators.etcd.tests.test_members import member


@dataclass
class Events:
    said: list[tuple[str, str]] = field(default_factory=list)

    def warning(self, reason: str, note: str, **_: Any) -> None:
        self.said.append((reason, note))


@dataclass
class Ctx:
    """What recovery.plan uses of a Context: the cached backups and the events."""

    backups: list[EtcdBackup]
    events: Events = field(default_factory=Events)

    def list(self, kind: type, **_: Any) -> list[EtcdBackup]:
        assert kind is EtcdBackup
        return self.backups


def backup(name: str, created: str, revision: int, cluster: str = "e",
           phase: str = "Complete") -> EtcdBackup:
    made = EtcdBackup(name=name, spec=EtcdBackupSpec(cluster_name=cluster, directory="/b"),
                      status=EtcdBackupStatus(phase=phase, path=f"/b/ns-{name}.db",
                                              revision=revision))
    made.metadata.creation_timestamp = datetime.fromisoformat(created)
    return made


def ran(revision: int | None = 120) -> EtcdCluster:
    cluster = EtcdCluster(name="e", spec=EtcdClusterSpec(size=3))
    cluster.metadata.creation_timestamp = datetime.fromisoformat("2025-01-01T00:00:00Z")
    cluster.status.revision = revision
    return cluster


BACKUPS = [backup("old", "2025-01-02T00:00:00Z", 50),
           backup("newest", "2025-01-03T00:00:00Z", 100),
           backup("failed", "2025-01-04T00:00:00Z", 110, phase="Failed"),
           backup("other-cluster", "2025-01-05T00:00:00Z", 115, cluster="f"),
           backup("namesake", "2024-12-31T00:00:00Z", 118)]


async def test_a_cluster_whose_every_member_lost_its_data_restores_the_latest_backup() -> None:
    cluster, ctx = ran(), Ctx(BACKUPS)
    step = plan(Observed(size=3))  # no pod, no claim left
    assert step.action == "Bootstrap"

    step = await recovery.plan(ctx, cluster, Reading(Observed(size=3)), step)  # type: ignore[arg-type]

    assert (step.action, step.reason, step.backup) == ("Bootstrap", "RestoringFromBackup",
                                                       "newest")
    record = cluster.status.recovery
    assert record is not None and (record.source, record.backup_name) == ("Backup", "newest")
    assert (record.revision, record.last_observed_revision, record.revisions_lost) == \
        (100, 120, 20)
    assert cluster.status.revision == 100  # later losses are measured from the restore
    assert ctx.events.said[0][0] == "QuorumRecovery" and "20 revision(s)" in ctx.events.said[0][1]


async def test_a_new_cluster_bootstraps_as_usual() -> None:
    step = plan(Observed(size=3))
    assert await recovery.plan(Ctx(BACKUPS), ran(None), Reading(Observed(size=3)),  # type: ignore[arg-type]
                               step) == step


async def test_every_member_lost_with_no_backup_waits_for_a_person() -> None:
    """No backup holds the data: starting empty would look healthy to every client that
    had keys in it, so the cluster stops (phase QuorumLost) and says what a person can do."""
    ctx, cluster = Ctx([]), ran()
    step = await recovery.plan(ctx, cluster, Reading(Observed(size=3)),  # type: ignore[arg-type]
                               plan(Observed(size=3)))
    assert (step.action, step.reason) == ("Wait", "RestoreNeeded")
    assert "spec.restore.backupName" in step.message
    assert "kubectl annotate etcdcluster e etcd.setpoint.dev/accept-data-loss=true" \
        in step.message
    assert health.phase(cluster, Reading(Observed(size=3)), step) == "QuorumLost"
    assert health.degraded(Reading(Observed(size=3)), step).reason == "RestoreNeeded"
    assert ctx.events.said == [] and cluster.status.recovery is None


async def test_with_consent_the_cluster_starts_empty_and_counts_every_revision_lost() -> None:
    ctx, cluster = Ctx([]), ran()
    cluster.metadata.annotations = {recovery.ACCEPT_DATA_LOSS: "true"}
    step = await recovery.plan(ctx, cluster, Reading(Observed(size=3)),  # type: ignore[arg-type]
                               plan(Observed(size=3)))
    assert (step.action, step.reason, step.backup) == ("Bootstrap", "StartingEmpty", None)
    record = cluster.status.recovery
    assert record is not None and (record.source, record.revisions_lost) == ("Empty", 120)
    assert [reason for reason, _ in ctx.events.said] == ["QuorumRecovery", "DataLost"]


async def test_a_backup_named_in_spec_restore_is_restored_when_the_cluster_has_none() -> None:
    cluster = ran()
    cluster.spec.restore = RestoreSpec(backup_name="other-cluster")
    step = await recovery.plan(Ctx(BACKUPS[3:4]), cluster,  # type: ignore[arg-type]
                               Reading(Observed(size=3)), plan(Observed(size=3)))
    assert (step.action, step.reason, step.backup) == ("Bootstrap", "RestoringFromBackup",
                                                       "other-cluster")


def quorum_lost(claims: dict[int, str]) -> Reading:
    """Three voters as the one member still answering (e-0) last knew them."""
    obs = Observed(size=3, claims={o: ClaimView(c) for o, c in claims.items()},
                   pods={o: PodView(client_url=f"http://127.0.0.{o + 1}:2379")
                         for o in claims},
                   local_members=[member(o) for o in range(3)],
                   member_ordinals={100 + o: o for o in range(3)}, healthy={100},
                   raft_index={0: 10})
    statuses = {100: MemberStatus(id=100, version="3.5.1", leader=0, revision=117,
                                  raft_index=10, is_learner=False, db_size=0)}
    return Reading(obs, statuses=statuses)


async def test_a_quorum_lost_with_no_member_holding_data_clears_the_members_for_a_restore(
        ) -> None:
    """Claims made anew hold no member's data: nothing to force a new cluster from."""
    reading = quorum_lost({0: "ffff", 1: "eeee"})
    step = plan(reading.observed)
    assert (step.action, step.reason) == ("Wait", "QuorumLost")

    step = await recovery.plan(Ctx(BACKUPS), ran(), reading, step)  # type: ignore[arg-type]

    assert (step.action, step.ordinal, step.reason) == ("DeleteMemberObjects", 0, "QuorumLost")
    assert "EtcdBackup newest" in step.message


async def test_a_quorum_lost_with_no_data_and_no_backup_waits_then_clears_with_consent(
        ) -> None:
    reading = quorum_lost({0: "ffff", 1: "eeee"})
    cluster = ran()
    step = await recovery.plan(Ctx([]), cluster, reading, plan(reading.observed))  # type: ignore[arg-type]
    assert (step.action, step.reason) == ("Wait", "RestoreNeeded")

    cluster.metadata.annotations = {recovery.ACCEPT_DATA_LOSS: "true"}
    step = await recovery.plan(Ctx([]), cluster, reading, plan(reading.observed))  # type: ignore[arg-type]
    assert (step.action, step.ordinal) == ("DeleteMemberObjects", 0)


async def test_a_survivor_recovery_records_its_revision_against_the_last_seen_once() -> None:
    reading = quorum_lost({0: f"{100:x}"})
    step = plan(reading.observed)
    assert (step.action, step.ordinal) == ("ForceNewCluster", 0)
    cluster = ran()

    assert await recovery.plan(Ctx(BACKUPS), cluster, reading, step) == step  # type: ignore[arg-type]

    record = cluster.status.recovery
    assert record is not None
    assert (record.source, record.member, record.revision, record.revisions_lost,
            record.members_lost) == ("Survivor", "e-0", 117, 3, 2)
    # planned again once the claim is marked: recorded already, not overwritten with 0 lost
    reading.observed.claims[0] = ClaimView(f"{100:x}", forced=True)
    await recovery.plan(Ctx(BACKUPS), cluster, reading, Step(  # type: ignore[arg-type]
        "ForceNewCluster", "QuorumLost", "again", 0, member(0)))
    assert cluster.status.recovery is not None and cluster.status.recovery.revisions_lost == 3

"""An EtcdCluster's status from one reading and the step taken: phase, members, conditions.

- Available: a quorum of the voting members answers (etcd serves reads and writes).
- Progressing: the operator is changing the cluster (the step's reason and message), or
  ``AsExpected`` when there is nothing to do.
- Degraded: a voting member does not answer, or the quorum is lost.
- UpgradeInProgress: members run different versions or not the spec's.

The phase is the lifecycle state of the README's diagram, drawn from the same step.
"""

from __future__ import annotations

from dataclasses import dataclass

from operators.etcd.members import Step, quorum
from operators.etcd.observe import Reading
from operators.etcd.resource import EtcdCluster, MemberStatus, Phase

SCALING = {"ScalingUp", "ScalingDown", "LearnerCaughtUp", "LearnerStarting", "MemberStarting",
           "ClaimTerminating"}
UPGRADING = {"UpgradingMember"}
QUORUM_LOST = {"QuorumLost", "RestoreNeeded"}
"""Step reasons of phase QuorumLost (``RestoreNeeded``: every member lost its data and
there is no backup, :mod:`.recovery`)."""


@dataclass(frozen=True)
class Verdict:
    status: bool
    reason: str
    message: str


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".") if p.isdigit())


def members_status(reading: Reading) -> list[MemberStatus]:
    obs = reading.observed
    out = []
    for member in obs.members or ():
        ordinal = obs.member_ordinals.get(member.id)
        answer = reading.statuses.get(member.id)
        name = member.name or (f"#{ordinal}" if ordinal is not None else member.hex_id)
        out.append(MemberStatus(
            name=name, id=member.hex_id, peer_url=member.peer_urls[0] if member.peer_urls
            else None, version=answer.version if answer is not None else None,
            healthy=answer is not None, learner=member.is_learner,
            leader=member.id == obs.leader))
    return sorted(out, key=lambda m: m.name)


def phase(cluster: EtcdCluster, reading: Reading, step: Step) -> Phase:
    """The lifecycle state (the README's diagram): the step taken says it."""
    if step.reason in QUORUM_LOST:
        return "QuorumLost"
    if step.action == "Done":
        return "Running"
    if cluster.status.phase in (None, "Creating"):
        return "Creating"  # until the cluster first reaches its size
    if step.reason in UPGRADING or upgrading(cluster, reading).status:
        return "Upgrading"
    if step.reason in SCALING:
        return "Scaling"
    return "Recovering"


def available(reading: Reading) -> Verdict:
    obs = reading.observed
    if obs.members is None:
        return Verdict(False, "NoQuorum", "no member can give the membership: the cluster "
                       "is starting, or has lost its quorum")
    voters = [m for m in obs.members if not m.is_learner]
    healthy = [m for m in voters if m.id in obs.healthy]
    if len(healthy) >= quorum(len(voters)):
        return Verdict(True, "QuorumAvailable",
                       f"{len(healthy)} of {len(voters)} voting members answer")
    return Verdict(False, "NoQuorum", f"only {len(healthy)} of {len(voters)} voting "
                   f"members answer; {quorum(len(voters))} are needed")


def progressing(step: Step) -> Verdict:
    if step.action == "Done":
        return Verdict(False, "AsExpected", step.message)
    return Verdict(True, step.reason, step.message)


def degraded(reading: Reading, step: Step) -> Verdict:
    obs = reading.observed
    if step.reason in QUORUM_LOST:
        return Verdict(True, step.reason, step.message)
    voters = [m for m in obs.members or () if not m.is_learner]
    sick = sorted(m.name or m.hex_id for m in voters if m.id not in obs.healthy)
    if sick:
        return Verdict(True, "MembersUnhealthy",
                       f"member(s) {', '.join(sick)} do not answer: check their pods' "
                       "events and logs")
    return Verdict(False, "AsExpected", "every voting member answers")


def upgrading(cluster: EtcdCluster, reading: Reading) -> Verdict:
    versions = sorted({s.version for s in reading.statuses.values() if s.version},
                      key=version_key)
    wanted = cluster.spec.version
    if not versions or versions == [wanted]:
        return Verdict(False, "VersionsMatch", f"every member answering runs {wanted}"
                       if versions else "no member answers")
    return Verdict(True, "UpgradingMembers",
                   f"members run {', '.join(versions)}; {wanted} is wanted")


def current_version(reading: Reading) -> str | None:
    versions = [s.version for s in reading.statuses.values() if s.version]
    return min(versions, key=version_key) if versions else None

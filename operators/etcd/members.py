"""Membership planning: from what etcd and the cluster say now, the one next step.

Pure: no I/O. The controller observes (pods, claims, and the membership read from etcd
itself just before), asks :func:`plan` for the next :class:`Step`, carries it out, and
observes again. One change to the membership at a time, as etcd's runtime-reconfiguration
guide says (``Documentation/op-guide/runtime-configuration.md``): a new member joins as a
learner (it cannot vote, so it cannot cost quorum while it catches up) and is promoted once
the leader says it is in sync; a member leaves through ``member remove`` before its pod
and its data go; a removal that would leave fewer healthy voters than the new quorum waits.

Because every decision is taken from a fresh reading, an operator killed between any two
steps resumes where it stopped: a member added whose claim was never made is seen as a
member without data (removed and added again), a claim made whose pod was not is given its
pod, and so on; no step is ever applied twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from operators.etcd.etcdclient import Member

Action = Literal[
    "Bootstrap",        # make the founding member's claim and pod
    "RecordMemberId",   # write the founding member's id on its claim
    "CreatePod",        # a member (or a member to be) whose pod is gone: make it again
    "AddMember",        # member add --learner, then its claim and pod
    "PromoteMember",    # a caught-up learner becomes a voter
    "RemoveMember",     # member remove (its pod and claim go afterwards)
    "TransferLeader",   # before removing the leader
    "DeleteMemberObjects",  # the pod and claim of something that is not (or no longer) a member
    "UpgradeMember",    # delete a member's pod to start it again on the new version
    "ForceNewCluster",  # quorum lost for good: restart the newest survivor alone on its data
    "FinishForceNewCluster",  # the survivor leads alone: restart it without the flag
    "RestartMember",    # restart a member on its renewed certificate (certrotation.py)
    "Wait",             # nothing safe to do now: look again soon
    "Done",
]


@dataclass(frozen=True)
class PodView:
    """What matters of a member pod."""

    exists: bool = True
    terminating: bool = False
    client_url: str | None = None
    """Set once the pod has an address."""
    version: str | None = None
    ready: bool = True
    """The kubelet's readiness probe passes (etcd's ``/health``: it has a leader and
    serves), so the client Service routes to it."""


@dataclass(frozen=True)
class ClaimView:
    """What matters of a member claim: whose data it holds."""

    member_id: str | None
    """The hex id annotation (``"bootstrap"`` for the founder before its id is known)."""
    terminating: bool = False
    forced: bool = False
    """Its member is to start with ``--force-new-cluster`` (quorum-loss recovery)."""


@dataclass
class Observed:
    """One reading of the world, by member ordinal."""

    size: int
    pods: dict[int, PodView] = field(default_factory=dict)
    claims: dict[int, ClaimView] = field(default_factory=dict)
    members: list[Member] | None = None
    """The membership as etcd gave it, or None when no member could say."""
    member_ordinals: dict[int, int] = field(default_factory=dict)
    """Member id -> ordinal (by peer URL); members not of ours are absent."""
    local_members: list[Member] | None = None
    """Without a quorum: the membership as a surviving member last knew it."""
    raft_index: dict[int, int] = field(default_factory=dict)
    """Ordinal -> the raft index its member has applied, for the members that answered."""
    healthy: set[int] = field(default_factory=set)
    """Ids of the members that answered a status request."""
    leader: int | None = None


@dataclass(frozen=True)
class Step:
    action: Action
    reason: str
    message: str
    ordinal: int | None = None
    member: Member | None = None
    target: int | None = None
    """TransferLeader: the member id to hand leadership to."""
    backup: str | None = None
    """Bootstrap: the EtcdBackup to restore (quorum-loss recovery, :mod:`.recovery`)."""


BOOTSTRAP = "bootstrap"


def quorum(voters: int) -> int:
    return voters // 2 + 1


def _by_ordinal(obs: Observed) -> dict[int, Member]:
    members = obs.members or []
    return {obs.member_ordinals[m.id]: m for m in members if m.id in obs.member_ordinals}


def _has_data_of(claim: ClaimView | None, member: Member) -> bool:
    """Whether ``claim`` holds ``member``'s data (the founder's claim before its id is
    recorded counts as its own)."""
    if claim is None or claim.terminating:
        return False
    return claim.member_id in (member.hex_id, BOOTSTRAP)


def plan(obs: Observed) -> Step:
    """The next step towards ``obs.size`` healthy voting members."""
    if obs.members is None:
        return _plan_without_membership(obs)
    members = _by_ordinal(obs)
    voters = [m for m in obs.members if not m.is_learner]
    healthy_voters = [m for m in voters if m.id in obs.healthy]

    for ordinal, view in sorted(obs.claims.items()):
        if view.forced and ordinal in members and len(obs.members) == 1 \
                and members[ordinal].id in obs.healthy:
            return Step("FinishForceNewCluster", "QuorumRecovered",
                        f"member {members[ordinal].name} leads alone on its data: restarting "
                        "it without --force-new-cluster before adding members back",
                        ordinal, members[ordinal])

    for ordinal, member in sorted(members.items()):
        claim = obs.claims.get(ordinal)
        if claim is not None and claim.member_id == BOOTSTRAP and member.started:
            return Step("RecordMemberId", "Bootstrapped",
                        f"member {member.name} founded the cluster as {member.hex_id}",
                        ordinal, member)

    for ordinal, member in sorted(members.items()):
        if _has_data_of(obs.claims.get(ordinal), member):
            continue
        name = member.name or f"#{ordinal}"
        if member.is_learner or not member.started:
            return Step("RemoveMember", "MemberDataLost",
                        f"member {name} ({member.hex_id}) has no data volume: removing it "
                        "to add it again", ordinal, member)
        others = [m for m in healthy_voters if m.id != member.id]
        if len(others) < quorum(len(voters) - 1) or len(voters) == 1:
            return Step("Wait", "MemberDataLost",
                        f"member {name} lost its data, but removing it would leave "
                        f"{len(others)} healthy voting member(s) of {len(voters) - 1}: "
                        "waiting for the others to recover")
        return Step("RemoveMember", "MemberDataLost",
                    f"member {name} ({member.hex_id}) lost its data: removing it to "
                    "replace it", ordinal, member)

    for ordinal in sorted(set(obs.pods) | set(obs.claims)):
        if ordinal in members:
            continue
        pod, claim = obs.pods.get(ordinal), obs.claims.get(ordinal)
        if (pod is not None and not pod.terminating) or (claim is not None
                                                          and not claim.terminating):
            why = "beyond the cluster's size" if ordinal >= obs.size else \
                "of a member no longer in the cluster"
            return Step("DeleteMemberObjects", "RemovingLeftovers",
                        f"deleting the pod and claim of ordinal {ordinal}, {why}", ordinal)

    for ordinal, member in sorted(members.items()):
        if ordinal not in obs.pods:
            return Step("CreatePod", "MemberPodMissing",
                        f"member {member.name or ordinal}'s pod is gone: starting it again "
                        "on its data", ordinal, member)

    pending = [(o, m) for o, m in sorted(members.items()) if m.is_learner or not m.started]
    for ordinal, member in pending:
        if not member.started:
            return Step("Wait", "MemberStarting",
                        f"member #{ordinal} ({member.hex_id}) has not started yet", ordinal,
                        member)
        if member.id in obs.healthy:
            return Step("PromoteMember", "LearnerCaughtUp",
                        f"promoting learner {member.name}", ordinal, member)
        return Step("Wait", "LearnerStarting", f"learner {member.name} is not answering yet",
                    ordinal, member)

    if len(healthy_voters) < len(voters):
        sick = sorted(m.name or m.hex_id for m in voters if m.id not in obs.healthy)
        return Step("Wait", "MembersUnhealthy",
                    f"waiting for member(s) {', '.join(sick)} to answer before changing "
                    "the membership")

    missing = [o for o in range(obs.size) if o not in members]
    if missing:
        if any(o in obs.claims for o in missing):
            return Step("Wait", "ClaimTerminating",
                        f"waiting for the old claim of ordinal {missing[0]} to go")
        return Step("AddMember", "ScalingUp",
                    f"adding member {missing[0]} as a learner ({len(voters)} of {obs.size} "
                    "voting members)", missing[0])

    extra = sorted(((o, m) for o, m in members.items() if o >= obs.size), reverse=True)
    if extra:
        ordinal, member = extra[0]
        if member.id == obs.leader:
            target = next((m.id for o, m in sorted(members.items())
                           if o < obs.size and m.id in obs.healthy and not m.is_learner), None)
            if target is not None:
                return Step("TransferLeader", "ScalingDown",
                            f"moving leadership away from {member.name} before removing it",
                            ordinal, member, target)
        return Step("RemoveMember", "ScalingDown",
                    f"removing member {member.name} ({len(voters)} voting members, "
                    f"{obs.size} wanted)", ordinal, member)

    return Step("Done", "AsExpected", f"{len(voters)} healthy voting member(s)")


def _plan_without_membership(obs: Observed) -> Step:
    """No member could give the membership: a new cluster, members starting or restarting,
    or a quorum lost."""
    live_claims = {o: c for o, c in obs.claims.items() if not c.terminating}
    if not live_claims and not obs.pods:
        return Step("Bootstrap", "Bootstrapping", "starting the founding member", 0)
    for ordinal in sorted(live_claims):
        if ordinal not in obs.pods:
            return Step("CreatePod", "MemberPodMissing",
                        f"ordinal {ordinal} has its data but no pod: starting it again",
                        ordinal)
    if obs.local_members is not None:
        step = _quorum_loss(obs, live_claims)
        if step is not None:
            return step
    if obs.healthy:
        return Step("Wait", "QuorumLost",
                    f"{len(obs.healthy)} member(s) answer but none can reach a quorum")
    return Step("Wait", "MembersStarting", "waiting for a member to answer")


def _quorum_loss(obs: Observed, live_claims: dict[int, ClaimView]) -> Step | None:
    """When a majority of the voters lost their data, no restart brings the quorum back:
    recover from the survivor that has applied the most (etcd's disaster-recovery guide,
    ``--force-new-cluster``), and count what is lost. None while a quorum could still come
    back."""
    voters = [m for m in obs.local_members or () if not m.is_learner]
    with_data = {obs.member_ordinals[m.id]: m for m in voters
                 if m.id in obs.member_ordinals
                 and _has_data_of(live_claims.get(obs.member_ordinals[m.id]), m)}
    if len(with_data) >= quorum(len(voters)):
        return None
    survivors = [o for o, m in with_data.items() if m.id in obs.healthy]
    lost = len(voters) - len(with_data)
    if not survivors:
        return Step("Wait", "QuorumLost",
                    f"{lost} of {len(voters)} voting members lost their data and no survivor "
                    "answers: restore the cluster from a backup")
    newest = max(survivors, key=lambda o: (obs.raft_index.get(o, 0), -o))
    return Step("ForceNewCluster", "QuorumLost",
                f"{lost} of {len(voters)} voting members lost their data: recovering from "
                f"member {with_data[newest].name} (raft index "
                f"{obs.raft_index.get(newest, 0)}), the newest of {len(survivors)} "
                "survivor(s)", newest, with_data[newest])


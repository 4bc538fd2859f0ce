"""Membership planning (operators/etcd/members.py): the one next step from a reading.

The rules are etcd's runtime-reconfiguration guide's
(etcd Documentation/op-guide/runtime-configuration.md): one change at a time, new members
as learners promoted once in sync, removal before the member's data goes, and never a
removal that leaves fewer healthy voters than the new quorum."""

from __future__ import annotations

from operators.etcd.etcdclient import Member
from operators.etcd.members import BOOTSTRAP, ClaimView, Observed, PodView, plan


def member(ordinal: int, *, learner: bool = False, started: bool = True) -> Member:
    return Member(id=100 + ordinal, name=f"e-{ordinal}" if started else "",
                  peer_urls=(f"http://e-{ordinal}.e.ns.svc.cluster.local:2380",),
                  client_urls=(), is_learner=learner)


def world(size: int, ordinals: list[int], *, healthy: list[int] | None = None,
          learners: tuple[int, ...] = (), leader: int = 0,
          claims: dict[int, str | None] | None = None, pods: list[int] | None = None
          ) -> Observed:
    """``ordinals`` are members with pods and their own claims unless said otherwise."""
    members = [member(o, learner=o in learners) for o in ordinals]
    obs = Observed(size=size, members=members,
                   member_ordinals={m.id: o for o, m in zip(ordinals, members, strict=True)},
                   healthy={100 + o for o in (ordinals if healthy is None else healthy)},
                   leader=100 + leader)
    for o in (ordinals if pods is None else pods):
        obs.pods[o] = PodView(client_url=f"http://127.0.0.{o + 1}:2379")
    for o in ordinals:
        obs.claims[o] = ClaimView(f"{100 + o:x}")
    for o, claim in (claims or {}).items():
        if claim is None:
            obs.claims.pop(o, None)
        else:
            obs.claims[o] = ClaimView(claim)
    return obs


def test_a_new_cluster_bootstraps_its_founder_then_records_its_id() -> None:
    assert plan(Observed(size=3)).action == "Bootstrap"
    founded = world(3, [0], claims={0: BOOTSTRAP})
    step = plan(founded)
    assert (step.action, step.ordinal) == ("RecordMemberId", 0)


def test_members_are_added_one_at_a_time_as_learners_and_promoted() -> None:
    step = plan(world(3, [0]))
    assert (step.action, step.ordinal) == ("AddMember", 1)
    # added, claim and pod made, not started yet: wait rather than add another
    joining = world(3, [0, 1], learners=(1,), healthy=[0])
    joining.members = [member(0), member(1, learner=True, started=False)]
    assert plan(joining).reason == "MemberStarting"
    assert plan(world(3, [0, 1], learners=(1,))).action == "PromoteMember"
    assert plan(world(3, [0, 1])).ordinal == 2
    assert plan(world(3, [0, 1, 2])).action == "Done"


def test_no_member_is_added_while_a_voter_does_not_answer() -> None:
    step = plan(world(5, [0, 1, 2], healthy=[0, 1]))
    assert (step.action, step.reason) == ("Wait", "MembersUnhealthy")
    assert "e-2" in step.message


def test_scaling_down_removes_the_highest_member_moving_leadership_first() -> None:
    step = plan(world(3, [0, 1, 2, 3, 4]))
    assert (step.action, step.ordinal) == ("RemoveMember", 4)
    step = plan(world(3, [0, 1, 2, 3, 4], leader=4))
    assert (step.action, step.ordinal, step.target) == ("TransferLeader", 4, 100)


def test_a_lost_pod_is_started_again_on_its_data_and_the_cluster_never_shrinks() -> None:
    step = plan(world(3, [0, 1, 2], healthy=[0, 1], pods=[0, 1]))
    assert (step.action, step.ordinal) == ("CreatePod", 2)


def test_a_member_whose_claim_is_new_is_removed_then_its_leftovers_then_added_again() -> None:
    lost = world(3, [0, 1, 2], claims={2: None}, healthy=[0, 1])
    step = plan(lost)
    assert (step.action, step.ordinal, step.reason) == ("RemoveMember", 2, "MemberDataLost")
    # a claim of another member's id (made again by hand) is no better
    assert plan(world(3, [0, 1, 2], claims={2: "ffff"})).action == "RemoveMember"
    removed = world(3, [0, 1], pods=[0, 1, 2], claims={2: "66"})
    assert plan(removed).action == "DeleteMemberObjects"
    removed.claims[2] = ClaimView("66", terminating=True)
    removed.pods.pop(2)
    assert plan(removed).reason == "ClaimTerminating"
    removed.claims.pop(2)
    assert (plan(removed).action, plan(removed).ordinal) == ("AddMember", 2)


def test_a_removal_that_would_cost_the_quorum_waits() -> None:
    # 3 voters, e-2 lost its data and e-1 does not answer: removing e-2 leaves 1 of 2
    step = plan(world(3, [0, 1, 2], claims={2: None}, healthy=[0]))
    assert (step.action, step.reason) == ("Wait", "MemberDataLost")
    # a single member that lost its data cannot be replaced from nothing
    assert plan(world(1, [0], claims={0: None})).action == "Wait"


def test_an_operator_killed_after_member_add_removes_the_dataless_learner() -> None:
    obs = world(3, [0, 1], learners=(1,), claims={1: None}, pods=[0], healthy=[0])
    obs.members = [member(0), member(1, learner=True, started=False)]
    step = plan(obs)
    assert (step.action, step.ordinal) == ("RemoveMember", 1)


def test_without_a_membership_claims_get_their_pods_back_and_quorum_loss_is_said() -> None:
    obs = Observed(size=3, claims={o: ClaimView(f"{100 + o:x}") for o in range(3)},
                   pods={0: PodView(client_url="http://127.0.0.1:2379")})
    assert (plan(obs).action, plan(obs).ordinal) == ("CreatePod", 1)
    obs.pods.update({1: PodView(), 2: PodView()})
    obs.healthy = {100}
    assert plan(obs).reason == "QuorumLost"


def test_a_quorum_lost_for_good_is_recovered_from_the_newest_survivor() -> None:
    """Two of three voters lost their data (claims gone): no restart brings a quorum back,
    so the survivor that applied the most starts alone with --force-new-cluster (etcd's
    Documentation/op-guide/recovery.md), then again without it, then members are added."""
    members = [member(o) for o in range(3)]
    obs = Observed(size=3, claims={0: ClaimView(f"{100:x}"), 1: ClaimView(f"{101:x}")},
                   pods={0: PodView(client_url="http://127.0.0.1:2379"),
                         1: PodView(client_url="http://127.0.0.2:2379")},
                   local_members=members, member_ordinals={100: 0, 101: 1, 102: 2},
                   healthy={100, 101}, raft_index={0: 10, 1: 12})
    # two of three still have data: a quorum can come back, so this is not yet a loss
    assert plan(obs).action == "Wait"
    del obs.claims[1]
    obs.pods.pop(1)
    obs.healthy = {100}
    step = plan(obs)
    assert (step.action, step.ordinal, step.reason) == ("ForceNewCluster", 0, "QuorumLost")
    assert "2 of 3 voting members lost their data" in step.message
    # the newest survivor wins when several answer
    obs.claims[2] = ClaimView(f"{102:x}")
    obs.pods[2] = PodView(client_url="http://127.0.0.3:2379")
    obs.healthy, obs.raft_index = {100, 102}, {0: 10, 2: 15}
    del obs.claims[0]
    obs.pods.pop(0)
    obs.claims[1] = ClaimView("ffff")  # made again by hand: not member 1's data
    obs.pods[1] = PodView()
    assert (plan(obs).action, plan(obs).ordinal) == ("ForceNewCluster", 2)

    alone = world(3, [2], claims={2: f"{102:x}"})
    alone.claims[2] = ClaimView(f"{102:x}", forced=True)
    alone.leader = 102
    assert plan(alone).action == "FinishForceNewCluster"
    alone.claims[2] = ClaimView(f"{102:x}")
    assert (plan(alone).action, plan(alone).ordinal) == ("AddMember", 0)


def test_no_survivor_with_data_means_waiting_for_a_restore() -> None:
    obs = Observed(size=3, claims={}, pods={0: PodView(client_url="http://127.0.0.1:2379")},
                   local_members=[member(o) for o in range(3)],
                   member_ordinals={100: 0, 101: 1, 102: 2}, healthy={100})
    step = plan(obs)
    assert (step.action, step.reason) == ("Wait", "QuorumLost")
    assert "restore the cluster from a backup" in step.message

"""Upgrade planning (operators/etcd/upgrade.py): one member at a time, followers by
ordinal, the leader last (etcd's upgrade guides: a rolling replacement, each member healthy
before the next)."""

from __future__ import annotations

from dataclasses import replace

from operators.etcd import observe, upgrade
from operators.etcd.etcdclient import MemberStatus
from operators.etcd.members import PodView
from operators.etcd.observe import Reading
from operators.etcd.resource import EtcdCluster, EtcdClusterSpec
from operators.etcd.tests.test_members import world
from setpoint.resources.models.core_v1 import Pod, PodStatus
from setpoint.resources.models.meta_v1 import ObjectMeta


def reading(versions: dict[int, str], leader: int) -> Reading:
    obs = world(3, sorted(versions), leader=leader)
    for ordinal, version in versions.items():
        obs.pods[ordinal] = PodView(client_url=f"http://127.0.0.{ordinal + 1}:2379",
                                    version=version)
    statuses = {100 + o: MemberStatus(id=100 + o, version=v, leader=100 + leader, revision=1,
                                      raft_index=1, is_learner=False, db_size=0)
                for o, v in versions.items()}
    return Reading(obs, statuses=statuses)


def test_followers_are_upgraded_in_order_and_the_leader_last() -> None:
    cluster = EtcdCluster(name="e", spec=EtcdClusterSpec(size=3, version="3.5.1"))
    order = []
    versions = {0: "3.4.23", 1: "3.4.23", 2: "3.4.23"}
    while (step := upgrade.plan(cluster, reading(versions, leader=1))).action != "Done":
        assert step.action == "UpgradeMember" and step.ordinal is not None
        order.append(step.ordinal)
        versions[step.ordinal] = "3.5.1"
    assert order == [0, 2, 1]


def test_a_member_newer_than_the_spec_is_not_downgraded() -> None:
    cluster = EtcdCluster(name="e", spec=EtcdClusterSpec(size=3, version="3.4.23"))
    step = upgrade.plan(cluster, reading({0: "3.5.1", 1: "3.4.23", 2: "3.4.23"}, leader=1))
    assert (step.action, step.reason) == ("Wait", "DowngradeRefused")


def test_the_next_member_waits_until_every_pod_is_ready() -> None:
    """etcd answering its status is not enough: the member just upgraded must also pass
    the kubelet's readiness probe (etcd's ``/health``) before the next goes, as a
    StatefulSet's rolling update waits for each pod Ready
    (pkg/controller/statefulset/stateful_set_control.go ``updateStatefulSet``)."""
    cluster = EtcdCluster(name="e", spec=EtcdClusterSpec(size=3, version="3.5.1"))
    now = reading({0: "3.5.1", 1: "3.4.23", 2: "3.4.23"}, leader=1)
    now.observed.pods[0] = replace(now.observed.pods[0], ready=False)
    step = upgrade.plan(cluster, now)
    assert (step.action, step.reason) == ("Wait", "MembersNotReady")
    assert "e-0" in step.message
    now.observed.pods[0] = replace(now.observed.pods[0], ready=True)
    assert (upgrade.plan(cluster, now).action, upgrade.plan(cluster, now).ordinal) == \
        ("UpgradeMember", 2)


async def test_voters_that_stop_answering_after_the_reading_are_named() -> None:
    """Asked again just before a member is taken down: a voter whose address refuses the
    connection now (nothing listens on it) is silent, whatever the reading said."""
    now = reading({0: "3.4.23", 1: "3.4.23", 2: "3.4.23"}, leader=1)
    now.pods = {o: Pod(metadata=ObjectMeta(name=f"e-{o}"), status=PodStatus(
        pod_ip=f"127.0.0.{200 + o}")) for o in range(3)}
    assert await observe.silent_voters(now, exclude=0) == ["e-1", "e-2"]

"""Reading the world for one reconcile: member pods and claims from the cache, and the
membership and each member's health from etcd itself.

The membership is read with a linearizable ``MemberList`` (served through the leader), so
a change made a moment ago by this operator, or by a previous run of it, is always seen;
when no member can give it (a new cluster, every member starting, or no quorum) the
reading says so with ``members=None`` rather than guessing.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TypeVar
from urllib.parse import urlsplit

from operators.etcd import objects
from operators.etcd.etcdclient import EtcdClient, EtcdError, Member, MemberStatus, Unreachable
from operators.etcd.members import ClaimView, Observed, PodView, quorum
from operators.etcd.resource import EtcdCluster
from setpoint.resources.models.core_v1 import PersistentVolumeClaim, Pod

T = TypeVar("T", Pod, PersistentVolumeClaim)


@dataclass
class Reading:
    """An :class:`Observed` plus what the controller needs to act on it."""

    observed: Observed
    pods: dict[int, Pod] = field(default_factory=dict)
    claims: dict[int, PersistentVolumeClaim] = field(default_factory=dict)
    statuses: dict[int, MemberStatus] = field(default_factory=dict)
    """Member id -> its own status, for the members that answered."""
    errors: list[str] = field(default_factory=list)

    def client_url(self, ordinal: int) -> str | None:
        pod = self.pods.get(ordinal)
        return objects.client_url(pod) if pod is not None else None

    def healthy_endpoints(self, exclude: int | None = None) -> list[str]:
        """Client URLs of healthy voting members (the leader first), for membership calls."""
        obs = self.observed
        ordered = sorted(obs.member_ordinals.items(), key=lambda kv: kv[0] != obs.leader)
        out = []
        for member_id, ordinal in ordered:
            status = self.statuses.get(member_id)
            url = self.client_url(ordinal)
            if member_id != exclude and url and status is not None and not status.is_learner:
                out.append(url)
        return out


def ordinal_of_peer(cluster: EtcdCluster, member: Member) -> int | None:
    """A member's ordinal, from its peer URL's host (``e-2.e.ns.svc...``) or its name."""
    for url in member.peer_urls:
        host = urlsplit(url).hostname or ""
        ordinal = objects.ordinal_of(host.split(".", 1)[0], cluster)
        if ordinal is not None:
            return ordinal
    return objects.ordinal_of(member.name, cluster) if member.name else None


def _by_ordinal(cluster: EtcdCluster, items: list[T]) -> dict[int, T]:
    out: dict[int, T] = {}
    for item in items:
        ordinal = objects.ordinal_of(str(item.metadata.name), cluster)
        if ordinal is not None:
            out[ordinal] = item
    return out


async def member_list(urls: list[str], *, linearizable: bool = True
                      ) -> tuple[list[Member] | None, list[str]]:
    """The membership from the first of ``urls`` that gives it, with the errors met."""
    errors: list[str] = []
    for url in urls:
        try:
            async with EtcdClient(url) as etcd:
                return await etcd.member_list(linearizable=linearizable), errors
        except EtcdError as exc:
            errors.append(str(exc))
    return None, errors


STATUS_TIMEOUTS = (2.0, 5.0)
"""A member's status is asked with a short timeout, then once more with a longer one when
the first got no answer in time: one slow answer on a loaded node must not count a member
as down and flip Available (the kubelet's probes likewise fail only after
``failureThreshold`` failures in a row). A refused connection or an error answer is final."""


async def _status(url: str) -> MemberStatus | None:
    for timeout in STATUS_TIMEOUTS:
        try:
            async with EtcdClient(url, timeout=timeout) as etcd:
                return await etcd.status()
        except Unreachable as exc:
            if not isinstance(exc.__cause__, TimeoutError):
                return None
        except EtcdError:
            return None
    return None


def _has_quorum(obs: Observed) -> bool:
    """A leader is known and a majority of the listed voters answered."""
    voters = [m for m in obs.members or () if not m.is_learner]
    answering = sum(1 for m in voters if m.id in obs.healthy)
    return bool(obs.leader) and answering >= quorum(len(voters))


async def read(cluster: EtcdCluster, pods: list[Pod], claims: list[PersistentVolumeClaim]
               ) -> Reading:
    pod_map = _by_ordinal(cluster, pods)
    claim_map = _by_ordinal(cluster, claims)
    obs = Observed(size=cluster.spec.size)
    reading = Reading(obs, pod_map, claim_map)
    for ordinal, pod in pod_map.items():
        obs.pods[ordinal] = PodView(
            terminating=pod.metadata.deletion_timestamp is not None,
            client_url=objects.client_url(pod),
            version=(pod.metadata.annotations or {}).get(objects.VERSION),
            ready=any(c.type == "Ready" and c.status == "True"
                      for c in (pod.status.conditions if pod.status else None) or ()))
    for ordinal, pvc in claim_map.items():
        obs.claims[ordinal] = ClaimView(
            member_id=(pvc.metadata.annotations or {}).get(objects.MEMBER_ID),
            terminating=pvc.metadata.deletion_timestamp is not None,
            forced=(pvc.metadata.annotations or {}).get(objects.FORCE_NEW_CLUSTER) == "true")

    urls = {o: v.client_url for o, v in sorted(obs.pods.items())
            if v.client_url and not v.terminating}
    answers = await asyncio.gather(*(_status(u) for u in urls.values()))
    for ordinal, answer in zip(urls, answers, strict=True):
        if answer is not None:
            reading.statuses[answer.id] = answer
            obs.raft_index[ordinal] = answer.raft_index
            obs.healthy.add(answer.id)
            if answer.leader and not answer.is_learner:
                obs.leader = answer.leader
    # ask the members that answered first; a learner cannot serve MemberList
    voters = [urls[o] for o, a in zip(urls, answers, strict=True)
              if a is not None and not a.is_learner]
    obs.members, reading.errors = await member_list(voters)
    if obs.members is None and voters:
        # no quorum to ask: what the survivors last knew tells how many members are lost
        obs.local_members, _ = await member_list(voters, linearizable=False)
    if obs.members is not None and not _has_quorum(obs):
        # etcd 3.4 has no linearizable MemberList (its MemberListRequest is empty; 3.5
        # added ``linearizable``, api/etcdserverpb/rpc.proto): a member cut off from the
        # others still lists the membership from its own store. Without a leader or a
        # majority of voters answering, that list is only what the survivors last knew.
        obs.local_members, obs.members = obs.members, None
    for member in [*(obs.members or ()), *(obs.local_members or ())]:
        found = ordinal_of_peer(cluster, member)
        if found is not None:
            obs.member_ordinals[member.id] = found
    # a status answered by a pod whose member was removed is not a member's health
    if obs.members is not None:
        ids = {m.id for m in obs.members}
        obs.healthy &= ids
    return reading


async def silent_voters(reading: Reading, exclude: int) -> list[str]:
    """The voting members other than ordinal ``exclude`` that do not answer their status
    now: asked again just before a member is taken down on purpose, since the reading the
    step was planned from is a moment old and a member may have failed since (the
    upgrade would then take a second member down and lose the quorum)."""
    obs = reading.observed
    asked = [(member, reading.client_url(ordinal)) for member in obs.members or ()
             if not member.is_learner
             and (ordinal := obs.member_ordinals.get(member.id)) is not None
             and ordinal != exclude]
    answers = await asyncio.gather(*(_status(url) for _, url in asked if url is not None))
    answered = {a.id for a in answers if a is not None}
    return sorted(member.name or member.hex_id for member, _ in asked
                  if member.id not in answered)

"""Carrying out one planned step: etcd's membership API first, then the Kubernetes objects.

The order inside each step is the one that leaves a state :func:`members.plan` can resume
from if the operator dies half-way (see that module): a member is added to etcd before its
claim and pod exist, and removed from etcd before its pod and claim are deleted. Each step
records an event on the EtcdCluster saying what was done and why.
"""

from __future__ import annotations

from dataclasses import replace

from operators.etcd import objects, observe, tlssecrets
from operators.etcd.etcdclient import EtcdClient, EtcdError
from operators.etcd.members import BOOTSTRAP, Step
from operators.etcd.observe import Reading
from operators.etcd.recovery import ACCEPT_DATA_LOSS, STARTING_EMPTY
from operators.etcd.resource import EtcdBackup, EtcdCluster
from setpoint.resources.models.core_v1 import PersistentVolumeClaim
from setpoint.runtime import Context

FAILED_PRECONDITION = 9
"""gRPC code etcd gives a promotion of a learner not yet in sync with the leader."""
UNAVAILABLE = 14
"""gRPC code of etcd's ``unhealthy cluster``: with ``--strict-reconfig-check`` (the
default) a member is added only once every voter has been connected for 5 s
(etcdserver/server.go ``mayAddMember``, ``HealthInterval``), so just after a start or a
change, an add is refused for a moment."""


def initial_cluster(cluster: EtcdCluster, reading: Reading, *extra: int) -> dict[str, str]:
    """``--initial-cluster`` for a member joining now: every current member (ours by their
    stable names) and the ordinals ``extra``."""
    obs = reading.observed
    out: dict[str, str] = {}
    for member in obs.members or ():
        ordinal = obs.member_ordinals.get(member.id)
        name = objects.member_name(cluster, ordinal) if ordinal is not None else member.name
        if name and member.peer_urls:
            out[name] = member.peer_urls[0]
    if obs.members is None:  # no membership to read: the claims say who the members are
        for ordinal, claim in obs.claims.items():
            if not claim.terminating:
                out[objects.member_name(cluster, ordinal)] = objects.peer_url(cluster, ordinal)
    for ordinal in extra:
        out[objects.member_name(cluster, ordinal)] = objects.peer_url(cluster, ordinal)
    return out


def _membership_call(reading: Reading, step: Step, exclude: int | None = None
                           ) -> EtcdClient:
    urls = reading.healthy_endpoints(exclude=exclude)
    if not urls:
        raise EtcdError(f"{step.action}: no healthy voting member to ask")
    return EtcdClient(urls[0])


async def carry_out(ctx: Context[EtcdCluster], cluster: EtcdCluster, reading: Reading,
                    step: Step) -> Step:
    """Do ``step``; the step as it turned out (a refused promotion is a wait)."""
    if step.action in ("Done", "Wait"):
        return step
    ordinal = step.ordinal
    assert ordinal is not None, step
    name = objects.member_name(cluster, ordinal)
    member = step.member
    events = ctx.events

    if step.action == "Bootstrap":
        snapshot = None
        backup_name = step.backup or (cluster.spec.restore.backup_name
                                      if cluster.spec.restore is not None else None)
        if step.reason == STARTING_EMPTY:  # a person chose it over any backup
            backup_name = None
        if backup_name is not None:
            snapshot = _snapshot_of(ctx, backup_name)
            if snapshot is None:
                return replace(step, action="Wait", reason="BackupNotReady",
                               message=f"EtcdBackup {backup_name} "
                               "is not Complete: the cluster starts once it is")
        await ctx.apply(objects.claim(cluster, ordinal, BOOTSTRAP))
        await ctx.apply(tlssecrets.secured(ctx, cluster, ordinal, objects.member_pod(
            cluster, ordinal, initial_cluster(cluster, reading, ordinal), "new",
            restore_from=snapshot)))
        if snapshot is not None:
            events.normal("Restoring", f"founding member {name} restores {snapshot}",
                          action=step.action)
            return step
        if step.reason == STARTING_EMPTY:  # the consent was for this loss, not the next
            await ctx.client.patch(EtcdCluster, str(cluster.metadata.name), {
                "metadata": {"annotations": {ACCEPT_DATA_LOSS: None}}},
                namespace=cluster.metadata.namespace)
    elif step.action == "RecordMemberId":
        assert member is not None
        await _annotate_claim(ctx, reading.claims[ordinal], objects.MEMBER_ID, member.hex_id)
    elif step.action == "CreatePod":
        claim = reading.observed.claims.get(ordinal)
        state = "new" if claim is not None and claim.member_id == BOOTSTRAP \
            and reading.observed.members is None else "existing"
        await ctx.apply(tlssecrets.secured(ctx, cluster, ordinal, objects.member_pod(
            cluster, ordinal, initial_cluster(cluster, reading, ordinal), state,
            force_new_cluster=claim is not None and claim.forced)))
    elif step.action == "ForceNewCluster":
        await _annotate_claim(ctx, reading.claims[ordinal], objects.FORCE_NEW_CLUSTER, "true")
        await _delete_pod(ctx, reading, ordinal)
        events.warning(step.reason, step.message, action=step.action)
        return step
    elif step.action == "FinishForceNewCluster":
        await _annotate_claim(ctx, reading.claims[ordinal], objects.FORCE_NEW_CLUSTER, None)
        await _delete_pod(ctx, reading, ordinal)
    elif step.action == "AddMember":
        try:
            async with _membership_call(reading, step) as etcd:
                added = await etcd.member_add_learner(objects.peer_url(cluster, ordinal))
        except EtcdError as exc:
            if exc.code != UNAVAILABLE:
                raise
            return replace(step, action="Wait", message=f"etcd refuses to add {name} yet: "
                           f"{exc}")
        events.normal("MemberAdded", f"added {name} ({added.hex_id}) as a learner",
                      action="AddMember")
        await ctx.apply(objects.claim(cluster, ordinal, added.hex_id))
        await ctx.apply(tlssecrets.secured(ctx, cluster, ordinal, objects.member_pod(
            cluster, ordinal, initial_cluster(cluster, reading, ordinal), "existing")))
        return step
    elif step.action == "PromoteMember":
        assert member is not None
        try:
            async with _membership_call(reading, step) as etcd:
                await etcd.member_promote(member.id)
        except EtcdError as exc:
            if exc.code != FAILED_PRECONDITION:
                raise
            return replace(step, action="Wait", message=f"learner {name} is catching up")
        events.normal("MemberPromoted", f"promoted learner {name} ({member.hex_id}) to a "
                      "voting member", action="PromoteMember")
        return step
    elif step.action == "TransferLeader":
        assert member is not None and step.target is not None
        url = reading.client_url(ordinal)
        if url is None:
            raise EtcdError(f"{step.action}: the leader {name} has no address")
        async with EtcdClient(url) as etcd:
            await etcd.move_leader(step.target)
    elif step.action == "RemoveMember":
        assert member is not None
        async with _membership_call(reading, step, exclude=member.id) as etcd:
            await etcd.member_remove(member.id)
        events.normal("MemberRemoved", f"removed {name} ({member.hex_id}): {step.message}",
                      action="RemoveMember")
        await _delete_member_objects(ctx, reading, ordinal)
        return step
    elif step.action == "DeleteMemberObjects":
        await _delete_member_objects(ctx, reading, ordinal)
    elif step.action == "UpgradeMember":
        silent = await observe.silent_voters(reading, ordinal)
        if silent:  # one failed since the reading: taking this one down loses the quorum
            return replace(step, action="Wait", reason="MembersUnhealthy",
                           message=f"member(s) {', '.join(silent)} stopped answering: "
                           f"{name} is upgraded once they are back")
        await _delete_pod(ctx, reading, ordinal)
    else:  # pragma: no cover - every action is handled above
        raise AssertionError(step.action)
    events.normal(step.reason, step.message, action=step.action)
    return step


def _snapshot_of(ctx: Context[EtcdCluster], backup_name: str) -> objects.SnapshotFile | None:
    """The file of a Complete EtcdBackup, or None while there is none."""
    backup = ctx.get(EtcdBackup, backup_name)
    if backup is None or backup.status.phase != "Complete" or not backup.status.path:
        return None
    claim = backup.spec.volume.claim_name if backup.spec.volume is not None else None
    return objects.SnapshotFile(backup.status.path, claim)


async def _delete_member_objects(ctx: Context[EtcdCluster], reading: Reading,
                                 ordinal: int) -> None:
    pod, claim = reading.pods.get(ordinal), reading.claims.get(ordinal)
    if pod is not None:
        await ctx.delete(pod)
    if claim is not None:
        await ctx.delete(claim)


async def _delete_pod(ctx: Context[EtcdCluster], reading: Reading, ordinal: int) -> None:
    pod = reading.pods.get(ordinal)
    if pod is not None:
        await ctx.delete(pod)


async def _annotate_claim(ctx: Context[EtcdCluster], claim: PersistentVolumeClaim,
                          key: str, value: str | None) -> None:
    """Set (or, with None, remove) one annotation of a member's claim; nothing else of the
    claim is written (its spec is the storage's, mostly immutable)."""
    def mutate(current: PersistentVolumeClaim) -> None:
        annotations = dict(current.metadata.annotations or {})
        if value is None:
            annotations.pop(key, None)
        else:
            annotations[key] = value
        current.metadata.annotations = annotations

    await ctx.create_or_update(claim, mutate)

"""The EtcdCluster controller: for EtcdCluster, owns its pods, claims and Services.

Every reconcile:

1. applies the two Services and, for a TLS cluster, its certificates' Secrets
   (:mod:`.tlssecrets`);
2. reads the member pods and claims from the cache, and the membership and each member's
   health from etcd (:mod:`.observe`);
3. plans the one next step (:mod:`.members`, or :mod:`.upgrade` once the membership is as
   wanted, after a backup with a backup policy, :mod:`.backuppolicy`; then
   :mod:`.certrotation`; a restore from a backup when no member has data,
   :mod:`.recovery`) and carries it out (:mod:`.steps`);
4. writes the status: phase, members, conditions, and the step in progress.

Membership changes are not Kubernetes events, so while a step is in progress the
reconcile looks again after a second (a quarter of one while members start, join and catch
up); once the cluster is as wanted, every few seconds (a member can stop answering
without any object changing). Deleting the EtcdCluster
deletes its pods, claims and Services through owner references.
"""

from __future__ import annotations

from operators.etcd import (
    backuppolicy,
    certrotation,
    health,
    metrics,
    objects,
    observe,
    recovery,
    steps,
    tlssecrets,
    upgrade,
)
from operators.etcd.etcdclient import CLIENT_TLS
from operators.etcd.members import Step, plan
from operators.etcd.resource import EtcdBackup, EtcdCluster
from setpoint.resources.models.core_v1 import PersistentVolumeClaim, Pod, Secret, Service
from setpoint.runtime import Context, Controller, Result

STEP_INTERVAL = 1.0
"""Seconds between looks while a step is in progress."""
JOIN_INTERVAL = 0.25
"""Seconds between looks while a member starts, joins or catches up: what is waited for
(a member answering, a learner in sync, etcd accepting the next ``member add``) shows
only in etcd, never as a Kubernetes event, and each look is a status request per member.
The next ``member add`` is refused until every voter has been connected for 5 s
(etcdserver ``mayAddMember``, :data:`steps.UNAVAILABLE`), so looking often is what lets
it go through as soon as etcd allows it."""
JOINING = {"Bootstrapping", "Bootstrapped", "MembersStarting", "ScalingUp", "MemberStarting",
           "LearnerStarting", "LearnerCaughtUp"}
"""Step reasons looked at again after :data:`JOIN_INTERVAL`."""
HEALTH_INTERVAL = 5.0
"""Seconds between health checks of a cluster that is as wanted."""

etcd = (Controller.for_(EtcdCluster, name="etcdcluster")
        .owns(Pod, PersistentVolumeClaim, Service, Secret, EtcdBackup))


@etcd.reconcile
async def reconcile(ctx: Context[EtcdCluster], cluster: EtcdCluster) -> Result:
    if ctx.deleting:
        return Result()  # the garbage collector removes what it owns
    await ctx.apply(objects.peer_service(cluster))
    await ctx.apply(objects.client_service(cluster))

    selector = objects.selector(cluster)
    pods = ctx.list(Pod, labels=selector)
    claims = ctx.list(PersistentVolumeClaim, labels=selector)
    tls = await tlssecrets.ensure(ctx, cluster, pods, claims) \
        if tlssecrets.enabled(cluster) else None
    token = CLIENT_TLS.set(tls)
    try:
        reading = await observe.read(cluster, pods, claims)
        step = plan(reading.observed)
        if step.action == "Done":
            step = await backuppolicy.before_upgrade(ctx, cluster, reading,
                                                     upgrade.plan(cluster, reading))
        if step.action == "Done":
            step = certrotation.plan(ctx, cluster, reading) or step
        step = await recovery.plan(ctx, cluster, reading, step)
        if step.action not in ("Done", "Wait"):
            # recorded before it is carried out: an operator killed half-way leaves the
            # step it was in for the next run (which plans it again from a fresh reading)
            await ctx.patch_status({"step": describe(step)})
        if step.action in certrotation.ACTIONS:
            outcome = await certrotation.carry_out(ctx, cluster, reading, step)
        else:
            outcome = await steps.carry_out(ctx, cluster, reading, step)
        recovery.track_revision(cluster, reading)
    finally:
        CLIENT_TLS.reset(token)
    record_status(ctx, cluster, reading, outcome)
    await ctx.update_status(cluster)
    return Result(requeue_after=HEALTH_INTERVAL if outcome.action == "Done"
                  else JOIN_INTERVAL if outcome.reason in JOINING else STEP_INTERVAL)


def describe(step: Step) -> str:
    return f"{step.action}: {step.message}"


def record_status(ctx: Context[EtcdCluster], cluster: EtcdCluster, reading: observe.Reading,
                  step: Step) -> None:
    """Set ``cluster.status`` (in memory) from this reconcile's reading and step."""
    status = cluster.status
    previous_leader = status.leader
    status.observed_generation = cluster.metadata.generation
    status.phase = health.phase(cluster, reading, step)
    status.members = health.members_status(reading) if reading.observed.members is not None \
        else status.members
    voters = [m for m in reading.observed.members or () if not m.is_learner]
    status.size = len(reading.observed.members) if reading.observed.members is not None \
        else status.size
    status.ready_members = sum(1 for m in voters if m.id in reading.observed.healthy)
    status.current_version = health.current_version(reading) or status.current_version
    status.leader = next((m.name for m in status.members or () if m.leader), None)
    metrics.collector.observe(ctx.cache, cluster, previous_leader)
    status.selector = objects.selector_string(cluster)
    status.step = None if step.action == "Done" else describe(step)
    for type_, verdict in (("Available", health.available(reading)),
                           ("Progressing", health.progressing(step)),
                           ("Degraded", health.degraded(reading, step)),
                           ("UpgradeInProgress", health.upgrading(cluster, reading))):
        ctx.set_condition(type_, verdict.status, reason=verdict.reason,
                          message=verdict.message, obj=cluster)

"""Rollouts: RollingUpdate, Recreate and the Progressing condition. A port of
``pkg/controller/deployment/rolling.go``, ``recreate.go`` and ``progress.go``.

A rolling update grows the new ReplicaSet while the total stays within
``replicas + maxSurge`` and shrinks old ones while at least ``replicas - maxUnavailable``
pods stay available (unhealthy old pods go first). Recreate scales every old ReplicaSet
to zero, waits until none of their pods runs, then scales the new one up.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from setpoint.machinery.metatime import parse_time
from setpoint.machinery.objects import Obj
from setpoint.runtime._objects import meta, name_of
from setpoint.workloads.controllers import deployment_util as du
from setpoint.workloads.controllers.deployment_sync import DeploymentSync, _quote, same_status

# -- RollingUpdate -----------------------------------------------------------------------------


async def rollout_rolling(s: DeploymentSync) -> None:
    """``rolloutRolling``: one step of a rolling update, then the status."""
    new_rs, old_rss = await s.get_all_replica_sets_and_sync_revision(True)
    assert new_rs is not None
    all_rss: list[Obj] = [*old_rss, new_rs]
    if await _reconcile_new_replica_set(s, all_rss, new_rs):
        await sync_rollout_status(s, all_rss, new_rs)
        return
    if await _reconcile_old_replica_sets(s, all_rss, du.active(old_rss), new_rs):
        await sync_rollout_status(s, all_rss, new_rs)
        return
    if du.deployment_complete(s.d, s.d.get("status") or {}):
        await s.cleanup_deployment(old_rss)
    await sync_rollout_status(s, all_rss, new_rs)


async def _reconcile_new_replica_set(s: DeploymentSync, all_rss: list[Obj],
                                     new_rs: Obj) -> bool:
    replicas = du.spec_replicas(s.d)
    current = du.spec_replicas(new_rs)
    if current == replicas:
        return False
    if current > replicas:
        scaled, _ = await s.scale_replica_set_and_record_event(new_rs, replicas)
        return scaled
    # Kubernetes bounds the surge by the ReplicaSets' replicas alone; old pods whose
    # deletion is still in flight count here too, so no moment sees more running pods
    wanted = du.new_rs_new_replicas(s.d, all_rss, new_rs, current=du.pods_in_flight(all_rss))
    scaled, _ = await s.scale_replica_set_and_record_event(new_rs, wanted)
    return scaled


async def _reconcile_old_replica_sets(s: DeploymentSync, all_rss: list[Obj],
                                      old_rss: list[Obj], new_rs: Obj) -> bool:
    """Scale old ReplicaSets down as far as availability allows: at most
    ``all - minAvailable - unavailable new pods`` at once, unhealthy ones first."""
    if du.replica_count(old_rss) == 0:
        return False
    d = s.d
    all_pods = du.replica_count(all_rss)
    min_available = du.spec_replicas(d) - du.max_unavailable(d)
    new_unavailable = du.spec_replicas(new_rs) - du.status_int(new_rs, "availableReplicas")
    max_scaled_down = all_pods - min_available - new_unavailable
    if max_scaled_down <= 0:
        return False
    cleanup = await _cleanup_unhealthy_replicas(s, old_rss, max_scaled_down)
    if cleanup is None:
        return False
    old_rss, cleaned = cleanup
    scaled = await _scale_down_old_for_rolling_update(s, [*old_rss, new_rs], old_rss)
    return cleaned + scaled > 0


async def _cleanup_unhealthy_replicas(s: DeploymentSync, old_rss: list[Obj],
                                      max_cleanup: int) -> tuple[list[Obj], int] | None:
    """Scale old ReplicaSets down by their unavailable pods first (oldest first), so
    unhealthy replicas never block a rollout. None when a ReplicaSet reports more
    available pods than it wants (its pods are still going): nothing to clean up yet."""
    old_rss = du.by_creation(old_rss)
    total = 0
    for i, rs in enumerate(old_rss):
        if total >= max_cleanup:
            break
        replicas = du.spec_replicas(rs)
        available = du.status_int(rs, "availableReplicas")
        if replicas == 0 or replicas == available:
            continue
        count = min(max_cleanup - total, replicas - available)
        if count < 0:
            return None  # Kubernetes: "got invalid request to scale down"
        _, updated = await s.scale_replica_set_and_record_event(rs, replicas - count)
        total += count
        old_rss[i] = updated
    return old_rss, total


async def _scale_down_old_for_rolling_update(s: DeploymentSync, all_rss: list[Obj],
                                             old_rss: list[Obj]) -> int:
    d = s.d
    min_available = du.spec_replicas(d) - du.max_unavailable(d)
    # pods of an earlier scale-down may still be reported available: they are going
    available = du.settled_available(all_rss)
    if available <= min_available:
        return 0
    total = 0
    to_scale_down = available - min_available
    for rs in du.by_creation(old_rss):
        if total >= to_scale_down:
            break
        replicas = du.spec_replicas(rs)
        if replicas == 0:
            continue
        count = min(replicas, to_scale_down - total)
        await s.scale_replica_set_and_record_event(rs, replicas - count)
        total += count
    return total


# -- Recreate ----------------------------------------------------------------------------------


async def rollout_recreate(s: DeploymentSync, pod_map: Mapping[str, list[Obj]]) -> None:
    """``rolloutRecreate``: old ReplicaSets to zero, wait for their pods to stop, then the
    new ReplicaSet (created only now) to full size."""
    new_rs, old_rss = await s.get_all_replica_sets_and_sync_revision(False)
    all_rss: list[Obj | None] = [*old_rss, new_rs]
    scaled = False
    for rs in du.active(old_rss):
        changed, _ = await s.scale_replica_set_and_record_event(rs, 0)
        scaled = scaled or changed
    if scaled:
        await sync_rollout_status(s, all_rss, new_rs)
        return
    if _old_pods_running(new_rs, old_rss, pod_map):
        await sync_rollout_status(s, all_rss, new_rs)
        return
    if new_rs is None:
        new_rs, old_rss = await s.get_all_replica_sets_and_sync_revision(True)
        all_rss = [*old_rss, new_rs]
    assert new_rs is not None
    await s.scale_replica_set_and_record_event(new_rs, du.spec_replicas(s.d))
    if du.deployment_complete(s.d, s.d.get("status") or {}):
        await s.cleanup_deployment(old_rss)
    await sync_rollout_status(s, all_rss, new_rs)


def _old_pods_running(new_rs: Obj | None, old_rss: list[Obj],
                      pod_map: Mapping[str, list[Obj]]) -> bool:
    """Whether an old ReplicaSet reports pods, or a pod not of the new ReplicaSet is not
    yet Succeeded or Failed."""
    if du.actual_count(old_rss) > 0:
        return True
    new_uid = meta(new_rs).get("uid") if new_rs is not None else None
    for uid, pods in pod_map.items():
        if uid == new_uid:
            continue
        for pod in pods:
            if (pod.get("status") or {}).get("phase") not in ("Failed", "Succeeded"):
                return True
    return False


# -- Progressing -------------------------------------------------------------------------------


async def sync_rollout_status(s: DeploymentSync, all_rss: Sequence[Obj | None],
                              new_rs: Obj | None) -> None:
    """``syncRolloutStatus``: the status with the Progressing condition (progressed,
    progressing, or past ``progressDeadlineSeconds``) and the new ReplicaSet's (else an
    old one's) ReplicaFailure condition; a check of the deadline is scheduled while the
    rollout is under way."""
    d = s.d
    status = s.calculate_status(all_rss, new_rs)
    if not du.has_progress_deadline(d):
        du.remove_condition(status, du.PROGRESSING)
    current = du.get_condition(d.get("status") or {}, du.PROGRESSING)
    complete_before = int(status.get("replicas") or 0) == int(
        status.get("updatedReplicas") or 0) and current is not None and \
        current.get("reason") == du.NEW_RS_AVAILABLE
    if du.has_progress_deadline(d) and not complete_before:
        subject = f"ReplicaSet {_quote(name_of(new_rs))}" if new_rs is not None else \
            f"Deployment {_quote(name_of(d))}"
        if du.deployment_complete(d, status):
            du.set_condition(status, du.new_condition(
                du.PROGRESSING, "True", du.NEW_RS_AVAILABLE,
                f"{subject} has successfully progressed."))
        elif du.deployment_progressing(d, status):
            condition = du.new_condition(du.PROGRESSING, "True", du.REPLICA_SET_UPDATED,
                                         f"{subject} is progressing.")
            if current is not None:
                if current.get("status") == "True":
                    condition["lastTransitionTime"] = current.get("lastTransitionTime")
                du.remove_condition(status, du.PROGRESSING)
            du.set_condition(status, condition)
        elif du.deployment_timed_out(d, status, s.now):
            du.set_condition(status, du.new_condition(
                du.PROGRESSING, "False", du.TIMED_OUT, f"{subject} has timed out progressing."))
    failure = _replica_failure(all_rss, new_rs)
    if failure is not None:
        du.set_condition(status, failure)
    else:
        du.remove_condition(status, du.REPLICA_FAILURE)
    if not same_status(d.get("status") or {}, status):
        d["status"] = status
        await s.update_status()
    _requeue_stuck(s, status)


def _replica_failure(all_rss: Sequence[Obj | None], new_rs: Obj | None) -> Obj | None:
    """The ReplicaFailure condition of the new ReplicaSet, else of any old one, as a
    Deployment condition."""
    for rs in ([new_rs] if new_rs is not None else []) + [r for r in all_rss if r is not None]:
        for c in (rs.get("status") or {}).get("conditions") or ():
            if c.get("type") == du.REPLICA_FAILURE:
                return {"type": du.REPLICA_FAILURE, "status": c.get("status"),
                        "lastUpdateTime": c.get("lastTransitionTime"),
                        "lastTransitionTime": c.get("lastTransitionTime"),
                        "reason": c.get("reason"), "message": c.get("message")}
    return None


def _requeue_stuck(s: DeploymentSync, status: Obj) -> None:
    """``requeueStuckDeployment``: come back when the progress deadline would pass."""
    d = s.d
    current = du.get_condition(status, du.PROGRESSING)
    if not du.has_progress_deadline(d) or current is None:
        return
    if du.deployment_complete(d, status) or current.get("reason") == du.TIMED_OUT:
        return
    updated = parse_time(current.get("lastUpdateTime"))
    if updated is None:
        return
    deadline = int((d.get("spec") or {}).get("progressDeadlineSeconds") or 0)
    after = updated + deadline - s.now()
    s.requeue(1.0 if after < 1.0 else after + 1.0)

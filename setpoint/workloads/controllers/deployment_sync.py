"""One Deployment sync's shared steps: a port of ``pkg/controller/deployment/sync.go``.

:class:`DeploymentSync` holds the Deployment being synced (a private copy it updates as
its writes succeed) and does what every path of the controller needs: find or create the
new ReplicaSet with the right revision, scale ReplicaSets (recording ``ScalingReplicaSet``
events), scale proportionally on a resize during a rollout, clean up old ReplicaSets past
``revisionHistoryLimit`` and compute and write ``status``.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from setpoint.client import (
    AlreadyExistsError,
    ApiError,
    Client,
    Kind,
    NotFoundError,
    PatchType,
)
from setpoint.machinery.objects import Obj
from setpoint.runtime import EventRecorder
from setpoint.runtime._objects import clone, meta, name_of, namespace_of
from setpoint.runtime._ownership import controller_of, owner_reference
from setpoint.workloads.controllers import deployment_util as du
from setpoint.workloads.controllers.podcontrol import error_text

DEPLOYMENT = Kind("apps/v1", "Deployment")
REPLICA_SET = Kind("apps/v1", "ReplicaSet")
NAMESPACE_TERMINATING = "NamespaceTerminating"

Record = Callable[[Obj], None]
CachedReplicaSet = Callable[[str, str], Obj | None]


@dataclass
class DeploymentSync:
    """The state of one sync of one Deployment and the writes it makes."""

    client: Client
    d: Obj
    replica_sets: list[Obj]
    """The ReplicaSets the Deployment controls, replaced as this sync writes them."""
    record: Record
    cached_replica_set: CachedReplicaSet
    events: EventRecorder | None = None
    now: Callable[[], float] = time.time
    requeue_after: float | None = None
    wrote_status: bool = False
    """Whether this sync wrote the Deployment (whose echo re-syncs it, as a watch would)."""
    written_annotations: dict[str, str] = field(default_factory=dict)
    _all_replica_sets: tuple[list[Obj], Any, Obj | None, list[Obj]] | None = None
    """The last (ReplicaSets, Deployment resourceVersion, new, old) of
    :meth:`get_all_replica_sets_and_sync_revision`."""

    def __post_init__(self) -> None:
        self.written_annotations = dict(du.annotations_of(self.d))

    @property
    def name(self) -> str:
        return name_of(self.d)

    @property
    def namespace(self) -> str:
        return namespace_of(self.d)

    def event(self, reason: str, message: str, *, warning: bool = False) -> None:
        if self.events is None:
            return
        if warning:
            self.events.warning(self.d, reason, message)
        else:
            self.events.normal(self.d, reason, message)

    def requeue(self, after: float) -> None:
        self.requeue_after = after if self.requeue_after is None else \
            min(self.requeue_after, after)

    # -- writes of the Deployment ----------------------------------------------------------

    async def update_status(self) -> None:
        """``UpdateStatus(d)``: the status and the revision annotation as held here, with
        this sync's optimistic concurrency.

        Kubernetes' ``deployments/status`` keeps annotation changes (only spec and labels
        are reset), which is how the revision reaches the Deployment without bumping its
        generation. A server that drops them gets the annotation through the object
        itself (which bumps the generation), then the status again."""
        await self._put_status()
        revision = du.annotations_of(self.d).get(du.REVISION)
        if revision is None or self.written_annotations.get(du.REVISION) == revision:
            return
        observed = (self.d.get("status") or {}).get("observedGeneration")
        patch = {"metadata": {"annotations": {du.REVISION: revision},
                              "resourceVersion": meta(self.d).get("resourceVersion")}}
        patched: Obj = await self.client.patch(DEPLOYMENT, self.name, patch,
                                               patch_type=PatchType.MERGE,
                                               namespace=self.namespace)
        self.record(patched)
        self.written_annotations = dict(du.annotations_of(patched))
        before = meta(self.d).get("generation")
        self.d["metadata"]["resourceVersion"] = meta(patched).get("resourceVersion")
        self.d["metadata"]["generation"] = meta(patched).get("generation")
        if observed is not None and observed == before:
            # the only change since the observed generation is this very annotation
            self.d["status"]["observedGeneration"] = meta(patched).get("generation")
            await self._put_status()

    async def _put_status(self) -> None:
        body = {**self.d, "status": _wire_status(self.d.get("status") or {})}
        updated: Obj = await self.client.update_status(body, namespace=self.namespace)
        self.record(updated)
        self.wrote_status = True
        self.written_annotations = dict(du.annotations_of(updated))
        self.d["metadata"]["resourceVersion"] = meta(updated).get("resourceVersion")

    # -- ReplicaSets ------------------------------------------------------------------------

    async def update_replica_set(self, rs: Obj) -> Obj:
        """Update a ReplicaSet from this sync's copy. A conflict (the ReplicaSet
        controller's status write, say) fails the sync as any other error: Go's
        ``scaleReplicaSet`` and ``getNewReplicaSet`` (pkg/controller/deployment/sync.go)
        return the ``Update``'s error, and ``handleErr`` (deployment_controller.go) puts
        the Deployment back with ``AddRateLimited``; the write that won is heard on the
        ReplicaSet's watch, which queues the Deployment again too."""
        updated: Obj = await self.client.update(rs, namespace=self.namespace)
        self.record(updated)
        self._remember(updated)
        return updated

    def _remember(self, rs: Obj) -> None:
        uid = meta(rs).get("uid")
        self.replica_sets = [r for r in self.replica_sets if meta(r).get("uid") != uid]
        self.replica_sets.append(rs)

    async def get_all_replica_sets_and_sync_revision(
            self, create: bool) -> tuple[Obj | None, list[Obj]]:
        """(the new ReplicaSet, created when ``create``; every old one).

        Go's ``syncDeployment`` asks this twice a sync (``isScalingEvent``, then the
        rollout) over the same ReplicaSets; once the first call has brought the revision
        and annotations up to date, the second finds the same answer and writes nothing.
        It is kept while this sync has written no ReplicaSet (each write replaces
        ``replica_sets``) nor the Deployment."""
        memo = self._all_replica_sets
        if memo is not None and memo[0] is self.replica_sets and \
                memo[1] == meta(self.d).get("resourceVersion") and \
                (memo[2] is not None or not create):
            return memo[2], list(memo[3])
        _, all_old = du.find_old_replica_sets(self.d, self.replica_sets)
        new_rs = await self.get_new_replica_set(all_old, create)
        self._all_replica_sets = (self.replica_sets, meta(self.d).get("resourceVersion"),
                                  new_rs, list(all_old))
        return new_rs, all_old

    async def get_new_replica_set(self, old_rss: list[Obj], create: bool) -> Obj | None:
        """``getNewReplicaSet``: the ReplicaSet of the current template with its revision
        and annotations brought up to date, or a new one (named
        ``<deployment>-<pod-template-hash>``) when ``create``."""
        d = self.d
        existing = du.find_new_replica_set(d, self.replica_sets)
        new_revision = str(du.max_revision(old_rss) + 1)
        if existing is not None:
            # Go copies the ReplicaSet here (``existingNewRS.DeepCopy()``) for the update it
            # rarely makes; the annotations are tried on a copy of them alone and the whole
            # object copied only for the update: the sync runs on every ReplicaSet event
            probe = {**existing, "metadata": {**meta(existing),
                                              "annotations": dict(du.annotations_of(existing))}}
            changed = du.set_new_replica_set_annotations(d, probe, new_revision, exists=True)
            min_ready = int((d.get("spec") or {}).get("minReadySeconds") or 0)
            rs = existing
            if changed or int(rs["spec"].get("minReadySeconds") or 0) != min_ready:
                rs = clone(existing)
                rs["metadata"]["annotations"] = probe["metadata"]["annotations"]
                rs["spec"]["minReadySeconds"] = min_ready
                if not min_ready:
                    rs["spec"].pop("minReadySeconds")
                return await self.update_replica_set(rs)
            needs_update = du.set_deployment_revision(
                d, du.annotations_of(rs).get(du.REVISION, ""))
            status = d.setdefault("status", {})
            if du.has_progress_deadline(d) and du.get_condition(status, du.PROGRESSING) is None:
                du.set_condition(status, du.new_condition(
                    du.PROGRESSING, "True", du.FOUND_NEW_RS,
                    f"Found new replica set {_quote(name_of(rs))}"))
                needs_update = True
            if needs_update:
                await self.update_status()
            return rs
        if not create:
            return None
        return await self._create_new_replica_set(old_rss, new_revision)

    async def _create_new_replica_set(self, old_rss: list[Obj], new_revision: str) -> Obj:
        d = self.d
        spec = d.get("spec") or {}
        status = d.setdefault("status", {})
        template = clone(spec.get("template") or {})
        collision_count = status.get("collisionCount")
        pod_hash = du.compute_hash(template, collision_count)
        template.setdefault("metadata", {})
        template["metadata"]["labels"] = {**(template["metadata"].get("labels") or {}),
                                          du.POD_TEMPLATE_HASH: pod_hash}
        selector = clone(spec.get("selector") or {})
        selector["matchLabels"] = {**(selector.get("matchLabels") or {}),
                                   du.POD_TEMPLATE_HASH: pod_hash}
        name = f"{self.name}-{pod_hash}"
        rs_spec: Obj = {"replicas": 0, "selector": selector, "template": template}
        if spec.get("minReadySeconds"):
            rs_spec["minReadySeconds"] = spec["minReadySeconds"]
        new_rs: Obj = {
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": name, "namespace": self.namespace,
                         "labels": dict(template["metadata"]["labels"]),
                         "ownerReferences": [owner_reference(d)]},
            "spec": rs_spec,
        }
        replicas = du.new_rs_new_replicas(d, [*old_rss, new_rs], new_rs)
        rs_spec["replicas"] = replicas
        du.set_new_replica_set_annotations(d, new_rs, new_revision, exists=False)
        already_exists = False
        try:
            created: Obj = await self.client.create(new_rs, namespace=self.namespace)
            self.record(created)
            self._remember(created)
        except AlreadyExistsError:
            already_exists = True
            found = self.cached_replica_set(self.namespace, name)
            if found is None:
                raise
            ref = controller_of(found)
            if ref is not None and ref.get("uid") == meta(d).get("uid") and \
                    du.equal_ignore_hash(spec.get("template") or {}, du.template_of(found)):
                created = clone(found)
            else:
                # a hash collision: another template hashed to this name
                status["collisionCount"] = int(collision_count or 0) + 1
                await self.update_status()
                raise
        except ApiError as exc:
            if any(getattr(c, "reason", None) == NAMESPACE_TERMINATING
                   for c in exc.causes or ()):
                raise
            message = f"Failed to create new replica set {_quote(name)}: {error_text(exc)}"
            if du.has_progress_deadline(d):
                du.set_condition(status, du.new_condition(
                    du.PROGRESSING, "False", du.FAILED_RS_CREATE, message))
                with contextlib.suppress(ApiError):  # the creation failure matters more
                    await self.update_status()
            self.event(du.FAILED_RS_CREATE, message, warning=True)
            raise
        if not already_exists and replicas > 0:
            self.event("ScalingReplicaSet",
                       f"Scaled up replica set {name_of(created)} from 0 to {replicas}")
        needs_update = du.set_deployment_revision(d, new_revision)
        if not already_exists and du.has_progress_deadline(d):
            du.set_condition(status, du.new_condition(
                du.PROGRESSING, "True", du.NEW_REPLICA_SET,
                f"Created new replica set {_quote(name_of(created))}"))
            needs_update = True
        if needs_update:
            await self.update_status()
        return created

    async def scale_replica_set(self, rs: Obj, new_scale: int,
                                operation: str) -> tuple[bool, Obj]:
        """``scaleReplicaSet``: set replicas and the desired/max annotations; returns
        (whether the size changed, the ReplicaSet)."""
        d = self.d
        size_changed = du.spec_replicas(rs) != new_scale
        desired, maximum = du.spec_replicas(d), du.spec_replicas(d) + du.max_surge(d)
        if not size_changed and not du.replicas_annotations_need_update(rs, desired, maximum):
            return False, rs
        old_scale = du.spec_replicas(rs)
        copy = clone(rs)
        copy["spec"]["replicas"] = new_scale
        du.set_replicas_annotations(copy, desired, maximum)
        updated = await self.update_replica_set(copy)
        if size_changed:
            self.event("ScalingReplicaSet", f"Scaled {operation} replica set "
                       f"{name_of(updated)} from {old_scale} to {new_scale}")
        return size_changed, updated

    async def scale_replica_set_and_record_event(self, rs: Obj,
                                                 new_scale: int) -> tuple[bool, Obj]:
        if du.spec_replicas(rs) == new_scale:
            return False, rs
        operation = "up" if du.spec_replicas(rs) < new_scale else "down"
        return await self.scale_replica_set(rs, new_scale, operation)

    async def scale(self, new_rs: Obj | None, old_rss: list[Obj]) -> None:
        """``scale``: on a resize (or while paused), bring the only active ReplicaSet to
        the Deployment's size, or spread the difference over every active one in
        proportion to its size (largest first; leftovers to the first)."""
        d = self.d
        replicas = du.spec_replicas(d)
        only = du.find_active_or_latest(new_rs, old_rss)
        if only is not None:
            if du.spec_replicas(only) != replicas:
                await self.scale_replica_set_and_record_event(only, replicas)
            return
        if du.is_saturated(d, new_rs):
            for old in du.active(old_rss):
                await self.scale_replica_set_and_record_event(old, 0)
            return
        if not du.is_rolling_update(d):
            return
        all_rss = du.active([*old_rss, new_rs])
        allowed = replicas + du.max_surge(d) if replicas > 0 else 0
        to_add = allowed - du.replica_count(all_rss)
        operation = ""
        if to_add > 0:
            all_rss = du.by_size_newer(all_rss)
            operation = "up"
        elif to_add < 0:
            all_rss = du.by_size_older(all_rss)
            operation = "down"
        added = 0
        sizes: dict[str, int] = {}
        for rs in all_rss:
            if to_add != 0:
                proportion = du.get_proportion(rs, d, to_add, added)
                sizes[name_of(rs)] = du.spec_replicas(rs) + proportion
                added += proportion
            else:
                sizes[name_of(rs)] = du.spec_replicas(rs)
        for i, rs in enumerate(all_rss):
            if i == 0 and to_add != 0:
                sizes[name_of(rs)] = max(sizes[name_of(rs)] + to_add - added, 0)
            await self.scale_replica_set(rs, sizes[name_of(rs)], operation)

    async def cleanup_deployment(self, old_rss: list[Obj]) -> None:
        """``cleanupDeployment``: delete the oldest revisions beyond
        ``revisionHistoryLimit`` that are fully scaled down and observed."""
        d = self.d
        if not du.has_revision_history_limit(d):
            return
        alive = [rs for rs in old_rss if not meta(rs).get("deletionTimestamp")]
        diff = len(alive) - int(d["spec"]["revisionHistoryLimit"])
        if diff <= 0:
            return
        for rs in du.by_revision(alive)[:diff]:
            if du.status_int(rs, "replicas") != 0 or du.spec_replicas(rs) != 0 or \
                    int(meta(rs).get("generation") or 0) > du.status_int(rs, "observedGeneration"):
                continue
            with contextlib.suppress(NotFoundError):
                await self.client.delete(REPLICA_SET, name_of(rs), namespace=self.namespace)

    # -- status -----------------------------------------------------------------------------

    def calculate_status(self, all_rss: Sequence[Obj | None], new_rs: Obj | None) -> Obj:
        """``calculateStatus``: counts summed over the ReplicaSets and the Available
        condition (at least replicas - maxUnavailable available)."""
        d = self.d
        available = du.available_count(all_rss)
        total = du.replica_count(all_rss)
        status: Obj = {
            "observedGeneration": meta(d).get("generation"),
            "replicas": du.actual_count(all_rss),
            "updatedReplicas": du.actual_count([new_rs]),
            "readyReplicas": du.ready_count(all_rss),
            "availableReplicas": available,
            "unavailableReplicas": max(total - available, 0),
        }
        old = d.get("status") or {}
        if old.get("collisionCount") is not None:
            status["collisionCount"] = old["collisionCount"]
        if old.get("conditions"):
            status["conditions"] = [dict(c) for c in old["conditions"]]
        if available >= du.spec_replicas(d) - du.max_unavailable(d):
            du.set_condition(status, du.new_condition(
                du.AVAILABLE, "True", du.MINIMUM_REPLICAS_AVAILABLE,
                "Deployment has minimum availability."))
        else:
            du.set_condition(status, du.new_condition(
                du.AVAILABLE, "False", du.MINIMUM_REPLICAS_UNAVAILABLE,
                "Deployment does not have minimum availability."))
        return status

    async def sync_deployment_status(self, all_rss: list[Obj | None],
                                     new_rs: Obj | None) -> None:
        status = self.calculate_status(all_rss, new_rs)
        if same_status(self.d.get("status") or {}, status):
            return
        self.d["status"] = status
        await self.update_status()

    async def sync(self) -> None:
        """``sync``: a resize or a paused Deployment: scale, clean up (paused), status."""
        new_rs, old_rss = await self.get_all_replica_sets_and_sync_revision(False)
        await self.scale(new_rs, old_rss)
        if (self.d.get("spec") or {}).get("paused"):
            await self.cleanup_deployment(old_rss)
        await self.sync_deployment_status([*old_rss, new_rs], new_rs)

    async def sync_status_only(self) -> None:
        new_rs, old_rss = await self.get_all_replica_sets_and_sync_revision(False)
        await self.sync_deployment_status([*old_rss, new_rs], new_rs)

    async def check_paused_conditions(self) -> None:
        """Progressing becomes Unknown (DeploymentPaused / DeploymentResumed) as the
        Deployment is paused and resumed, so a pause never counts against the deadline."""
        d = self.d
        if not du.has_progress_deadline(d):
            return
        status = d.setdefault("status", {})
        condition = du.get_condition(status, du.PROGRESSING)
        if condition is not None and condition.get("reason") == du.TIMED_OUT:
            return
        paused_condition = condition is not None and condition.get("reason") == du.PAUSED
        paused = bool((d.get("spec") or {}).get("paused"))
        if paused and not paused_condition:
            du.set_condition(status, du.new_condition(du.PROGRESSING, "Unknown", du.PAUSED,
                                                      "Deployment is paused"))
        elif not paused and paused_condition:
            du.set_condition(status, du.new_condition(du.PROGRESSING, "Unknown", du.RESUMED,
                                                      "Deployment is resumed"))
        else:
            return
        await self.update_status()

    async def is_scaling_event(self) -> bool:
        """Whether an active ReplicaSet was sized for another ``spec.replicas``."""
        new_rs, old_rss = await self.get_all_replica_sets_and_sync_revision(False)
        replicas = du.spec_replicas(self.d)
        for rs in du.active([*old_rss, new_rs]):
            desired = du.desired_replicas_annotation(rs)
            if desired is not None and desired != replicas:
                return True
        return False


_ZERO_OMITTED = ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas",
                 "unavailableReplicas", "observedGeneration")


def _wire_status(status: Obj) -> Obj:
    """The status as the API serializes it (zero counts omitted)."""
    return {k: v for k, v in status.items()
            if not (k in _ZERO_OMITTED and not v) and v is not None}


def same_status(a: Obj, b: Obj) -> bool:
    """Whether two statuses say the same (zero counts equal absent ones)."""
    return _wire_status(a) == _wire_status(b)


def _quote(text: str) -> str:
    """Go's ``%q`` for names (plain ASCII)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def status_fields(d: Obj) -> dict[str, Any]:
    """The status counts of a Deployment, zeros included (for tests and tools)."""
    status = d.get("status") or {}
    return {k: int(status.get(k) or 0) for k in _ZERO_OMITTED}

"""The Deployment controller: Deployments roll out through ReplicaSets.

A port of ``pkg/controller/deployment/deployment_controller.go`` (``syncDeployment``).
Each sync claims the ReplicaSets of the Deployment's namespace (adopting orphans that
match its selector, releasing those that stopped matching), then, in the real
controller's order of precedence:

- a Deployment being deleted only has its status updated;
- a paused Deployment, or one whose size changed (a ReplicaSet's ``desired-replicas``
  annotation differs from ``spec.replicas``), is scaled, proportionally across its active
  ReplicaSets during a rollout;
- otherwise the strategy rolls it out (:mod:`~.rollout`): RollingUpdate or Recreate.

The ReplicaSet of a template is ``<deployment>-<pod-template-hash>`` with the label
``pod-template-hash`` and the annotations ``deployment.kubernetes.io/revision``,
``desired-replicas`` and ``max-replicas``; the Deployment carries the revision of its
newest ReplicaSet, which is what ``kubectl rollout history`` and ``rollout undo`` read.
Events (``ScalingReplicaSet``) are reported by ``deployment-controller``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from setpoint.machinery.labels import SelectorError
from setpoint.machinery.objects import Obj
from setpoint.runtime import Controller, EventRecorder, Manager, Request, Result
from setpoint.runtime._handlers import Handler
from setpoint.runtime._objects import clone, meta, name_of, namespace_of, object_key
from setpoint.runtime._ownership import controller_of
from setpoint.workloads.controllers import deployment_util as du
from setpoint.workloads.controllers.controllerref import (
    ControllerOrAdopters,
    claim,
    controller_name,
    index_orphans,
    orphans,
    recheck_owner,
)
from setpoint.workloads.controllers.deployment_sync import DEPLOYMENT, REPLICA_SET, DeploymentSync
from setpoint.workloads.controllers.podcontrol import (
    POD,
    component_recorder,
    labels_of,
    selector_of,
)
from setpoint.workloads.controllers.rollout import rollout_recreate, rollout_rolling
from setpoint.workloads.settings import WorkloadSettings

log = logging.getLogger(__name__)

ECHO_DELAY = 0.001


class _PodDeletions(Handler):
    """A Recreate Deployment waits for its old pods to be gone: the deletion of its last
    pod wakes it up (nothing else about pods matters to this controller)."""

    def __init__(self, manager: Manager) -> None:
        self.manager = manager

    def __repr__(self) -> str:
        return "DeploymentPodDeletions()"

    def requests(self, obj: Obj) -> Iterable[Request]:
        cache = self.manager.cache
        namespace = namespace_of(obj)
        if cache.store_for(POD).get(object_key(namespace, name_of(obj))) is not None:
            return ()  # an addition, not a deletion
        rs_name = controller_name(obj, "ReplicaSet")
        if rs_name is None:
            return ()
        rs = cache.store_for(REPLICA_SET).get(object_key(namespace, rs_name))
        d_name = controller_name(rs, "Deployment") if rs is not None else None
        if d_name is None:
            return ()
        d = cache.store_for(DEPLOYMENT).get(object_key(namespace, d_name))
        if d is None or du.is_rolling_update(d):
            return ()
        for sibling in cache.list_raw(REPLICA_SET, index=("owner", str(meta(d).get("uid")))):
            if cache.list_raw(POD, index=("owner", str(meta(sibling).get("uid")))):
                return ()
        return (Request(namespace, d_name),)

    def update_requests(self, old: Obj, new: Obj) -> Iterable[Request]:
        return ()


class DeploymentReconciler:
    """Syncs one Deployment per request (``syncDeployment``)."""

    def __init__(self, manager: Manager, events: EventRecorder | None = None) -> None:
        self.manager = manager
        self.events = events

    def __repr__(self) -> str:
        return "DeploymentReconciler()"

    def _record(self, obj: Obj) -> None:
        self.manager.writer.record(obj)

    def _cached_replica_set(self, namespace: str, name: str) -> Obj | None:
        return self.manager.cache.store_for(REPLICA_SET).get(object_key(namespace, name))

    async def reconcile(self, request: Request) -> Result:
        cached = self.manager.cache.store_for(DEPLOYMENT).get(
            object_key(request.namespace, request.name))
        if cached is None:
            return Result()
        d = clone(cached)
        client = self.manager.client
        s = DeploymentSync(client=client, d=d, replica_sets=[], record=self._record,
                           cached_replica_set=self._cached_replica_set, events=self.events)
        label_selector = (d.get("spec") or {}).get("selector")
        if label_selector == {}:
            s.event("SelectingAll", "This deployment is selecting all pods. A non-empty "
                    "selector is required.", warning=True)
            status = d.setdefault("status", {})
            if int(status.get("observedGeneration") or 0) < int(meta(d).get("generation") or 0):
                status["observedGeneration"] = meta(d).get("generation")
                await s.update_status()
            return Result()
        try:
            selector = selector_of(label_selector)
        except SelectorError as exc:
            log.error("deployment_invalid_selector deployment=%s error=%s", request, exc)
            return Result()
        s.replica_sets = await claim(
            client, d, REPLICA_SET, self._candidates(d), selector,
            can_adopt=recheck_owner(client, d, DEPLOYMENT), record=self._record)
        if meta(d).get("deletionTimestamp"):
            await s.sync_status_only()
            return Result()
        await s.check_paused_conditions()
        if (d.get("spec") or {}).get("paused"):
            await s.sync()
            return Result()
        if await s.is_scaling_event():
            await s.sync()
            return Result()
        if du.is_rolling_update(d):
            await rollout_rolling(s)
        else:
            await rollout_recreate(s, self._pod_map(d, s.replica_sets))
        if s.wrote_status:
            # the real controller hears its own status write and syncs again (and only
            # then cleans up a completed rollout); a recorded write has no such echo
            s.requeue(ECHO_DELAY)
        return Result(requeue_after=s.requeue_after)

    def _candidates(self, d: Obj) -> list[Obj]:
        """ReplicaSets the Deployment may claim: its own and the orphans beside it."""
        owned = self.manager.cache.list_raw(REPLICA_SET, index=("owner", str(meta(d).get("uid"))))
        seen = {name_of(rs): rs for rs in owned}
        for rs in orphans(self.manager, REPLICA_SET, namespace_of(d)):
            seen.setdefault(name_of(rs), rs)
        return list(seen.values())

    def _pod_map(self, d: Obj, replica_sets: list[Obj]) -> dict[str, list[Obj]]:
        """``getPodMapForDeployment``: the pods matching the selector, by the uid of the
        claimed ReplicaSet controlling them."""
        selector = selector_of((d.get("spec") or {}).get("selector"))
        out: dict[str, list[Obj]] = {}
        for rs in replica_sets:
            uid = str(meta(rs).get("uid"))
            out[uid] = [pod for pod in self.manager.cache.list_raw(POD, index=("owner", uid))
                        if (controller_of(pod) or {}).get("uid") == uid
                        and selector.matches(labels_of(pod))]
        return out


def deployment_controller(manager: Manager) -> tuple[Controller[Any], DeploymentReconciler]:
    """The Deployment controller definition and its reconciler, wired to ``manager``."""
    reconciler = DeploymentReconciler(manager)
    index_orphans(manager, REPLICA_SET)
    controller: Controller[Any] = (
        Controller.for_(DEPLOYMENT, name="deployment")
        .watches(REPLICA_SET, handler=ControllerOrAdopters(manager, DEPLOYMENT, "Deployment",
                                                                skip_deleting_orphans=True))
        .watches(POD, handler=_PodDeletions(manager))
        .reconciler(reconciler))
    return controller, reconciler


def install(manager: Manager, settings: WorkloadSettings) -> None:
    """Add the Deployment controller (events from ``deployment-controller``)."""
    controller, reconciler = deployment_controller(manager)
    reconciler.events = component_recorder(manager, "deployment-controller")
    manager.add(controller)

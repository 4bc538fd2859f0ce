"""The StatefulSet controller: pods with stable names, storage and ordered rollouts.

A port of ``pkg/controller/statefulset`` (``stateful_set_control.go``):

- pods are named ``<set>-<ordinal>`` for ordinals ``[start, start + replicas)``, labelled
  ``statefulset.kubernetes.io/pod-name``, ``apps.kubernetes.io/pod-index`` and
  ``controller-revision-hash`` (the ControllerRevision of their template), with
  ``hostname`` = pod name and ``subdomain`` = ``serviceName``;
- each ``volumeClaimTemplate`` gives every pod a claim ``<template>-<set>-<ordinal>``,
  created before the pod and kept on scale down and deletion unless
  ``persistentVolumeClaimRetentionPolicy`` says Delete (then the set or the condemned pod
  owns the claim and garbage collection removes it);
- ``OrderedReady``: create in ordinal order, each waiting for the previous to be Running and
  Ready (and available for ``minReadySeconds``); scale down from the highest ordinal, one at a
  time. ``Parallel``: all at once;
- ``RollingUpdate``: from the highest ordinal down to ``partition``, one pod at a time,
  waiting for each to be healthy again; ``OnDelete``: pods are replaced only when deleted;
- failed (or succeeded) pods are deleted and recreated;
- status: replicas, readyReplicas, availableReplicas, currentReplicas, updatedReplicas,
  currentRevision, updateRevision, observedGeneration, collisionCount.
"""

from __future__ import annotations

import contextlib
import re
import time

from setpoint.client import AlreadyExistsError, Kind, NotFoundError, PatchType
from setpoint.machinery.objects import Obj
from setpoint.runtime import Controller, EventRecorder, Manager, Request, Result
from setpoint.runtime._objects import clone, meta, name_of, namespace_of
from setpoint.runtime._ownership import owner_reference
from setpoint.workloads.controllers import history
from setpoint.workloads.controllers.controllerref import (
    ControllerOrAdopters,
    claim,
    is_controlled_by,
    recheck_owner,
)
from setpoint.workloads.controllers.podcontrol import (
    component_recorder,
    create_pod,
    error_text,
    is_pod_available,
    is_pod_ready,
    pod_from_template,
    pod_ready_time,
    selector_of,
)
from setpoint.workloads.settings import WorkloadSettings

STATEFUL_SET = Kind("apps/v1", "StatefulSet")
POD = Kind("v1", "Pod")
PVC = Kind("v1", "PersistentVolumeClaim")

POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
REVISION_LABEL = "controller-revision-hash"
DEFAULT_HISTORY_LIMIT = 10


# -- identity ---------------------------------------------------------------------------------

def start_ordinal(sts: Obj) -> int:
    return int(((sts.get("spec") or {}).get("ordinals") or {}).get("start") or 0)


def replicas_of(sts: Obj) -> int:
    value = (sts.get("spec") or {}).get("replicas")
    return 1 if value is None else int(value)


def ordinal_of(sts: Obj, pod: Obj) -> int | None:
    """The ordinal in ``<set>-<ordinal>``, or None when the pod is not one of the set's."""
    match = re.fullmatch(re.escape(name_of(sts)) + r"-(\d+)", name_of(pod))
    return int(match.group(1)) if match else None


def claim_name(template_name: str, sts: Obj, ordinal: int) -> str:
    return f"{template_name}-{name_of(sts)}-{ordinal}"


def revision_of(pod: Obj) -> str:
    return str((meta(pod).get("labels") or {}).get(REVISION_LABEL) or "")


def is_running_and_ready(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running" and is_pod_ready(pod)


def is_terminating(pod: Obj) -> bool:
    return bool(meta(pod).get("deletionTimestamp"))


def is_failed_or_succeeded(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Failed", "Succeeded")


def is_healthy(pod: Obj, min_ready: int) -> bool:
    return is_running_and_ready(pod) and is_pod_available(pod, min_ready) \
        and not is_terminating(pod)


def template_of(revision: Obj) -> Obj:
    """The pod template a revision stores."""
    template = clone(((revision.get("data") or {}).get("spec") or {}).get("template") or {})
    template.pop("$patch", None)
    return template


def new_pod(sts: Obj, revision: Obj, ordinal: int) -> Obj:
    """``newVersionedStatefulSetPod``: the pod of ``ordinal`` at ``revision``."""
    name = f"{name_of(sts)}-{ordinal}"
    template = template_of(revision)
    pod = pod_from_template(template, sts, name=name)
    labels = pod["metadata"].setdefault("labels", {})
    labels[POD_NAME_LABEL] = name
    labels[POD_INDEX_LABEL] = str(ordinal)
    labels[REVISION_LABEL] = name_of(revision)
    spec = pod["spec"]
    spec["hostname"] = name
    service = (sts.get("spec") or {}).get("serviceName")
    if service:
        spec["subdomain"] = service
    templates = (sts.get("spec") or {}).get("volumeClaimTemplates") or []
    if templates:
        names = {name_of(t) for t in templates}
        volumes = [v for v in spec.get("volumes") or [] if v.get("name") not in names]
        for t in templates:
            volumes.append({"name": name_of(t), "persistentVolumeClaim": {
                "claimName": claim_name(name_of(t), sts, ordinal)}})
        spec["volumes"] = volumes
    return pod


def new_claims(sts: Obj, ordinal: int) -> list[Obj]:
    """``getPersistentVolumeClaims``: the claims of ``ordinal`` from the templates."""
    selector_labels = ((sts.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    out = []
    for t in (sts.get("spec") or {}).get("volumeClaimTemplates") or []:
        body = clone(t)
        metadata = {k: v for k, v in (body.get("metadata") or {}).items()
                    if k in ("labels", "annotations")}
        metadata["name"] = claim_name(name_of(t), sts, ordinal)
        metadata["namespace"] = namespace_of(sts)
        metadata["labels"] = {**(metadata.get("labels") or {}), **selector_labels}
        out.append({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": metadata,
                    "spec": body.get("spec") or {}})
    return out


def retention(sts: Obj) -> tuple[str, str]:
    policy = (sts.get("spec") or {}).get("persistentVolumeClaimRetentionPolicy") or {}
    return policy.get("whenDeleted") or "Retain", policy.get("whenScaled") or "Retain"


# -- the controller ---------------------------------------------------------------------------

class StatefulSetReconciler:
    """``StatefulSetControl.UpdateStatefulSet`` for one set per reconcile."""

    def __init__(self, manager: Manager, events: EventRecorder | None = None) -> None:
        self.manager = manager
        self.events = events

    def __repr__(self) -> str:
        return "StatefulSetReconciler()"

    def _event(self, obj: Obj, type_: str, reason: str, note: str) -> None:
        if self.events is not None:
            self.events.event(obj, type_, reason, note)

    async def reconcile(self, request: Request) -> Result:
        sts = self.manager.cache.get(STATEFUL_SET, request.name, request.namespace)
        if sts is None or meta(sts).get("deletionTimestamp"):
            return Result()
        selector = selector_of((sts.get("spec") or {}).get("selector"))
        candidates = self.manager.cache.list_raw(POD, namespace=request.namespace)
        pods = await claim(self.manager.client, sts, POD, candidates, selector,
                           can_adopt=recheck_owner(self.manager.client, sts, STATEFUL_SET),
                           record=self.manager.writer.record,
                           match=lambda p: ordinal_of(sts, p) is not None)
        await history.claim_revisions(self.manager, sts, STATEFUL_SET, release=False)
        status = clone(sts.get("status") or {})
        collision = int(status.get("collisionCount") or 0)
        revisions = history.owned_revisions(self.manager, sts)
        update_rev, collision = await history.ensure_update_revision(
            self.manager, sts, revisions, collision)
        revisions = history.owned_revisions(self.manager, sts)
        current_rev = next((r for r in revisions
                            if name_of(r) == status.get("currentRevision")), update_rev)
        requeue = await self._sync_pods(sts, pods, current_rev, update_rev)
        pods = [p for p in self.manager.cache.list_raw(POD, namespace=request.namespace)
                if ordinal_of(sts, p) is not None and is_controlled_by(p, sts)]
        await self._write_status(sts, pods, current_rev, update_rev, collision)
        live = {revision_of(p) for p in pods} | {name_of(current_rev), name_of(update_rev)}
        limit = (sts.get("spec") or {}).get("revisionHistoryLimit")
        await history.truncate_history(self.manager, revisions, live,
                                       DEFAULT_HISTORY_LIMIT if limit is None else int(limit))
        return Result(requeue_after=requeue)

    async def _sync_pods(self, sts: Obj, pods: list[Obj], current_rev: Obj,
                         update_rev: Obj) -> float | None:
        """Create, delete and replace pods; returns when to look again for availability."""
        spec = sts.get("spec") or {}
        start, count = start_ordinal(sts), replicas_of(sts)
        ordered = (spec.get("podManagementPolicy") or "OrderedReady") == "OrderedReady"
        min_ready = int(spec.get("minReadySeconds") or 0)
        strategy = spec.get("updateStrategy") or {}
        rolling = (strategy.get("type") or "RollingUpdate") == "RollingUpdate"
        rolling_update = strategy.get("rollingUpdate")
        partition = int((rolling_update or {}).get("partition") or 0)
        status = sts.get("status") or {}
        by_ordinal = {ordinal_of(sts, p): p for p in pods}
        condemned = sorted((p for o, p in by_ordinal.items()
                            if o is not None and not start <= o < start + count),
                           key=lambda p: -(ordinal_of(sts, p) or 0))
        requeue: float | None = None
        for ordinal in range(start, start + count):
            pod = by_ordinal.get(ordinal)
            if pod is not None and is_failed_or_succeeded(pod) and not is_terminating(pod):
                self._event(sts, "Warning", "RecreatingFailedPod"
                            if (pod.get("status") or {}).get("phase") == "Failed"
                            else "RecreatingTerminatedPod",
                            f"StatefulSet {namespace_of(sts)}/{name_of(sts)} is recreating "
                            f"{'failed' if pod['status']['phase'] == 'Failed' else 'terminated'}"
                            f" Pod {name_of(pod)}")
                await self._delete_pod(sts, pod)
                if ordered:
                    return None
                continue
            if pod is None:
                # below the partition (or, without one, among the current replicas) a
                # recreated pod keeps the current revision
                if rolling_update is not None:
                    keep_current = ordinal < start + partition
                else:
                    keep_current = rolling and \
                        ordinal < start + int(status.get("currentReplicas") or 0)
                revision = current_rev if keep_current else update_rev
                await self._create(sts, new_pod(sts, revision, ordinal))
                if ordered:
                    return None
                continue
            await self._fix_identity(sts, pod)
            if is_terminating(pod) and ordered:
                return None
            if not is_running_and_ready(pod) and ordered:
                return None
            if not is_pod_available(pod, min_ready):
                wait = _until_available(pod, min_ready)
                requeue = wait if requeue is None else min(requeue, wait)
                if ordered:
                    return requeue
            await self._keep_claims(sts, ordinal, pod)
        # in OrderedReady mode every replica is healthy here; condemned pods go from the
        # highest ordinal, and an unhealthy one blocks unless it is the first unhealthy
        first_unhealthy = next((p for p in reversed(condemned)
                                if not is_running_and_ready(p)), None)
        for pod in condemned:
            if is_terminating(pod):
                if ordered:
                    return requeue
                continue
            if ordered and not is_running_and_ready(pod) and pod is not first_unhealthy:
                return requeue
            await self._condemn_claims(sts, pod)
            await self._delete_pod(sts, pod)
            if ordered:
                return requeue
        if not rolling:
            return requeue
        for ordinal in range(start + count - 1, start + partition - 1, -1):
            pod = by_ordinal.get(ordinal)
            if pod is None:
                continue
            if revision_of(pod) != name_of(update_rev) and not is_terminating(pod):
                await self._delete_pod(sts, pod)
                return requeue
            if not is_healthy(pod, min_ready):
                return requeue
        return requeue

    async def _create(self, sts: Obj, pod: Obj) -> None:
        """``CreateStatefulPod``: the claims first, then the pod."""
        client = self.manager.client
        ordinal = ordinal_of(sts, pod) or 0
        when_deleted, _ = retention(sts)
        for pvc in new_claims(sts, ordinal):
            if self.manager.cache.get(PVC, name_of(pvc), namespace_of(sts)) is not None:
                continue
            if when_deleted == "Delete":
                pvc["metadata"]["ownerReferences"] = [_plain_ref(sts)]
            try:
                created = await client.create(pvc, namespace=namespace_of(sts))
            except AlreadyExistsError:
                continue
            except Exception as exc:
                self._event(sts, "Warning", "FailedCreate",
                            f"create Claim {name_of(pvc)} for Pod {name_of(pod)} in "
                            f"StatefulSet {name_of(sts)} failed error: {error_text(exc)}")
                raise
            self.manager.writer.record(created)
            self._event(sts, "Normal", "SuccessfulCreate",
                        f"create Claim {name_of(pvc)} Pod {name_of(pod)} in StatefulSet "
                        f"{name_of(sts)} success")
        try:
            await create_pod(client, sts, pod, record=self.manager.writer.record)
        except AlreadyExistsError:
            return
        except Exception as exc:
            self._event(sts, "Warning", "FailedCreate",
                        f"create Pod {name_of(pod)} in StatefulSet {name_of(sts)} failed "
                        f"error: {error_text(exc)}")
            raise
        self._event(sts, "Normal", "SuccessfulCreate",
                    f"create Pod {name_of(pod)} in StatefulSet {name_of(sts)} successful")

    async def _delete_pod(self, sts: Obj, pod: Obj) -> None:
        try:
            await self.manager.client.delete(POD, name_of(pod), namespace=namespace_of(pod))
        except NotFoundError:
            return
        except Exception as exc:
            self._event(sts, "Warning", "FailedDelete",
                        f"delete Pod {name_of(pod)} in StatefulSet {name_of(sts)} failed "
                        f"error: {error_text(exc)}")
            raise
        self._event(sts, "Normal", "SuccessfulDelete",
                    f"delete Pod {name_of(pod)} in StatefulSet {name_of(sts)} successful")

    async def _fix_identity(self, sts: Obj, pod: Obj) -> None:
        """``updateIdentity`` for what may change on a live pod: its identity labels."""
        ordinal = ordinal_of(sts, pod)
        labels = meta(pod).get("labels") or {}
        wanted = {POD_NAME_LABEL: name_of(pod), POD_INDEX_LABEL: str(ordinal)}
        if all(labels.get(k) == v for k, v in wanted.items()):
            return
        updated = await self.manager.client.patch(
            POD, name_of(pod), {"metadata": {"labels": wanted}},
            patch_type=PatchType.MERGE, namespace=namespace_of(pod))
        self.manager.writer.record(updated)

    async def _set_claim_refs(self, sts: Obj, ordinal: int, pod_owner: Obj | None) -> None:
        """Claim owner references per the retention policy: the set when deleted, the pod
        while it is condemned by a scale down."""
        when_deleted, when_scaled = retention(sts)
        for template_claim in new_claims(sts, ordinal):
            pvc = self.manager.cache.get(PVC, name_of(template_claim), namespace_of(sts))
            if pvc is None:
                continue
            refs = list(meta(pvc).get("ownerReferences") or [])
            wanted = [r for r in refs if r.get("kind") not in ("StatefulSet", "Pod")
                      or r.get("uid") not in (meta(sts).get("uid"), *_pod_uids(refs))]
            if when_deleted == "Delete":
                wanted.append(_plain_ref(sts))
            if when_scaled == "Delete" and pod_owner is not None:
                wanted.append(_plain_ref(pod_owner))
            if _ref_uids(wanted) == _ref_uids(refs):
                continue
            body = clone(pvc)
            body["metadata"]["ownerReferences"] = wanted or None
            with contextlib.suppress(NotFoundError):
                self.manager.writer.record(await self.manager.client.update(body))

    async def _keep_claims(self, sts: Obj, ordinal: int, pod: Obj) -> None:
        if (sts.get("spec") or {}).get("volumeClaimTemplates") \
                and (sts.get("spec") or {}).get("persistentVolumeClaimRetentionPolicy"):
            await self._set_claim_refs(sts, ordinal, None)

    async def _condemn_claims(self, sts: Obj, pod: Obj) -> None:
        if (sts.get("spec") or {}).get("volumeClaimTemplates") and retention(sts)[1] == "Delete":
            await self._set_claim_refs(sts, ordinal_of(sts, pod) or 0, pod)

    async def _write_status(self, sts: Obj, pods: list[Obj], current_rev: Obj,
                            update_rev: Obj, collision: int) -> None:
        """``computeReplicaStatus`` and ``completeRollingUpdate``, written when changed."""
        min_ready = int((sts.get("spec") or {}).get("minReadySeconds") or 0)
        counts = {"replicas": 0, "readyReplicas": 0, "availableReplicas": 0,
                  "currentReplicas": 0, "updatedReplicas": 0}
        for pod in pods:
            created = bool((pod.get("status") or {}).get("phase"))
            counts["replicas"] += created
            if is_running_and_ready(pod):
                counts["readyReplicas"] += 1
                counts["availableReplicas"] += is_pod_available(pod, min_ready)
            if created and not is_terminating(pod):
                counts["currentReplicas"] += revision_of(pod) == name_of(current_rev)
                counts["updatedReplicas"] += revision_of(pod) == name_of(update_rev)
        current_name = name_of(current_rev)
        strategy = ((sts.get("spec") or {}).get("updateStrategy") or {}).get("type")
        if (strategy or "RollingUpdate") == "RollingUpdate" \
                and counts["updatedReplicas"] == counts["replicas"] \
                and counts["readyReplicas"] == counts["replicas"]:
            counts["currentReplicas"] = counts["updatedReplicas"]
            current_name = name_of(update_rev)
        status: Obj = dict(clone(sts.get("status") or {}))
        status.update({
            "observedGeneration": meta(sts).get("generation"),
            "replicas": counts["replicas"],
            "readyReplicas": counts["readyReplicas"] or None,
            "currentReplicas": counts["currentReplicas"] or None,
            "updatedReplicas": counts["updatedReplicas"] or None,
            "currentRevision": current_name,
            "updateRevision": name_of(update_rev),
            "collisionCount": collision,
            "availableReplicas": counts["availableReplicas"],
        })
        status = {k: v for k, v in status.items() if v is not None}
        if status == (sts.get("status") or {}):
            return
        body = clone(sts)
        body["status"] = status
        await self.manager.writer.update_status(body)


def _plain_ref(owner: Obj) -> Obj:
    """``setOwnerRef``: a reference that is neither controller nor blocking."""
    return owner_reference(owner, controller=False, block_owner_deletion=False)


def _pod_uids(refs: list[Obj]) -> list[str]:
    return [str(r.get("uid")) for r in refs if r.get("kind") == "Pod"]


def _ref_uids(refs: list[Obj]) -> list[str]:
    return sorted(str(r.get("uid")) for r in refs)


def _until_available(pod: Obj, min_ready: int) -> float:
    since = pod_ready_time(pod)
    if since is None:
        return float(max(min_ready, 1))
    return max(0.1, since + min_ready - time.time() + 0.1)


# -- wiring -----------------------------------------------------------------------------------

def install(manager: Manager, settings: WorkloadSettings) -> None:
    """Add the StatefulSet controller (events from ``statefulset-controller``)."""

    def sets_of_claim(pvc: Obj) -> list[Request]:
        return [Request(namespace_of(pvc), str(r.get("name")))
                for r in meta(pvc).get("ownerReferences") or []
                if r.get("kind") == "StatefulSet"]

    events = component_recorder(manager, "statefulset-controller")
    # a pod's controller, or for an orphan whose labels or controller changed the sets
    # that may adopt it (stateful_set.go addPod/updatePod): not every event of every pod
    # of the namespace, which listed and matched the namespace's sets for each
    manager.add(Controller.for_(STATEFUL_SET, name="statefulset")
                .owns(history.CONTROLLER_REVISION)
                .watches(POD, handler=ControllerOrAdopters(manager, STATEFUL_SET,
                                                           "StatefulSet"))
                .watches(PVC, map_func=sets_of_claim)
                .reconciler(StatefulSetReconciler(manager, events)))

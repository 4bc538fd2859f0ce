"""DELETE: preconditions, graceful deletion, finalizers and propagation policies.

An object with finalizers (its own, or the ``orphan``/``foregroundDeletion`` finalizer a
propagation policy adds) only gets a deletionTimestamp; the garbage collector and other
controllers remove the finalizers, and the update that removes the last one deletes it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from setpoint.cluster.registry.admissionpoints import (
    MUTATING,
    VALIDATING,
    AdmissionPoint,
    Changed,
    Steps,
)
from setpoint.cluster.registry.genericstore import GenericStore, serialization_order
from setpoint.cluster.registry.options import DeleteOptions
from setpoint.cluster.registry.types import ResourceType
from setpoint.machinery import errors
from setpoint.machinery.objects import Obj

DeleteAdmission = Callable[[ResourceType, str | None, str], None]
"""A check a DELETE passes before the object is read (type, namespace, name)."""

ORPHAN = "orphan"
CRD_CLEANUP = "customresourcecleanup.apiextensions.k8s.io"
FOREGROUND = "foregroundDeletion"


def success_status(rt: ResourceType, obj: Obj) -> Obj:
    meta = obj["metadata"]
    details: Obj = {"name": meta["name"]}
    if rt.group:
        details["group"] = rt.group
    details["kind"] = rt.resource
    details["uid"] = meta.get("uid", "")
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
            "details": details}


# Kinds whose registry returns the deleted object rather than a Status (ReturnDeletedObject:
# pkg/registry/core/{pod,service,namespace,serviceaccount,persistentvolume,
# persistentvolumeclaim}/storage/storage.go).
RETURNS_DELETED_OBJECT = {("", "Pod"), ("", "Service"), ("", "Namespace"),
                          ("", "ServiceAccount"), ("", "PersistentVolume"),
                          ("", "PersistentVolumeClaim")}


def _deleted_answer(store: GenericStore, rt: ResourceType, live: Obj) -> Obj:
    if (rt.group, rt.kind) in RETURNS_DELETED_OBJECT:
        return store.codec.present(rt, live)
    return success_status(rt, live)


def _mark_pod_deleted(store: GenericStore, rt: ResourceType, live: Obj, dry_run: bool) -> Obj:
    """A pod deletion with no grace left is still graceful: the pod is first written with its
    deletionTimestamp (a MODIFIED event, a new resourceVersion), then removed. A pod already
    terminating with grace left has that grace shortened to none first (rest.BeforeDelete:
    the deadline moves back by the old period)."""
    if rt.kind != "Pod" or rt.group:
        return live
    old = live["metadata"]
    if not old.get("deletionTimestamp"):
        meta = {**old, "deletionTimestamp": store.clock(), "deletionGracePeriodSeconds": 0}
    elif old.get("deletionGracePeriodSeconds"):
        meta = {**old, "deletionTimestamp": grace_deadline(
            old["deletionTimestamp"], -old["deletionGracePeriodSeconds"]),
                "deletionGracePeriodSeconds": 0}
    else:
        return live
    marked = {**live, "metadata": meta}
    return marked if dry_run else store.storage.put(rt.storage_key, marked)


def _crd_terminating(status: Obj, now: str) -> Obj:
    """The condition the CRD registry sets when it marks a definition for deletion."""
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != "Terminating"]
    conditions.append({
        "type": "Terminating", "status": "True", "lastTransitionTime": now,
        "reason": "InstanceDeletionPending",
        "message": "CustomResourceDefinition marked for deletion; CustomResource deletion will "
                   "begin soon",
    })
    return {**status, "conditions": conditions}


def _check_preconditions(rt: ResourceType, obj: Obj, opts: DeleteOptions) -> None:
    """rest.BeforeDelete checks the preconditions against the object it read, before the
    storage would: its Conflict names the object's Kind (not the resource) and its group."""
    meta = obj["metadata"]
    name = meta["name"]
    if (rt.group, rt.kind) in _OWN_DELETE_PRECONDITIONS:
        _check_registry_preconditions(rt, meta, opts)
        return
    # the registry's object is the internal type: events.k8s.io Events are core Events
    group = "" if rt.group == "events.k8s.io" else rt.group
    if opts.precondition_uid is not None and opts.precondition_uid != meta.get("uid"):
        raise errors.conflict(
            rt.kind, name,
            f"the UID in the precondition ({opts.precondition_uid}) does not match the UID in "
            f"record ({meta.get('uid', '')}). The object might have been deleted and then "
            "recreated", group)
    if opts.precondition_rv is not None and opts.precondition_rv != meta.get("resourceVersion"):
        raise errors.conflict(
            rt.kind, name,
            f"the ResourceVersion in the precondition ({opts.precondition_rv}) does not match "
            f"the ResourceVersion in record ({meta.get('resourceVersion', '')}). The object "
            "might have been modified", group)


# Registries whose Delete checks the preconditions itself before the generic store's:
# pkg/registry/core/namespace/storage/storage.go and apiextensions-apiserver's
# pkg/registry/customresourcedefinition/etcd.go (REST.Delete).
_OWN_DELETE_PRECONDITIONS = {("", "Namespace"),
                             ("apiextensions.k8s.io", "CustomResourceDefinition")}


def _check_registry_preconditions(rt: ResourceType, meta: Obj, opts: DeleteOptions) -> None:
    """Those registries' Conflict names the resource and quotes storage's wording."""
    name = meta["name"]
    if opts.precondition_uid is not None and opts.precondition_uid != meta.get("uid"):
        raise errors.conflict(
            rt.resource, name, f"Precondition failed: UID in precondition: "
            f"{opts.precondition_uid}, UID in object meta: {meta.get('uid', '')}", rt.group)
    if opts.precondition_rv is not None and opts.precondition_rv != meta.get("resourceVersion"):
        raise errors.conflict(
            rt.resource, name, f"Precondition failed: ResourceVersion in precondition: "
            f"{opts.precondition_rv}, ResourceVersion in object meta: "
            f"{meta.get('resourceVersion', '')}", rt.group)


def _grace_period(rt: ResourceType, obj: Obj, opts: DeleteOptions) -> int:
    """Seconds the object lingers with a deletionTimestamp before it goes (pods only)."""
    if rt.group or rt.kind != "Pod":
        return 0
    meta = obj["metadata"]
    if meta.get("deletionTimestamp"):
        # rest.BeforeDelete on an object already being deleted (CheckGracefulDelete is not
        # asked again): none left is deletion at once; only a shorter period the request
        # names is taken; else the deletion stays pending as it is
        current = int(meta.get("deletionGracePeriodSeconds") or 0)
        if not current:
            return 0
        asked = opts.grace_period_seconds
        if asked is None:
            return max(current, 1)
        return min(1 if asked < 0 else asked, max(current, 1))
    spec = obj.get("spec") or {}
    if not spec.get("nodeName"):
        return 0  # never scheduled: nothing runs that must stop
    phase = (obj.get("status") or {}).get("phase")
    if phase in ("Succeeded", "Failed"):
        return 0
    if opts.grace_period_seconds is not None:
        # rest.BeforeDelete: a negative grace period is taken as one second
        return 1 if opts.grace_period_seconds < 0 else opts.grace_period_seconds
    grace = spec.get("terminationGracePeriodSeconds")
    return int(grace) if grace is not None else 30


def _settled_options(rt: ResourceType, obj: Obj, opts: DeleteOptions) -> Obj:
    """The DeleteOptions admission is sent: rest.BeforeDelete has run on them by then
    (store.go Delete), taking a negative grace period as one second and writing the period
    a pod's CheckGracefulDelete settled."""
    grace = opts.grace_period_seconds
    if grace is not None and grace < 0:
        grace = 1
    if not rt.group and rt.kind == "Pod" and not obj["metadata"].get("deletionTimestamp"):
        grace = _grace_period(rt, obj, opts)
    return dataclasses.replace(opts, grace_period_seconds=grace).options_object()


def _pending_graceful(rt: ResourceType, obj: Obj, opts: DeleteOptions) -> bool:
    """rest.BeforeDelete's gracefulPending: a pod already being deleted with grace left,
    which the request does not shorten (a negative period counts as one second)."""
    if rt.group or rt.kind != "Pod":
        return False
    meta = obj["metadata"]
    current = int(meta.get("deletionGracePeriodSeconds") or 0)
    if not meta.get("deletionTimestamp") or current <= 0:
        return False
    asked = opts.grace_period_seconds
    return asked is None or (1 if asked < 0 else asked) >= current


def delete_steps(generic: GenericStore, checks: list[DeleteAdmission], rt: ResourceType,
                 ns: str | None, name: str, opts: DeleteOptions) -> Steps[tuple[int, Obj]]:
    """A DELETE, stopping at its admission points; (status code, answer)."""
    for check in checks:
        check(rt, ns, name)
    store = generic.storage
    live = store.get(rt.storage_key, ns or "", name)
    if live is None:
        raise errors.not_found(rt.resource, name, rt.group)
    _check_preconditions(rt, live, opts)
    # admission runs in the store's deleteValidation, after rest.BeforeDelete: never for a
    # deletion already pending, and with the options BeforeDelete settled (store.go Delete,
    # rest.AdmissionToValidateObjectDeleteFunc). Webhooks see the object as served; a
    # mutating one may not change it (obj is None).
    if not _pending_graceful(rt, live, opts):
        served = yield from generic.codec.present_steps(rt, live)
        options = _settled_options(rt, live, opts)
        yield AdmissionPoint(MUTATING, "DELETE", rt, ns or "", name, None, served,
                             opts.dry_run, options=options)
        yield AdmissionPoint(VALIDATING, "DELETE", rt, ns or "", name, None, served,
                             opts.dry_run, options=options)
    current_rv = store.resource_version(rt.storage_key, ns or "", name)
    if current_rv is None or current_rv != live["metadata"].get("resourceVersion"):
        raise Changed  # written or deleted by another request while webhooks answered
    meta = live["metadata"]
    # handlers/delete.go: an object left in place answers 202 only when orphanDependents
    # was explicitly false ("we want to do this always ... but that will break clients")
    kept = 202 if opts.orphan_dependents is False else 200
    if rt.kind == "Namespace" and not rt.group:
        # pkg/registry/core/namespace/storage/storage.go Delete: the first DELETE only marks
        # the namespace (whatever its spec.finalizers), a terminating one with spec.finalizers
        # left is answered as it is; only one with none left goes through the generic store
        if not meta.get("deletionTimestamp"):
            return kept, (yield from _mark_namespace_terminating(generic, rt, live, opts))
        if (live.get("spec") or {}).get("finalizers"):
            return kept, (yield from generic.codec.present_steps(rt, live))
    if _pending_graceful(rt, live, opts):
        # store.go Delete: finalizeDelete on the object as it is; "finalizers cannot be
        # updated via DeleteOptions if a deletion is already pending"
        return kept, _deleted_answer(generic, rt, live)
    finalizers = gc_finalizers(list(meta.get("finalizers") or []), opts, default_gc_policy(rt))
    if rt.kind == "CustomResourceDefinition" and rt.group == "apiextensions.k8s.io" \
            and CRD_CLEANUP not in finalizers:
        # its objects go first: the CRD controller removes this finalizer when they are gone
        finalizers.append(CRD_CLEANUP)
    is_crd = rt.kind == "CustomResourceDefinition" and rt.group == "apiextensions.k8s.io"
    grace = _grace_period(rt, live, opts)
    if not finalizers and grace == 0:
        live = _mark_pod_deleted(generic, rt, live, opts.dry_run)
        if not opts.dry_run:
            store.discard(rt.storage_key, ns or "", name)
        return 200, _deleted_answer(generic, rt, live)
    new_meta = dict(meta)
    now = generic.clock()
    if not meta.get("deletionTimestamp"):
        new_meta["deletionTimestamp"] = grace_deadline(now, grace) if grace else now
        if not is_crd:  # its registry sets only the timestamp
            new_meta["deletionGracePeriodSeconds"] = grace
            # rest.BeforeDelete (graceful) and the store's markAsDeleting bump a generation
            # the object has, once, when its deletion starts
            if (meta.get("generation") or 0) > 0:
                new_meta["generation"] = meta["generation"] + 1
    elif grace < (meta.get("deletionGracePeriodSeconds") or 0):
        # rest.BeforeDelete: only a shorter grace period is taken, and the deadline moves
        # from the old one (old deadline - old period + new period), not from now
        new_meta["deletionTimestamp"] = grace_deadline(
            meta["deletionTimestamp"], grace - meta["deletionGracePeriodSeconds"])
        new_meta["deletionGracePeriodSeconds"] = grace
    if finalizers:
        new_meta["finalizers"] = finalizers
    obj = {**live, "metadata": new_meta}
    if is_crd and not meta.get("deletionTimestamp"):
        obj["status"] = _crd_terminating(live.get("status") or {}, now)
    obj = serialization_order(obj)
    if obj == live:
        return kept, (yield from generic.codec.present_steps(rt, live))
    if opts.dry_run:
        return kept, (yield from generic.codec.present_steps(rt, obj))
    if not finalizers and grace == 0:
        store.discard(rt.storage_key, ns or "", name)
        return 200, _deleted_answer(generic, rt, live)
    store.put(rt.storage_key, obj)
    return kept, (yield from generic.codec.present_steps(rt, obj))


# rest.GarbageCollectionPolicy: a kind's DefaultGarbageCollectionPolicy, by the request's
# group-version where the Go strategy asks for it (RequestInfo)
DELETE_DEPENDENTS = "DeleteDependents"
ORPHAN_DEPENDENTS = "OrphanDependents"
UNSUPPORTED = "Unsupported"
_DEFAULT_GC_POLICIES = {
    # pkg/registry/core/replicationcontroller/strategy.go: OrphanDependents for v1
    # ("for back compatibility"), and pkg/registry/batch/job/strategy.go for batch/v1
    ("", "v1", "ReplicationController"): ORPHAN_DEPENDENTS,
    ("batch", "v1", "Job"): ORPHAN_DEPENDENTS,
    # pkg/registry/core/event/strategy.go: Unsupported (events.k8s.io Events share that store)
    ("", "v1", "Event"): UNSUPPORTED,
    ("events.k8s.io", "v1", "Event"): UNSUPPORTED,
}

# pkg/registry/batch/job/storage/storage.go deleteOptionWarnings
JOB_DELETE_WARNING = ("child pods are preserved by default when jobs are deleted; set "
                      "propagationPolicy=Background to remove them or set "
                      "propagationPolicy=Orphan to suppress this warning")


def default_gc_policy(rt: ResourceType) -> str:
    """The kind's DefaultGarbageCollectionPolicy at the request's group-version."""
    if rt.is_custom:
        return DELETE_DEPENDENTS
    return _DEFAULT_GC_POLICIES.get((rt.group, rt.version, rt.kind), DELETE_DEPENDENTS)


def delete_warnings(rt: ResourceType, opts: DeleteOptions) -> list[str]:
    """What the registry's Delete and DeleteCollection warn before they start: the Job
    registry warns a request that leaves batch/v1's orphaning default in place."""
    if (rt.kind == "Job" and rt.group == "batch" and not rt.is_custom
            and opts.propagation_policy is None and opts.orphan_dependents is None
            and default_gc_policy(rt) == ORPHAN_DEPENDENTS):
        return [JOB_DELETE_WARNING]
    return []


def _mark_namespace_terminating(store: GenericStore, rt: ResourceType, live: Obj,
                                opts: DeleteOptions) -> Steps[Obj]:
    """The namespace registry's first DELETE: deletionTimestamp now (no grace period),
    phase Terminating, the GC finalizers as its own rules say; the namespace controller
    empties and finalizes it."""
    meta = dict(live["metadata"])
    meta["deletionTimestamp"] = store.clock()
    current = list(meta.get("finalizers") or [])
    finalizers = namespace_gc_finalizers(current, opts)
    if finalizers != current:
        meta["finalizers"] = finalizers
    obj = serialization_order({**live, "metadata": meta,
                               "status": {**(live.get("status") or {}),
                                          "phase": "Terminating"}})
    if not opts.dry_run:
        obj = store.storage.put(rt.storage_key, obj)
    return (yield from store.codec.present_steps(rt, obj))


def gc_finalizers(finalizers: list[str], opts: DeleteOptions,
                  policy: str = DELETE_DEPENDENTS) -> list[str]:
    """store.go ``deletionFinalizersForGarbageCollection``: the orphan and foregroundDeletion
    finalizers as ``shouldOrphanDependents``/``shouldDeleteDependents`` decide (nothing for
    a kind whose policy is Unsupported; else the deprecated orphanDependents first, then
    the propagation policy, then the first of the two finalizers already there, then the
    kind's default policy, which orphans only for OrphanDependents); the others kept in
    their order and the two appended after them; the same set is no change."""
    present = [f for f in finalizers if f in (ORPHAN, FOREGROUND)]
    if policy == UNSUPPORTED:
        orphan = foreground = False
    elif opts.orphan_dependents is not None:
        # shouldDeleteDependents: an explicit orphanDependents, even false, is never foreground
        orphan, foreground = opts.orphan_dependents, False
    elif opts.propagation_policy in ("Orphan", "Background", "Foreground"):
        orphan = opts.propagation_policy == "Orphan"
        foreground = opts.propagation_policy == "Foreground"
    elif present:
        orphan, foreground = present[0] == ORPHAN, present[0] == FOREGROUND
    else:
        orphan, foreground = policy == ORPHAN_DEPENDENTS, False
    out = [f for f in finalizers if f not in (ORPHAN, FOREGROUND)]
    out += [ORPHAN] * orphan + [FOREGROUND] * foreground
    return finalizers if set(out) == set(finalizers) else out


def namespace_gc_finalizers(finalizers: list[str], opts: DeleteOptions) -> list[str]:
    """pkg/registry/core/namespace/storage/storage.go ``shouldHaveOrphanFinalizer`` and
    ``shouldHaveDeleteDependentsFinalizer``: unlike the generic store, orphanDependents=false
    asks for foregroundDeletion, and with no option each finalizer stays as it is. Go builds
    the changed list from a map (in no set order); this keeps the others' order and appends
    orphan, then foregroundDeletion."""
    if opts.orphan_dependents is not None:
        orphan, foreground = opts.orphan_dependents, not opts.orphan_dependents
    elif opts.propagation_policy is not None:
        orphan = opts.propagation_policy == "Orphan"
        foreground = opts.propagation_policy == "Foreground"
    else:
        orphan, foreground = ORPHAN in finalizers, FOREGROUND in finalizers
    if (ORPHAN in finalizers, FOREGROUND in finalizers) == (orphan, foreground):
        return finalizers
    out = [f for f in finalizers if f not in (ORPHAN, FOREGROUND)]
    return out + [ORPHAN] * orphan + [FOREGROUND] * foreground


def grace_deadline(now: str, seconds: int) -> str:
    start = datetime.strptime(now, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    return (start + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")

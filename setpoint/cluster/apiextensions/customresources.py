"""CustomResourceDefinitions come alive: served types, schemas, status, and cleanup.

A CRD write is validated by admission; then, as in apiextensions-apiserver's controllers,
the definition is reconciled: its versions are served, NamesAccepted and Established are
set, and on deletion every object of the resource is removed before the CRD goes.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from typing import TYPE_CHECKING

from setpoint.cluster.apiextensions.customresourcestrategy import CustomResourceStrategy
from setpoint.cluster.registry.deletion import CRD_CLEANUP as CLEANUP_FINALIZER
from setpoint.cluster.registry.strategy import Strategy
from setpoint.cluster.registry.types import ResourceType, ScalePaths
from setpoint.cluster.storage import Event
from setpoint.machinery import errors
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.apiextensions.schema import CustomResourceSchema
    from setpoint.cluster.registry import Registry
    from setpoint.cluster.registry.rest import REST
    from setpoint.cluster.storage import Store

CRD_KEY = "apiextensions.k8s.io/customresourcedefinitions"
# crd_finalizer.go deleteInstances polls the remaining objects for one minute
# (wait.PollImmediate(5*time.Second, 1*time.Minute, ...)) before it gives up
INSTANCE_DELETION_TIMEOUT_S = 60.0


def _served_types(crd: Obj) -> list[ResourceType]:
    """The versions a CRD serves. customresource_handler.go serves none until NamesAccepted
    or Established is True (another answer is the delegate's 404), and serves (and
    discovery lists) the names the naming controller granted, ``status.acceptedNames``; the
    URL's resource is the one in the CRD's name."""
    if not (_condition_true(crd, "NamesAccepted") or _condition_true(crd, "Established")):
        return []
    spec = crd.get("spec") or {}
    names = (crd.get("status") or {}).get("acceptedNames") or {}
    out = []
    for version in spec.get("versions") or []:
        if not version.get("served", True):
            continue
        subs = version.get("subresources") or {}
        subresources: tuple[str, ...] = ()
        scale = None
        if "status" in subs:
            subresources += ("status",)
        if "scale" in subs:
            subresources += ("scale",)
            sc = subs["scale"] or {}
            scale = ScalePaths(
                spec_replicas=sc.get("specReplicasPath", ".spec.replicas"),
                status_replicas=sc.get("statusReplicasPath", ".status.replicas"),
                label_selector=sc.get("labelSelectorPath"),
            )
        out.append(ResourceType(
            group=spec.get("group", ""),
            version=version["name"],
            resource=(spec.get("names") or {}).get("plural", ""),
            kind=names.get("kind", ""),
            namespaced=spec.get("scope") == "Namespaced",
            singular=names.get("singular") or names.get("kind", "").lower(),
            short_names=tuple(names.get("shortNames") or ()),
            categories=tuple(names.get("categories") or ()),
            subresources=subresources,
            scale=scale,
            crd=crd,
            storage_version=bool(version.get("storage")),
            strategy=CustomResourceStrategy(),
        ))
    return out


class CRDStrategy(Strategy):
    """CustomResourceDefinition: v1 defaults, the status its controllers own."""

    def default(self, rt: ResourceType, obj: Obj) -> None:
        from setpoint.cluster.apiextensions.schema import default_crd

        obj.update(default_crd(obj))

    def prepare_for_create(self, rt: ResourceType, obj: Obj,
                           warnings: list[str] | None = None) -> None:
        from setpoint.cluster.apiextensions.schema import initial_status

        super().prepare_for_create(rt, obj, warnings)
        obj["status"] = initial_status(obj)

    def prepare_for_update(self, rt: ResourceType, new: Obj, old: Obj) -> None:
        from setpoint.cluster.apiextensions.schema import prepare_update_status

        super().prepare_for_update(rt, new, old)
        new["status"] = prepare_update_status(new, old)


class CustomResources:
    """Keeps the registry in step with the stored CRDs."""

    def __init__(self, store: Store, registry: Registry, rest: REST) -> None:
        self.store = store
        self.registry = registry
        self.rest = rest
        self._schemas: dict[tuple[str, str, str], CustomResourceSchema] = {}
        self._restored: set[str] = set()  # uids of the CRDs found in storage at startup
        self._pending: set[str] = set()
        self._terminating: dict[str, str] = {}  # storage key -> CRD being deleted
        # storage key -> the end of the finalizer's wait for the remaining objects
        self._deletion_checks: dict[str, asyncio.TimerHandle] = {}
        store.add_listener(self._on_event)
        crds = registry.get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        assert crds is not None
        crds.strategy = CRDStrategy()

    # -- schemas -----------------------------------------------------------------------
    def schema_for(self, rt: ResourceType) -> CustomResourceSchema | None:
        crd = rt.crd
        if crd is None:
            return None
        meta = crd["metadata"]
        key = (meta.get("uid", ""), meta.get("resourceVersion", ""), rt.version)
        cached = self._schemas.get(key)
        if cached is None:
            from setpoint.cluster.apiextensions.schema import CustomResourceSchema

            cached = CustomResourceSchema(crd, rt.version)
            cached.prunes_on_read = self._may_hold_unpruned(crd, key, cached)
            self._schemas[key] = cached
        return cached

    def _may_hold_unpruned(self, crd: Obj, key: tuple[str, str, str],
                           schema: CustomResourceSchema) -> bool:
        """Whether objects of this CRD version may have been stored under another schema:
        written at another version whose schema differs (the converter's coercer prunes
        with the served version's), the CRD came from storage at startup, or an earlier
        generation's schema differed."""
        uid, _, version = key
        if uid in self._restored:
            return True
        for v in (crd.get("spec") or {}).get("versions") or ():
            other = (v.get("schema") or {}).get("openAPIV3Schema")
            if v.get("name") != version and other != schema.raw:
                return True
        return any(k[0] == uid and k[2] == version and (s.prunes_on_read or s.raw != schema.raw)
                   for k, s in self._schemas.items())

    # -- reconciliation ----------------------------------------------------------------
    def restore(self) -> None:
        """Serve the CRDs found in storage at startup."""
        for crd in self.store.list(CRD_KEY):
            self._restored.add(crd["metadata"].get("uid", ""))
            self._serve(crd)

    def _on_event(self, event: Event) -> None:
        if event.resource == CRD_KEY:
            self._schedule(event.name)
        elif event.type == "DELETED" and event.resource in self._terminating:
            # a terminating CRD waits for its last objects to go
            self._schedule(self._terminating[event.resource])

    def _schedule(self, name: str) -> None:
        if name not in self._pending:
            self._pending.add(name)
            asyncio.get_running_loop().call_soon(self._reconcile, name)

    def _serve(self, crd: Obj) -> None:
        spec = crd.get("spec") or {}
        group, plural = spec.get("group", ""), (spec.get("names") or {}).get("plural", "")
        self.registry.replace_custom(group, plural, _served_types(crd))

    def _reconcile(self, name: str) -> None:
        self._pending.discard(name)
        store = self.store
        crd = store.get(CRD_KEY, "", name)
        if crd is None:
            self._forget(name)
            # naming_controller.go sync: a deleted CRD has freed its names, so the others
            # of its group are reconsidered
            self._requeue_group(name)
            return
        if crd["metadata"].get("deletionTimestamp"):
            self._clean_up(crd)
            return
        from setpoint.cluster.apiextensions.schema import crd_status

        spec = crd.get("spec") or {}
        others = [c for c in store.list(CRD_KEY)
                  if c["metadata"]["name"] != name and (c.get("spec") or {}).get("group")
                  == spec.get("group")]
        status = crd_status(crd, self.rest.clock(), others)
        if status != crd.get("status"):
            released = status.get("acceptedNames") != (crd.get("status") or {}).get(
                "acceptedNames")
            crd = self._write_status(crd, status)
            if released:
                # its accepted names changed, which may release a name another CRD of the
                # group asked for (naming_controller.go requeueAllOtherGroupCRDs)
                self._requeue_group(name)
        self._serve(crd)

    def _requeue_group(self, name: str) -> None:
        group = name.split(".", 1)[1] if "." in name else ""
        for other in self.store.list(CRD_KEY):
            if (other.get("spec") or {}).get("group") == group \
                    and other["metadata"]["name"] != name:
                self._schedule(other["metadata"]["name"])

    def _write_status(self, crd: Obj, status: Obj) -> Obj:
        """Write status through ``/status`` as kube-apiserver's own controllers do."""
        from setpoint.cluster.registry.options import WriteOptions
        from setpoint.cluster.serializer.decode import Decoded

        rt = self.registry.require("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        opts = WriteOptions(field_manager="kube-apiserver", field_validation="Ignore")
        body = {**crd, "status": status}
        return self.rest.update(rt, None, crd["metadata"]["name"], Decoded(body), opts,
                                    "status").obj

    def _forget(self, name: str) -> None:
        group = name.split(".", 1)[1] if "." in name else ""
        plural = name.split(".", 1)[0]
        self.registry.remove_custom(group, plural)

    def _clean_up(self, crd: Obj) -> None:
        """The finalizer controller (pkg/controller/finalizer/crd_finalizer.go): Terminating
        is set first (the resource refuses creates from then on), every object is deleted,
        and the cleanup finalizer goes with the condition saying how the deletion ended."""
        from setpoint.cluster.registry.options import DeleteOptions

        meta = crd["metadata"]
        if CLEANUP_FINALIZER not in (meta.get("finalizers") or []):
            return
        crd = self._set_terminating(crd, _IN_PROGRESS)
        self._serve(crd)
        spec = crd.get("spec") or {}
        group, plural = spec.get("group", ""), (spec.get("names") or {}).get("plural", "")
        storage_key = f"{group}/{plural}"
        if _condition_true(crd, "Established"):
            types = self.registry.versions_of(group, plural)
            rt = next((t for t in types if t.storage_version), types[0] if types else None)
            for obj in self.store.list(storage_key):
                obj_meta = obj["metadata"]
                if obj_meta.get("deletionTimestamp") or rt is None:
                    continue
                with contextlib.suppress(errors.StatusError):
                    self.rest.delete(rt, obj_meta.get("namespace"), obj_meta["name"],
                                     DeleteOptions())
            if self.store.count(storage_key):
                self._terminating[storage_key] = crd["metadata"]["name"]
                if storage_key not in self._deletion_checks:
                    self._deletion_checks[storage_key] = asyncio.get_running_loop().call_later(
                        INSTANCE_DELETION_TIMEOUT_S, self._deletion_timed_out, storage_key)
                return  # objects with finalizers remain: we come back when they go
            ended = _DELETION_COMPLETED
        else:
            ended = _NEVER_ESTABLISHED
        self._terminating.pop(storage_key, None)
        timer = self._deletion_checks.pop(storage_key, None)
        if timer is not None:
            timer.cancel()
        meta = crd["metadata"]
        finalizers = [f for f in meta.get("finalizers") or [] if f != CLEANUP_FINALIZER]
        if finalizers:
            self.store.put(CRD_KEY, {**crd, "metadata": {**meta, "finalizers": finalizers},
                                     "status": self._with_condition(crd, ended)})
            return
        self.store.delete(CRD_KEY, "", meta["name"])
        self.store.drop_resource(storage_key)

    def _deletion_timed_out(self, storage_key: str) -> None:
        """deleteInstances' poll ended with objects left: the condition says so
        (InstanceDeletionCheck) and the sync fails, so the controller's queue retries it,
        which starts again from InstanceDeletionInProgress and deletes again."""
        self._deletion_checks.pop(storage_key, None)
        name = self._terminating.get(storage_key)
        crd = self.store.get(CRD_KEY, "", name) if name else None
        if crd is None or not self.store.count(storage_key):
            return
        self._set_terminating(crd, _DELETION_CHECK)
        self._schedule(crd["metadata"]["name"])

    def _with_condition(self, crd: Obj, cond: tuple[str, str, str]) -> Obj:
        """The CRD's status with its Terminating condition set (SetCRDCondition: the
        transition time moves only when the status does)."""
        status = dict(crd.get("status") or {})
        conditions = list(status.get("conditions") or [])
        value, reason, message = cond
        old = next((c for c in conditions if c.get("type") == "Terminating"), None)
        when = old["lastTransitionTime"] if old and old.get("status") == value \
            and old.get("lastTransitionTime") else self.rest.clock()
        new = {"type": "Terminating", "status": value, "lastTransitionTime": when,
               "reason": reason, "message": message}
        if old is None:
            conditions.append(new)
        else:
            conditions[conditions.index(old)] = new
        status["conditions"] = conditions
        return status

    def _set_terminating(self, crd: Obj, cond: tuple[str, str, str]) -> Obj:
        status = self._with_condition(crd, cond)
        if status == crd.get("status"):
            return crd
        return self.store.put(CRD_KEY, {**crd, "status": status})


def _condition_true(crd: Obj, kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True"
               for c in (crd.get("status") or {}).get("conditions") or [])


def serving_error(crd: Obj | None) -> errors.StatusError | None:
    """customresource_handler.go ServeHTTP: ``getOrCreateServingInfoFor`` fails when the
    CRD's converter cannot be built, which a conversion webhook whose caBundle loads no
    certificate makes happen (conversion/webhook_converter.go NewWebhookConverter, through
    ClientManager.HookClient and the client's TLS config): every request for the resource is
    then ``NewInternalError("error resolving resource")``. Such a CRD is never Established,
    but with NamesAccepted its resources reach the handler."""
    if crd is None:
        return None
    conversion = (crd.get("spec") or {}).get("conversion") or {}
    if conversion.get("strategy") != "Webhook":
        return None
    config = (conversion.get("webhook") or {}).get("clientConfig")
    bundle = config.get("caBundle") if isinstance(config, dict) else None
    if not isinstance(bundle, str) or not bundle or not _bundle_invalid(bundle):
        return None
    err = errors.internal("error resolving resource")
    err.causes = [errors.Cause("", "error resolving resource")]
    return err


@functools.lru_cache(maxsize=64)
def _bundle_invalid(bundle: str) -> bool:
    # (asked on every request for the resource: a bundle is parsed once; the schema
    # package, as the other uses above, is loaded with the first CRD, not at start)
    from setpoint.cluster.apiextensions.schema.webhookconfig import validate_ca_bundle

    return bool(validate_ca_bundle("caBundle", bundle))


def terminating(crd: Obj | None) -> bool:
    """customresource_handler.go: a CRD whose Terminating condition is True serves no
    creates."""
    return crd is not None and _condition_true(crd, "Terminating")


_IN_PROGRESS = ("True", "InstanceDeletionInProgress", "CustomResource deletion is in progress")
_DELETION_COMPLETED = ("False", "InstanceDeletionCompleted", "removed all instances")
_NEVER_ESTABLISHED = ("False", "NeverEstablished", "resource was never established")
_DELETION_CHECK = ("True", "InstanceDeletionCheck", "could not confirm zero CustomResources "
                   "remaining: timed out waiting for the condition")

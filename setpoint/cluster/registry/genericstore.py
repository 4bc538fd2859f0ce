"""The generic store: create, get and update of every resource over storage, by its strategy.

As k8s.io/apiserver's pkg/registry/generic/registry/store.go: one implementation serves all
kinds; what differs per kind is the type's ``RESTStrategy``. The steps of a write run in the
apiserver's order (handlers/create.go and update.go, then store.go): defaults, managed
fields, the mutating admission (built-in plugins, then webhooks) on the object as sent, the
system fields filled or kept, prepare (generation, status), the storage's own admission
steps, validate, validating webhooks, store. The verbs built on it (patch, delete, list,
scale) and the REST face above them use only what is public here.
"""

from __future__ import annotations

import copy
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from setpoint.cluster.registry import gomembers, kept_empty_slices
from setpoint.cluster.registry.admissionpoints import (
    MUTATING,
    VALIDATING,
    AdmissionPoint,
    Attributes,
    Changed,
    Reinvocation,
    Steps,
)
from setpoint.cluster.registry.csrapproval import (
    keep_approval_conditions,
    populate_condition_timestamps,
)
from setpoint.cluster.registry.decoder import ObjectDecoder
from setpoint.cluster.registry.options import WriteOptions
from setpoint.cluster.registry.requestnames import ensure_namespace_matches
from setpoint.cluster.registry.storagecodec import StorageCodec
from setpoint.cluster.registry.strategy import STATUS_RESETS_METADATA
from setpoint.cluster.registry.types import ResourceType
from setpoint.cluster.storage import Store
from setpoint.cluster.storage.versioner import object_resource_version
from setpoint.machinery import errors
from setpoint.machinery import fielderrors as fe
from setpoint.machinery.errors import Cause
from setpoint.machinery.managedfields import decode as decode_managed_fields
from setpoint.machinery.managedfields import update_managed_fields
from setpoint.machinery.names import generate_name
from setpoint.machinery.objects import Obj

# store.go maxNameGenerationCreateAttempts
MAX_NAME_GENERATION_ATTEMPTS = 8

# Metadata the server owns: clients cannot set or change it.
SYSTEM_METADATA = ("uid", "creationTimestamp", "deletionTimestamp",
                   "deletionGracePeriodSeconds", "selfLink")
_DELETION_METADATA = ("deletionTimestamp", "deletionGracePeriodSeconds")


_random_pool = bytearray()  # os.urandom bytes drawn 4 KiB at a time: a system call each
os.register_at_fork(after_in_child=_random_pool.clear)  # a child never repeats the parent's


def new_uid() -> str:
    """A random (version 4) UUID as text: ``str(uuid.uuid4())`` without building a
    ``uuid.UUID``, which cost 4 % of a create's CPU, nor a getrandom(2) per uid."""
    if not _random_pool:
        _random_pool.extend(os.urandom(4096))
    b = _random_pool[-16:]
    del _random_pool[-16:]
    b[6] = (b[6] & 0x0F) | 0x40  # version 4
    b[8] = (b[8] & 0x3F) | 0x80  # RFC 4122 variant
    h = b.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


_stamp: tuple[int, str] = (0, "")


def now_rfc3339() -> str:
    """Now as metav1.Time writes it (whole seconds, UTC); formatted once per second."""
    global _stamp
    second = int(time.time())
    if _stamp[0] != second:
        _stamp = (second, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(second)))
    return _stamp[1]


# handlers/fieldmanager/admission.go InvalidManagedFieldsAfterMutatingAdmissionWarningFormat
INVALID_MANAGED_FIELDS_AFTER_ADMISSION = (
    ".metadata.managedFields was in an invalid state after admission; this could be caused "
    "by an outdated mutating admission controller; please fix your requests: %s")

Admission = Callable[[Attributes], None]
"""A built-in admission plugin: may mutate ``attributes.obj`` or raise a StatusError."""


@dataclass
class WriteResult:
    """What a write answers: the object, its HTTP status and warnings."""

    obj: Obj
    status: int = 200
    warnings: list[str] = field(default_factory=list)
    # the JSON of ``obj`` as stored, when ``obj`` is the stored object served unchanged
    # (``StorageCodec.serves_stored``): the answer, without encoding ``obj`` a second time
    served_json: bytes | None = None


_ABSENT = object()


def _as_stored(rt: ResourceType, obj: Obj) -> None:
    """A built-in object as its protobuf round trip through storage leaves it: the empty
    slices and maps that are not omitempty, kept through admission, read back null
    (gomembers.py; k8s.io/apiserver pkg/server/storage/storage_codec.go)."""
    if not rt.is_custom and "get" in rt.verbs:
        gomembers.fill_kind(rt.group, rt.version, rt.kind, obj, protobuf=True)


class GenericStore:
    """Create, get and update over ``storage``; objects decoded, defaulted and validated by
    ``decoder``, converted between served and stored versions by ``codec``."""

    def __init__(self, storage: Store, decoder: ObjectDecoder, codec: StorageCodec) -> None:
        self.storage = storage
        self.decoder = decoder
        self.codec = codec
        # the mutating admission plugins, run before the mutating webhooks (create.go and
        # update.go admit before the store's Create and Update)
        self.admission: list[Admission] = []
        # what kube-apiserver does inside a resource's REST storage, after the mutating
        # webhooks: Service allocation (BeginCreate/BeginUpdate), the RBAC escalation check
        # (policybased storage), the CRD validation (its strategy's Validate); run once the
        # strategy prepared the object, before the validation
        self.storage_admission: list[Admission] = []
        # the strategies' Validate rules that read the requesting user from the context
        # (a ValidatingAdmissionPolicy's paramKind, a binding's paramRef: authz.go), run only
        # once the object is otherwise valid; they refuse with an Invalid
        self.user_validation: list[Admission] = []
        # the built-in validating admission plugins: store.go's createValidation and
        # updateValidation, once the strategy validated the object, before the validating
        # webhooks
        self.validating_admission: list[Admission] = []
        # the validating plugins kube-apiserver orders after the validating webhooks
        # (ResourceQuota, last of all): run just before the object is stored, nothing awaited
        # in between
        self.final_validating_admission: list[Admission] = []
        self.clock: Callable[[], str] = now_rfc3339

    # -- read ---------------------------------------------------------------------------
    def live(self, rt: ResourceType, ns: str | None, name: str) -> Obj:
        """The stored object, or the 404 a GET of it answers: the store names the resource
        of the request without its subresource (store.go, qualifiedResourceFromContext)."""
        obj = self.storage.get(rt.storage_key, ns or "", name)
        if obj is None:
            raise errors.not_found(rt.resource, name, rt.group)
        return obj

    # -- create ------------------------------------------------------------------------
    def create_steps(self, rt: ResourceType, ns: str | None, obj: Obj, opts: WriteOptions,
                     warnings: list[str], *, tracked: bool = False,
                     on_update: bool = False) -> Steps[WriteResult]:
        """A decoded new object created: system fields, defaults, checks, store. ``tracked``:
        its managed fields are already set (an apply). ``on_update``: a PUT creating the
        object (AllowCreateOnUpdate), whose resourceVersion the store parses after the
        mutating admission (store.go Update, after ``objInfo.UpdatedObject``)."""
        meta = obj["metadata"]
        for key in SYSTEM_METADATA:  # create.go: rest.WipeObjectMetaSystemFields
            meta.pop(key, None)
        if not on_update:
            meta.pop("resourceVersion", None)
        self.decoder.default(rt, obj)
        if not tracked:
            self._track_fields(rt, None, obj, opts)
        # create.go admits the object before r.Create: the mutating plugins and webhooks see
        # it as sent and defaulted (a zero creationTimestamp, no uid, generation or status
        # reset); the store fills the system fields and prepares it afterwards
        meta["creationTimestamp"] = None
        attributes = Attributes("CREATE", rt, obj, None, opts.user)
        self._admit(attributes)
        # webhooks are told the name as sent: "" for a generated one (generated after them)
        point = AdmissionPoint(MUTATING, "CREATE", rt, ns or "", meta.get("name", ""), obj,
                               None, opts.dry_run, options=opts.options_object("CreateOptions"),
                               warnings=warnings)
        obj = yield from self._mutate(point, attributes, warnings)
        meta = obj["metadata"]
        if on_update:  # (strconv's error, a 500, for a version that is not a number)
            object_resource_version(meta.pop("resourceVersion", None) or "")
        # store.go create: FillObjectMetaSystemFields and the generated name, then
        # rest.BeforeCreate (PrepareForCreate, Validate) and the validating admission
        meta["uid"] = new_uid()
        meta["creationTimestamp"] = self.clock()
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = self._generated_name(rt, ns or "", meta["generateName"],
                                                opts.dry_run)
        # rest.BeforeCreate: a namespace a mutating webhook changed is a 400, one it removed
        # is the request's again (EnsureObjectNamespaceMatchesRequestNamespace); a name it
        # changed is the name created (store.go create names the key after admission)
        ensure_namespace_matches(meta, rt.namespaced, ns)
        rt.strategy.prepare_for_create(rt, obj, warnings)
        name = meta.get("name", "")  # (a LimitRange's PrepareForCreate may have named it)
        self._admit_in_storage(Attributes("CREATE", rt, obj, None, opts.user))
        self._validate(rt, obj, None)
        for plugin in self.user_validation:
            plugin(Attributes("CREATE", rt, obj, None, opts.user))
        rt.strategy.canonicalize(rt, obj)
        rt.strategy.decoded_from_storage(rt, obj)
        # rest.BeforeCreate records the strategy's warnings once the object is valid: after
        # the mutating webhooks', before the validating webhooks'
        warnings += rt.strategy.warnings_on_create(rt, obj)
        self._validate_admission(Attributes("CREATE", rt, obj, None, opts.user, opts.dry_run,
                                            warnings=warnings, options=point.options,
                                            name=point.name))
        yield AdmissionPoint(VALIDATING, "CREATE", rt, ns or "", point.name, obj, None,
                             opts.dry_run, options=point.options, warnings=warnings)
        _as_stored(rt, obj)
        stored = yield from self.codec.to_storage_steps(rt, serialization_order(obj))
        for plugin in self.final_validating_admission:
            plugin(Attributes("CREATE", rt, obj, None, opts.user, opts.dry_run))
        existing = self.storage.get(rt.storage_key, ns or "", name)
        if existing is not None:
            # rest.CheckGeneratedNameError: with a generateName, the server's own choice
            conflict = (errors.generate_name_conflict(rt.resource, name, rt.group)
                        if meta.get("generateName")
                        else errors.already_exists(rt.resource, name, rt.group))
            if existing["metadata"].get("deletionTimestamp"):
                # store.go Create: the conflict with an object still being deleted says so
                conflict = replace(conflict, message=f"object is being deleted: {conflict.message}")
            raise conflict
        if not opts.dry_run:
            stored = self.storage.put(rt.storage_key, stored)
            if self.codec.serves_stored(rt):  # presented as stored: the stored JSON answers
                return WriteResult(stored, 201, warnings, self.storage.get_raw(
                    rt.storage_key, ns or "", name))
        return WriteResult((yield from self.codec.present_steps(rt, stored)), 201, warnings)

    def _generated_name(self, rt: ResourceType, ns: str, base: str, dry_run: bool) -> str:
        """A name from ``generateName``: as store.go createWithGenerateNameRetry
        (RetryGenerateName, GA in 1.32) tries up to 8 names before giving up on a collision;
        a dry run tries once."""
        name = generate_name(base)
        for _ in range(0 if dry_run else MAX_NAME_GENERATION_ATTEMPTS - 1):
            if self.storage.get(rt.storage_key, ns, name) is None:
                break
            name = generate_name(base)
        return name

    # -- update ------------------------------------------------------------------------
    def update_steps(self, rt: ResourceType, obj: Obj, old: Obj, opts: WriteOptions,
                     subresource: str, *, precondition_rv: str | None,
                     tracked: bool = False,
                     uid_precondition: bool = True) -> Steps[WriteResult]:
        """``obj``, the complete new object (decoded, or built by a patch), replaces ``old``,
        the stored one, unless ``precondition_rv`` is no longer ``old``'s. ``tracked``: its
        managed fields are already set (an apply, a scale). ``uid_precondition``: a uid in
        ``obj`` is a storage precondition (the body of a PUT, rest.DefaultUpdatedObjectInfo);
        a patch has none, so a uid it changes meets the immutable-field validation."""
        warnings: list[str] = []  # recorded from the mutating admission on
        stored_old = old
        [old] = yield from self.codec.present_all_steps(rt, [old], defaults=False)
        meta = obj["metadata"]
        old_meta = old["metadata"]
        name = old_meta["name"]
        # the storage checks the body's uid (a precondition) before the update function
        # compares resourceVersions (etcd3 store.go GuaranteedUpdate, then store.go Update)
        changed_uid = meta.get("uid") if meta.get("uid") != old_meta.get("uid") else None
        if changed_uid and uid_precondition:
            raise storage_precondition_conflict(
                rt, old_meta.get("namespace", ""), name,
                f"Precondition failed: UID in precondition: {meta['uid']}, UID in object meta: "
                f"{old_meta.get('uid')}")
        self.decoder.default(rt, obj)
        if not tracked:  # update.go's first transformer: the field manager, then admission
            self._track_fields(rt, old, obj, opts, subresource)
        # the mutating plugins and webhooks see the object as sent, defaulted, with the
        # resourceVersion the request sent (update.go runs them in objInfo.UpdatedObject,
        # before the store reads the version and rest.BeforeUpdate prepares the object)
        _set_resource_version(meta, precondition_rv)
        attributes = Attributes("UPDATE", rt, obj, old, opts.user)
        self._admit(attributes)
        point = AdmissionPoint(MUTATING, "UPDATE", rt, old_meta.get("namespace", ""), name, obj,
                               old, opts.dry_run, subresource,
                               opts.options_object("UpdateOptions"), warnings=warnings)
        obj = yield from self._mutate(point, attributes, warnings)
        meta = obj["metadata"]  # defaulting or a webhook may have replaced it
        # store.go Update, after UpdatedObject: the mutated object's resourceVersion parsed
        # (strconv's bare error), then required or compared with the stored one
        sent = meta.get("resourceVersion")
        wanted = require_resource_version(rt, name, sent if isinstance(sent, str) else "")
        if wanted and wanted != object_resource_version(old_meta.get("resourceVersion", "")):
            raise errors.stale_conflict(rt.resource, name, rt.group)
        # rest.BeforeUpdate: the namespace checked first (as on create: a mutating webhook's
        # change is a 400), the system fields and generation kept from the stored object,
        # then the strategy's PrepareForUpdate (what the endpoint may not change reset); a
        # name a webhook changed meets the immutable-field validation
        ensure_namespace_matches(meta, rt.namespaced, point.namespace or None)
        changed_uid = meta.get("uid") if meta.get("uid") != old_meta.get("uid") else None
        sent_deletion = {k: meta[k] for k in _DELETION_METADATA if meta.get(k) is not None}
        for key in SYSTEM_METADATA:
            if key in old_meta:
                meta[key] = old_meta[key]
            else:
                meta.pop(key, None)
        # an update can never remove or change a deletionTimestamp nor remove a grace period
        # (rest/update.go BeforeUpdate): one set where there was none, or another grace
        # period, stays for the immutable-field validation to refuse
        if "deletionTimestamp" in sent_deletion and not old_meta.get("deletionTimestamp"):
            meta["deletionTimestamp"] = sent_deletion["deletionTimestamp"]
        if "deletionGracePeriodSeconds" in sent_deletion:
            meta["deletionGracePeriodSeconds"] = sent_deletion["deletionGracePeriodSeconds"]
        if changed_uid:
            meta["uid"] = changed_uid  # for validation to refuse
        meta["resourceVersion"] = old_meta.get("resourceVersion")
        if "generation" in old_meta:
            meta["generation"] = old_meta["generation"]
        else:
            meta.pop("generation", None)
        _keep_reset_fields(rt, obj, old, subresource)
        if subresource == "status":
            tracked_fields = meta.get("managedFields")
            obj = rt.strategy.prepare_for_status_update(rt, obj, old)
            if tracked_fields:
                obj["metadata"]["managedFields"] = tracked_fields
            else:
                obj["metadata"].pop("managedFields", None)
        elif subresource == "ephemeralcontainers":
            obj = rt.strategy.prepare_for_ephemeral_containers_update(rt, obj, old)
        elif subresource == "resize":
            obj = rt.strategy.prepare_for_resize_update(rt, obj, old)
        elif subresource == "approval":
            populate_condition_timestamps(obj, old, self.clock())
        elif subresource != "finalize":
            # (namespaceFinalizeStrategy resets only the status, kept above: spec and
            # metadata are the new object's)
            rt.strategy.prepare_for_update(rt, obj, old)
        self._admit_in_storage(Attributes("UPDATE", rt, obj, old, opts.user))
        meta = obj["metadata"]
        self._validate(rt, obj, old, subresource, warnings)
        for plugin in self.user_validation:
            plugin(Attributes("UPDATE", rt, obj, old, opts.user, subresource=subresource))
        rt.strategy.canonicalize(rt, obj)
        rt.strategy.decoded_from_storage(rt, obj)
        if not subresource:  # (rest.BeforeUpdate, as BeforeCreate above)
            warnings += rt.strategy.warnings_on_update(rt, obj, old)
        self._validate_admission(Attributes("UPDATE", rt, obj, old, opts.user, opts.dry_run,
                                            subresource, warnings, point.options))
        yield AdmissionPoint(VALIDATING, "UPDATE", rt, point.namespace, name, obj, old,
                             opts.dry_run, subresource, point.options, warnings=warnings)
        current_rv = self.storage.resource_version(rt.storage_key, point.namespace, name)
        if current_rv is None or current_rv != old_meta.get("resourceVersion"):
            raise Changed  # written (or deleted) by another request while webhooks answered
        for plugin in self.final_validating_admission:
            plugin(Attributes("UPDATE", rt, obj, old, opts.user, opts.dry_run, subresource))
        _as_stored(rt, obj)
        obj = serialization_order(obj)
        if obj == old:  # nothing changes (the resourceVersion aside)
            if self.codec.serves_stored(rt):  # the stored JSON answers, as on create
                return WriteResult(stored_old, warnings=warnings,
                                   served_json=self.storage.get_raw(
                                       rt.storage_key, point.namespace, name))
            return WriteResult((yield from self.codec.present_steps(rt, stored_old)),
                               warnings=warnings)
        stored = yield from self.codec.to_storage_steps(rt, obj)
        if rt.conversion_webhook is not None and self.storage.resource_version(
                rt.storage_key, point.namespace, name) != current_rv:
            raise Changed  # written while it converted (every write takes a new version)
        if opts.dry_run:
            return WriteResult((yield from self.codec.present_steps(rt, stored)),
                               warnings=warnings)
        if old_meta.get("deletionTimestamp") and not meta.get("finalizers") \
                and not old_meta.get("deletionGracePeriodSeconds") \
                and not _pending_spec_finalizers(rt, obj):
            # (shouldDeleteDuringUpdate: a pod in its grace period is kept until deleted)
            self.storage.discard(rt.storage_key, old_meta.get("namespace", ""), name)
            return WriteResult((yield from self.codec.present_steps(rt, stored)),
                               warnings=warnings)
        stored = self.storage.put(rt.storage_key, stored)
        if self.codec.serves_stored(rt):  # presented as stored: the stored JSON answers
            return WriteResult(stored, warnings=warnings, served_json=self.storage.get_raw(
                rt.storage_key, point.namespace, name))
        return WriteResult((yield from self.codec.present_steps(rt, stored)),
                               warnings=warnings)

    # -- the steps of a write ----------------------------------------------------------
    def _track_fields(self, rt: ResourceType, old: Obj | None, new: Obj, opts: WriteOptions,
                      subresource: str = "") -> None:
        # (Go's field manager sees the object through ToUnstructured, whose omitempty leaves
        # out an empty list the decoding kept for validation)
        seen = kept_empty_slices.semantic(rt.group, rt.kind, new)
        update_managed_fields(
            self.decoder.schema(rt), old, seen, manager=opts.field_manager,
            api_version=rt.api_version, now=self.clock(), subresource=subresource,
            reset_fields=reset_fields(rt, subresource))
        new["metadata"] = seen["metadata"]

    def _admit(self, attributes: Attributes) -> None:
        for plugin in self.admission:
            plugin(attributes)

    def _admit_again(self, point: AdmissionPoint, attributes: Attributes) -> None:
        """The built-in mutating plugins on what the webhooks made of the object. Go's
        plugins read the request's namespace (``Attributes.GetNamespace``), ours the
        object's: a namespace a webhook removed or changed is the request's meanwhile, and
        the webhook's again afterwards (rest.BeforeCreate/BeforeUpdate judge it)."""
        meta = attributes.obj.get("metadata")
        if not isinstance(meta, dict) or not point.namespace:
            self._admit(attributes)
            return
        given = meta.get("namespace", _ABSENT)
        meta["namespace"] = point.namespace
        try:
            self._admit(attributes)
        finally:
            if given is _ABSENT:
                meta.pop("namespace", None)
            else:
                meta["namespace"] = given

    def _admit_in_storage(self, attributes: Attributes) -> None:
        for plugin in self.storage_admission:
            plugin(attributes)

    def _validate_admission(self, attributes: Attributes) -> None:
        for plugin in self.validating_admission:
            plugin(attributes)

    def _mutate(self, point: AdmissionPoint, attributes: Attributes,
                warnings: list[str]) -> Steps[Obj]:
        """The object after the mutating webhooks: defaulted again when one changed it, as
        the apiserver decodes a patched object with defaults, and then the mutating chain
        run once more (reinvocation.go: the built-in plugins, ``attributes``' admission,
        then the webhooks to reinvoke); managed fields a webhook made undecodable set back
        to the ones tracked before admission, with a warning
        (handlers/fieldmanager/admission.go, managedFieldsValidatingAdmissionController)."""
        assert point.obj is not None
        point.reinvocation = reinvocation = Reinvocation()
        mutated: Obj | None = yield point
        if mutated is None:
            return point.obj
        self.decoder.default(point.rt, mutated)
        if self.admission:
            output = copy.deepcopy(mutated)
            reinvocation.is_reinvoke = True
            self._admit_again(point, attributes._replace(obj=mutated))
            reinvocation.changed_since_webhooks = mutated != output
            again: Obj | None = yield replace(point, obj=mutated)
            if again is not None:
                self.decoder.default(point.rt, again)
                mutated = again
        meta = mutated.get("metadata")
        if isinstance(meta, dict) and "managedFields" in meta:
            try:
                decode_managed_fields(meta["managedFields"])
            except ValueError as exc:  # (point.obj is as tracked: webhooks patch a copy)
                before = point.obj["metadata"].get("managedFields")
                if before is None:
                    del meta["managedFields"]
                else:
                    meta["managedFields"] = before
                warnings.append(INVALID_MANAGED_FIELDS_AFTER_ADMISSION % exc)
        return mutated

    def _validate(self, rt: ResourceType, obj: Obj, old: Obj | None,
                  subresource: str = "", warnings: list[str] | None = None) -> None:
        if old is None:
            causes: list[Cause] = rt.strategy.validate(rt, obj)
        elif subresource == "status" and not rt.is_custom:
            causes = rt.strategy.validate_status_update(rt, obj, old)
        elif subresource == "ephemeralcontainers":
            causes = rt.strategy.validate_ephemeral_containers_update(rt, obj, old)
        elif subresource == "resize":
            causes = rt.strategy.validate_resize_update(rt, obj, old)
        elif subresource == "approval":
            causes = rt.strategy.validate_approval_update(rt, obj, old)
        elif subresource == "finalize":
            causes = rt.strategy.validate_finalize_update(rt, obj, old)
        else:
            causes = rt.strategy.validate_update(rt, obj, old)
        causes = causes + self.decoder.validate(rt, obj, old, warnings, causes)
        if causes:
            # events.k8s.io Events are validated as the internal core Event: no group
            group = "" if rt.group == "events.k8s.io" else rt.group
            err = errors.invalid(rt.kind, obj["metadata"].get("name", ""), causes, group)
            err.warnings = list(warnings or ())  # (a custom resource's ratcheted rules)
            raise err


def _set_resource_version(meta: Obj, rv: str | None) -> None:
    if rv:
        meta["resourceVersion"] = rv
    else:
        meta.pop("resourceVersion", None)


def require_resource_version(rt: ResourceType, name: str, rv: str | None) -> int:
    """store.go Update: the object's resourceVersion parsed (``ObjectResourceVersion``:
    strconv's error is a 500); a zero one, absent or "0", is written over the stored
    object only when the strategy allows unconditional updates; otherwise the Invalid names
    the resource (its GroupKind carries the resource, "see #18526") and the zero version."""
    wanted = object_resource_version(rv or "")
    if wanted or rt.strategy.allows_unconditional_update(rt):
        return wanted
    raise errors.invalid(rt.resource, name, [fe.invalid(
        "metadata.resourceVersion", fe.GoValue("0x0"), "must be specified for an update")],
        rt.group)


def etcd_key(rt: ResourceType, ns: str, name: str) -> str:
    """The object's key in etcd: /registry, the resource prefix (a CR's is its group and
    plural; a few built-ins keep historical prefixes), the namespace, the name."""
    prefix = _RESOURCE_PREFIXES.get((rt.group, rt.resource), rt.resource)
    if rt.is_custom:
        prefix = f"{rt.group}/{rt.resource}"
    return f"/registry/{prefix}/{ns}/{name}" if ns else f"/registry/{prefix}/{name}"


# pkg/kubeapiserver/default_storage_factory_builder.go (SpecialDefaultResourcePrefixes); the
# apiextensions server stores under group/resource (SimpleRestOptionsFactory)
_RESOURCE_PREFIXES = {
    ("", "replicationcontrollers"): "controllers", ("", "endpoints"): "services/endpoints",
    ("", "nodes"): "minions", ("", "services"): "services/specs",
    ("networking.k8s.io", "ingresses"): "ingress",
    ("apiextensions.k8s.io", "customresourcedefinitions"):
        "apiextensions.k8s.io/customresourcedefinitions",
}


def storage_precondition_conflict(rt: ResourceType, ns: str, name: str,
                                  detail: str) -> errors.StatusError:
    """A failed storage precondition (storage.NewInvalidObjError) as
    ``storeerr.InterpretUpdateError`` reports it: a 409 quoting the StorageError."""
    return errors.conflict(
        rt.resource, name,
        f"StorageError: invalid object, Code: 4, Key: {etcd_key(rt, ns, name)}, "
        f"ResourceVersion: 0, AdditionalErrorMsg: {detail}", rt.group)


def reset_fields(rt: ResourceType, subresource: str) -> list[str]:
    """The fields an endpoint's strategy resets, which no writer through it owns."""
    if not rt.has_status:
        return []
    if subresource == "approval":  # certificates' approvalStrategy.GetResetFields
        return ["spec", "status.certificate"]
    if subresource != "status":
        return ["status"]
    # a built-in status strategy's GetResetFields also names the metadata it takes from the
    # stored object (apps deployment: labels; core pod: deletionTimestamp, ownerReferences)
    kept = () if rt.is_custom else STATUS_RESETS_METADATA.get((rt.group, rt.kind), ())
    return ["spec", *(f"metadata.{key}" for key in kept)]


def _keep_reset_fields(rt: ResourceType, obj: Obj, old: Obj, subresource: str) -> None:
    """Fields this endpoint may not change take their old values before tracking."""
    if not rt.has_status:
        return
    if subresource == "status":
        for k in list(obj):
            if k not in ("metadata", "status", "apiVersion", "kind"):
                del obj[k]
        for k, v in old.items():
            if k not in ("metadata", "status"):
                obj[k] = v
    elif subresource == "approval":
        keep_approval_conditions(obj, old)
    elif "status" in old:
        obj["status"] = old["status"]
    else:
        obj.pop("status", None)


def _pending_spec_finalizers(rt: ResourceType, obj: Obj) -> bool:
    return rt.kind == "Namespace" and not rt.group and bool(
        (obj.get("spec") or {}).get("finalizers"))


_TOP_ORDER = ("apiVersion", "kind", "metadata")
_META_ORDER = ("name", "generateName", "namespace", "uid", "resourceVersion", "generation",
               "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
               "annotations", "ownerReferences", "finalizers", "managedFields")


_meta_orders: dict[tuple[str, ...], tuple[str, ...]] = {}  # metadata's keys as given -> ordered


def serialization_order(obj: Obj) -> Obj:
    """Fields in the order Kubernetes serializes them (kind, apiVersion, metadata first)."""
    meta = obj.get("metadata") or {}
    given = tuple(meta)
    order = _meta_orders.get(given)
    if order is None:  # (objects of a kind come with a few sets of metadata keys)
        first = [k for k in _META_ORDER if k in meta]
        order = (*first, *[k for k in given if k not in first])
        if len(_meta_orders) >= 1024:
            _meta_orders.clear()
        _meta_orders[given] = order
    ordered_meta = {k: meta[k] for k in order}
    out: Obj = {"kind": obj.get("kind"), "apiVersion": obj.get("apiVersion"),
                "metadata": ordered_meta}
    for k, v in obj.items():
        if k not in _TOP_ORDER:
            out[k] = v
    return out

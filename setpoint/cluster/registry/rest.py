"""Generic REST storage: the create, update, patch, delete, get and list of every resource.

One implementation serves all kinds; what differs per kind is in the ``Strategy`` and in
the tables it consults. The steps run in the apiserver's order: decode and default, track
managed fields, prepare (generation, status), admit, validate, store.
"""

from __future__ import annotations

import builtins
import copy
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

from setpoint.cluster.registry import Registry
from setpoint.cluster.registry.admissionpoints import (
    MUTATING,
    VALIDATING,
    AdmissionPoint,
    Attributes,
    Changed,
    ConversionPoint,
    Steps,
    run_sync,
)
from setpoint.cluster.registry.conversion import CONVERSIONS
from setpoint.cluster.registry.options import DeleteOptions, ListOptions, WriteOptions
from setpoint.cluster.registry.types import ResourceType
from setpoint.cluster.serializer.decode import Decoded, check_object_meta, decode_builtin
from setpoint.cluster.storage import Store
from setpoint.machinery import errors
from setpoint.machinery.errors import Cause, StatusError
from setpoint.machinery.fielderrors import unmarshal_kind
from setpoint.machinery.objects import Obj
from setpoint.machinery.schema import Schema

# The built-in kinds whose PUT may create the object (AllowCreateOnUpdate).
CREATE_ON_UPDATE = {("", "Endpoints"), ("", "Event"), ("events.k8s.io", "Event"),
                    ("", "Service"), ("apps", "ControllerRevision")}

# Metadata the server owns: clients cannot set or change it.
SYSTEM_METADATA = ("uid", "creationTimestamp", "deletionTimestamp",
                   "deletionGracePeriodSeconds", "selfLink")

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH, APPLY_PATCH)


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class CustomSchema(Protocol):
    """What the storage needs of a custom resource version's schema."""

    has_defaults: bool

    @property
    def schema(self) -> Schema: ...

    def validate(self, obj: Obj, old: Obj | None = None) -> list[Cause]: ...
    def prune_and_report(self, obj: Obj) -> list[str]: ...
    def unknown_fields(self, obj: Obj) -> list[str]: ...
    def default(self, obj: Obj) -> Obj: ...


Admission = Callable[[Attributes], None]
"""A built-in admission plugin: may mutate ``attributes.obj`` or raise a StatusError."""


@dataclass
class WriteResult:
    obj: Obj
    status: int = 200
    warnings: list[str] = field(default_factory=list)


class REST:
    """The storage operations, independent of HTTP."""

    def __init__(self, store: Store, registry: Registry,
                 custom_schema: Callable[[ResourceType], CustomSchema | None]) -> None:
        self.store = store
        self.registry = registry
        self.custom_schema = custom_schema
        self.admission: list[Admission] = []
        # checks a DELETE passes before the object is read (namespace, resource, name)
        self.delete_admission: list[Callable[[ResourceType, str | None, str], None]] = []
        self.clock: Callable[[], str] = now_rfc3339

    # -- reads -------------------------------------------------------------------------
    def get(self, rt: ResourceType, ns: str | None, name: str, subresource: str = "") -> Obj:
        return run_sync(self.get_steps(rt, ns, name, subresource))

    def get_steps(self, rt: ResourceType, ns: str | None, name: str,
                  subresource: str = "") -> Steps[Obj]:
        obj = self._live(rt, ns, name, subresource)
        if subresource == "scale":
            return self.scale_of(rt, obj)
        return (yield from self.present_steps(rt, obj))

    def _live(self, rt: ResourceType, ns: str | None, name: str, subresource: str = "") -> Obj:
        obj = self.store.get(rt.storage_key, ns or "", name)
        if obj is None:
            resource = f"{rt.resource}/{subresource}" if subresource else rt.resource
            raise errors.not_found(resource, name, rt.group)
        return obj

    def from_storage(self, rt: ResourceType, stored: Obj) -> Obj:
        """A stored object in the shape ``rt`` serves (only shared storage differs)."""
        conversion = CONVERSIONS.get((rt.group, rt.version, rt.kind))
        if conversion is not None:
            return conversion[1](stored)
        if rt.is_custom and stored.get("apiVersion") != rt.api_version:
            if rt.conversion_webhook is not None:
                raise errors.internal(f"{rt.resource}.{rt.group} at {rt.version} needs its "
                                      "conversion webhook here")
            return {**stored, "apiVersion": rt.api_version}
        return stored

    def to_storage(self, rt: ResourceType, obj: Obj) -> Obj:
        conversion = CONVERSIONS.get((rt.group, rt.version, rt.kind))
        if conversion is not None:
            return conversion[0](obj)
        if rt.is_custom and not rt.storage_version:
            # conversion strategy None: only the apiVersion changes between versions
            return {**obj, "apiVersion": f"{rt.group}/{storage_version_of(rt)}"}
        return obj

    def present(self, rt: ResourceType, obj: Obj) -> Obj:
        """A stored object as served at ``rt``'s version (conversion, CR version, defaults)."""
        return self.with_defaults(rt, self.from_storage(rt, obj))

    def present_steps(self, rt: ResourceType, stored: Obj) -> Steps[Obj]:
        """``present``, through the CRD's conversion webhook when it has one."""
        [out] = yield from self.present_all_steps(rt, [stored])
        return out

    def present_all_steps(self, rt: ResourceType, stored: list[Obj], *,
                          defaults: bool = True) -> Steps[list[Obj]]:
        """Stored objects as served at ``rt``'s version, converted together (and defaulted,
        unless ``defaults`` is False: ``from_storage``)."""
        if rt.conversion_webhook is None or all(
                o.get("apiVersion") == rt.api_version for o in stored):
            view = self.present if defaults else self.from_storage
            return [view(rt, o) for o in stored]
        converted = yield ConversionPoint(rt, stored, rt.api_version)
        return [self.with_defaults(rt, o) for o in converted] if defaults else converted

    def to_storage_steps(self, rt: ResourceType, obj: Obj) -> Steps[Obj]:
        """``to_storage``, through the CRD's conversion webhook when it has one."""
        if rt.conversion_webhook is None:
            return self.to_storage(rt, obj)
        target = f"{rt.group}/{storage_version_of(rt)}"
        if obj.get("apiVersion") == target:
            return obj
        converted: Obj
        [converted] = yield ConversionPoint(rt, [obj], target)
        return converted

    def with_defaults(self, rt: ResourceType, out: Obj) -> Obj:
        """A served custom resource with its schema's defaults applied (on read)."""
        if not rt.is_custom:
            return out
        cs = self.custom_schema(rt)
        if cs is not None and cs.has_defaults:
            out = copy.deepcopy(out)
            cs.default(out)
        return out

    def list(self, rt: ResourceType, ns: str | None, opts: ListOptions) -> Obj:
        return run_sync(self.list_steps(rt, ns, opts))

    def list_steps(self, rt: ResourceType, ns: str | None, opts: ListOptions) -> Steps[Obj]:
        from setpoint.cluster.registry.listing import list_steps

        return list_steps(self, rt, ns, opts)

    # -- create ------------------------------------------------------------------------
    def create(self, rt: ResourceType, ns: str | None, body: Decoded,
               opts: WriteOptions) -> WriteResult:
        return run_sync(self.create_steps(rt, ns, body, opts))

    def create_steps(self, rt: ResourceType, ns: str | None, body: Decoded,
                     opts: WriteOptions) -> Steps[WriteResult]:
        """``create``, stopping at its admission points (see ``admission.points``)."""
        obj, warnings = self._decode(rt, body, opts)
        meta = obj["metadata"]
        if rt.namespaced:
            if meta.get("namespace") and meta["namespace"] != ns:
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent "
                    "on the request")
            meta["namespace"] = ns
        else:
            meta.pop("namespace", None)
        if meta.get("resourceVersion"):
            raise errors.bad_request("resourceVersion should not be set on objects to be created")
        return (yield from self.finish_create_steps(rt, ns, obj, opts, warnings))

    def finish_create(self, rt: ResourceType, ns: str | None, obj: Obj, opts: WriteOptions,
                      warnings: builtins.list[str], *, tracked: bool = False) -> WriteResult:
        return run_sync(self.finish_create_steps(rt, ns, obj, opts, warnings, tracked=tracked))

    def finish_create_steps(self, rt: ResourceType, ns: str | None, obj: Obj,
                            opts: WriteOptions, warnings: builtins.list[str], *,
                            tracked: bool = False) -> Steps[WriteResult]:
        """Everything after decoding a new object: system fields, defaults, checks, store."""
        meta = obj["metadata"]
        for key in SYSTEM_METADATA:
            meta.pop(key, None)
        meta.pop("resourceVersion", None)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = self.clock()
        self._default(rt, obj)
        if not tracked:
            self._track_fields(rt, None, obj, opts)
        rt.strategy.prepare_for_create(rt, obj)
        self._admit(Attributes("CREATE", rt, obj, None, opts.user))
        # webhooks are told the name as sent: "" for a generated one (generated after them)
        point = AdmissionPoint(MUTATING, "CREATE", rt, ns or "", meta.get("name", ""), obj,
                               None, opts.dry_run, options=opts.options_object("CreateOptions"))
        obj = yield from self._mutate(point)
        meta = obj["metadata"]
        if not meta.get("name") and meta.get("generateName"):
            from setpoint.machinery.names import generate_name

            meta["name"] = generate_name(meta["generateName"])
        name = meta.get("name", "")
        self._validate(rt, obj, None)
        yield AdmissionPoint(VALIDATING, "CREATE", rt, ns or "", point.name, obj, None,
                             opts.dry_run, options=point.options)
        stored = yield from self.to_storage_steps(rt, _ordered(obj))
        if self.store.get(rt.storage_key, ns or "", name) is not None:
            raise errors.already_exists(rt.resource, name, rt.group)
        if not opts.dry_run:
            stored = self.store.put(rt.storage_key, stored)
        return WriteResult((yield from self.present_steps(rt, stored)), 201, warnings)

    # -- update ------------------------------------------------------------------------
    def update(self, rt: ResourceType, ns: str | None, name: str, body: Decoded,
               opts: WriteOptions, subresource: str = "") -> WriteResult:
        return run_sync(self.update_steps(rt, ns, name, body, opts, subresource))

    def update_steps(self, rt: ResourceType, ns: str | None, name: str, body: Decoded,
                     opts: WriteOptions, subresource: str = "") -> Steps[WriteResult]:
        """``update``, stopping at its admission points."""
        if subresource == "scale":
            from setpoint.cluster.registry.scale import update_scale

            return (yield from update_scale(self, rt, ns, name, body.obj, opts))
        obj, warnings = self._decode(rt, body, opts)
        meta = obj["metadata"]
        if meta.get("name") != name:
            raise errors.bad_request(
                f"the name of the object ({meta.get('name')}) does not match the name on the "
                f"URL ({name})")
        if rt.namespaced:
            if meta.get("namespace") and meta["namespace"] != ns:
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent "
                    "on the request")
            meta["namespace"] = ns
        old = self.store.get(rt.storage_key, ns or "", name)
        if old is None:
            if (rt.group, rt.kind) in CREATE_ON_UPDATE and not subresource:
                meta.pop("resourceVersion", None)
                return (yield from self.create_steps(rt, ns, Decoded(obj), opts))
            resource = f"{rt.resource}/{subresource}" if subresource else rt.resource
            raise errors.not_found(resource, name, rt.group)
        rv = meta.get("resourceVersion")
        if not rv and rt.is_custom:
            raise errors.invalid(rt.kind, name, [Cause(
                "FieldValueInvalid", "Invalid value: 0x0: must be specified for an update",
                "metadata.resourceVersion")], rt.group)
        result = yield from self.update_stored_steps(rt, obj, old, opts, subresource,
                                                     precondition_rv=rv)
        result.warnings[:0] = warnings
        return result

    def _update(self, rt: ResourceType, obj: Obj, old: Obj, opts: WriteOptions,
                subresource: str, *, precondition_rv: str | None,
                tracked: bool = False) -> WriteResult:
        return run_sync(self.update_stored_steps(rt, obj, old, opts, subresource,
                                                 precondition_rv=precondition_rv,
                                                 tracked=tracked))

    def update_stored_steps(self, rt: ResourceType, obj: Obj, old: Obj, opts: WriteOptions,
                            subresource: str, *, precondition_rv: str | None,
                            tracked: bool = False) -> Steps[WriteResult]:
        """Everything after decoding: ``obj`` is the complete new object, ``old`` the stored."""
        stored_old = old
        [old] = yield from self.present_all_steps(rt, [old], defaults=False)
        meta = obj["metadata"]
        old_meta = old["metadata"]
        name = old_meta["name"]
        if precondition_rv and precondition_rv != old_meta.get("resourceVersion"):
            raise errors.stale_conflict(rt.resource, name, rt.group)
        if meta.get("uid") and meta["uid"] != old_meta.get("uid"):
            raise errors.conflict(
                rt.resource, name,
                f"Precondition failed: UID in precondition: {meta['uid']}, UID in object meta: "
                f"{old_meta.get('uid')}", rt.group)
        for key in SYSTEM_METADATA:
            if key in old_meta:
                meta[key] = old_meta[key]
            else:
                meta.pop(key, None)
        meta["resourceVersion"] = old_meta.get("resourceVersion")
        if "generation" in old_meta:
            meta["generation"] = old_meta["generation"]
        self._default(rt, obj)
        self._reset_fields(rt, obj, old, subresource)
        if not tracked:
            self._track_fields(rt, old, obj, opts, subresource)
        if subresource == "status":
            tracked_fields = obj["metadata"].get("managedFields")
            obj = rt.strategy.prepare_for_status_update(rt, obj, old)
            if tracked_fields:
                obj["metadata"]["managedFields"] = tracked_fields
            else:
                obj["metadata"].pop("managedFields", None)
        else:
            rt.strategy.prepare_for_update(rt, obj, old)
        self._admit(Attributes("UPDATE", rt, obj, old, opts.user))
        point = AdmissionPoint(MUTATING, "UPDATE", rt, old_meta.get("namespace", ""), name, obj,
                               old, opts.dry_run, subresource,
                               opts.options_object("UpdateOptions"))
        obj = yield from self._mutate(point)
        meta = obj["metadata"]  # defaulting, the strategy or a webhook may have replaced it
        self._validate(rt, obj, old)
        yield AdmissionPoint(VALIDATING, "UPDATE", rt, point.namespace, name, obj, old,
                             opts.dry_run, subresource, point.options)
        current = self.store.get(rt.storage_key, point.namespace, name)
        if current is None or current["metadata"].get("resourceVersion") != \
                old_meta.get("resourceVersion"):
            raise Changed  # written (or deleted) by another request while webhooks answered
        obj = _ordered(obj)
        if _same(obj, old):
            return WriteResult((yield from self.present_steps(rt, stored_old)))
        stored = yield from self.to_storage_steps(rt, obj)
        if rt.conversion_webhook is not None and self.store.get(
                rt.storage_key, point.namespace, name) is not current:
            raise Changed  # written while it converted
        if opts.dry_run:
            return WriteResult((yield from self.present_steps(rt, stored)))
        if old_meta.get("deletionTimestamp") and not meta.get("finalizers") \
                and not old_meta.get("deletionGracePeriodSeconds") \
                and not _pending_spec_finalizers(rt, obj):
            # (shouldDeleteDuringUpdate: a pod in its grace period is kept until deleted)
            self.store.delete(rt.storage_key, old_meta.get("namespace", ""), name)
            return WriteResult((yield from self.present_steps(rt, stored)))
        stored = self.store.put(rt.storage_key, stored)
        return WriteResult((yield from self.present_steps(rt, stored)))

    def _reset_fields(self, rt: ResourceType, obj: Obj, old: Obj, subresource: str) -> None:
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
        elif "status" in old:
            obj["status"] = old["status"]
        else:
            obj.pop("status", None)

    # -- patch -------------------------------------------------------------------------
    def patch(self, rt: ResourceType, ns: str | None, name: str, raw: bytes,
              content_type: str, opts: WriteOptions, subresource: str = "") -> WriteResult:
        return run_sync(self.patch_steps(rt, ns, name, raw, content_type, opts, subresource))

    def patch_steps(self, rt: ResourceType, ns: str | None, name: str, raw: bytes,
                    content_type: str, opts: WriteOptions,
                    subresource: str = "") -> Steps[WriteResult]:
        from setpoint.cluster.registry.patching import patch_steps

        return patch_steps(self, rt, ns, name, raw, content_type, opts, subresource)

    # -- delete ------------------------------------------------------------------------
    def delete(self, rt: ResourceType, ns: str | None, name: str,
               opts: DeleteOptions) -> tuple[int, Obj]:
        return run_sync(self.delete_steps(rt, ns, name, opts))

    def delete_steps(self, rt: ResourceType, ns: str | None, name: str,
                     opts: DeleteOptions) -> Steps[tuple[int, Obj]]:
        from setpoint.cluster.registry.deletion import delete_steps

        return delete_steps(self, rt, ns, name, opts)

    def delete_collection(self, rt: ResourceType, ns: str | None, lopts: ListOptions,
                          dopts: DeleteOptions) -> Obj:
        return run_sync(self.delete_collection_steps(rt, ns, lopts, dopts))

    def delete_collection_steps(self, rt: ResourceType, ns: str | None, lopts: ListOptions,
                                dopts: DeleteOptions) -> Steps[Obj]:
        """Each listed object deleted as by its own DELETE (admission points included)."""
        listed = self.list(rt, ns, lopts)
        deleted = []
        for item in listed["items"]:
            meta = item["metadata"]
            try:
                _, out = yield from self.delete_steps(rt, meta.get("namespace"), meta["name"],
                                                      dopts)
            except StatusError as exc:
                if exc.code == 404:
                    continue
                raise
            if out.get("kind") != "Status":
                deleted.append(out)
            else:
                deleted.append(item)
        listed["items"] = deleted
        return listed

    # -- scale -------------------------------------------------------------------------
    def scale_of(self, rt: ResourceType, obj: Obj) -> Obj:
        from setpoint.cluster.registry.scale import scale_of

        return scale_of(rt, obj)

    # -- steps -------------------------------------------------------------------------
    def _decode(self, rt: ResourceType, body: Decoded, opts: WriteOptions) -> tuple[Obj,
                                                                                   builtins.list[str]]:
        """Kind checks, typed decoding, unknown and duplicate fields, by fieldValidation."""
        obj = body.obj
        if not isinstance(obj, dict):
            raise errors.bad_request(
                f"the object provided is unrecognized (must be of type {rt.kind}): couldn't get "
                "version/kind; json parse error: cannot unmarshal into Go value of type "
                "struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string "
                "\"json:\\\"kind,omitempty\\\"\" }")
        self._check_kind(rt, obj)
        obj = {**obj, "apiVersion": rt.api_version, "kind": rt.kind}
        meta = obj.get("metadata")
        if meta is None:
            obj["metadata"] = {}
        elif not isinstance(meta, dict):
            raise errors.bad_request(
                f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: '
                f"json: cannot unmarshal {unmarshal_kind(meta)} into Go struct field "
                f"{rt.kind}.metadata of type v1.ObjectMeta")
        else:
            obj["metadata"] = dict(meta)
        unknown: builtins.list[str]
        if rt.is_custom:
            check_object_meta(obj["metadata"], rt.kind, rt.version)
            cs = self.custom_schema(rt)
            unknown = []
            if cs is not None:
                # pruning works in place; a patched object shares parts with the stored one
                obj = copy.deepcopy(obj)
                unknown = cs.prune_and_report(obj)
        else:
            schema = self.registry.schema(rt)
            unknown = []
            if schema is not None:
                obj, unknown = decode_builtin(obj, schema, rt.kind)
            obj.setdefault("metadata", {})
        return obj, self._field_validation(rt, obj, body.duplicates, unknown, opts)

    def _field_validation(self, rt: ResourceType, obj: Obj, duplicates: builtins.list[str],
                          unknown: builtins.list[str], opts: WriteOptions) -> builtins.list[str]:
        problems = [f'duplicate field "{d}"' for d in duplicates]
        problems += [f'unknown field "{u}"' for u in unknown]
        if not problems or opts.field_validation == "Ignore":
            return []
        if opts.field_validation == "Strict":
            raise errors.bad_request(
                f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: '
                f"strict decoding error: {', '.join(problems)}")
        return problems

    def _check_kind(self, rt: ResourceType, obj: Obj) -> None:
        kind = obj.get("kind")
        api_version = obj.get("apiVersion")
        if rt.is_custom and not api_version:
            raise errors.bad_request(
                f"the API version in the data () does not match the expected API version "
                f"({rt.api_version})")
        if (kind and kind != rt.kind) or (api_version and api_version != rt.api_version):
            got_version = str(api_version or rt.api_version).rsplit("/", 1)[-1]
            if rt.is_custom:
                raise errors.bad_request(
                    f"the API version in the data ({api_version}) does not match the expected "
                    f"API version ({rt.api_version})") if kind == rt.kind else errors.invalid(
                    str(kind), obj.get("metadata", {}).get("name", "") if isinstance(
                        obj.get("metadata"), dict) else "",
                    [Cause("FieldValueInvalid", f'Invalid value: "{kind}": must be {rt.kind}',
                           "kind")], rt.group)
            raise errors.bad_request(
                f'{kind or rt.kind} in version "{got_version}" cannot be handled as a '
                f"{rt.kind}: converting ({got_version}.{kind}) to ({rt.group or 'core'}."
                f"{rt.kind}): unknown conversion")

    def _default(self, rt: ResourceType, obj: Obj) -> None:
        if rt.is_custom:
            cs = self.custom_schema(rt)
            if cs is not None:
                cs.default(obj)
        else:
            rt.strategy.default(rt, obj)

    def _track_fields(self, rt: ResourceType, old: Obj | None, new: Obj, opts: WriteOptions,
                      subresource: str = "") -> None:
        from setpoint.cluster.registry.patching import reset_fields
        from setpoint.machinery.managedfields import update_managed_fields

        update_managed_fields(
            self._schema(rt), old, new, manager=opts.field_manager,
            api_version=rt.api_version, now=self.clock(), subresource=subresource,
            reset_fields=reset_fields(rt, subresource))

    def _schema(self, rt: ResourceType) -> Schema | None:
        if rt.is_custom:
            cs = self.custom_schema(rt)
            return cs.schema if cs is not None else None
        return self.registry.schema(rt)

    def _admit(self, attributes: Attributes) -> None:
        for plugin in self.admission:
            plugin(attributes)

    def _mutate(self, point: AdmissionPoint) -> Steps[Obj]:
        """The object after the mutating webhooks: defaulted again when one changed it, as
        the apiserver decodes a patched object with defaults."""
        assert point.obj is not None
        mutated: Obj | None = yield point
        if mutated is None:
            return point.obj
        self._default(point.rt, mutated)
        return mutated

    def _validate(self, rt: ResourceType, obj: Obj, old: Obj | None) -> None:
        causes = (rt.strategy.validate(rt, obj) if old is None
                  else rt.strategy.validate_update(rt, obj, old))
        if rt.is_custom:
            cs = self.custom_schema(rt)
            if cs is not None:
                causes = causes + cs.validate(obj, old)
        if causes:
            # events.k8s.io Events are validated as the internal core Event: no group
            group = "" if rt.group == "events.k8s.io" else rt.group
            raise errors.invalid(rt.kind, obj["metadata"].get("name", ""), causes, group)


def storage_version_of(rt: ResourceType) -> str:
    for version in ((rt.crd or {}).get("spec") or {}).get("versions") or []:
        if version.get("storage"):
            return str(version["name"])
    return rt.version


def _same(new: Obj, old: Obj) -> bool:
    """Whether an update changes nothing (the resourceVersion aside)."""
    return new == old


def _pending_spec_finalizers(rt: ResourceType, obj: Obj) -> bool:
    return rt.kind == "Namespace" and not rt.group and bool(
        (obj.get("spec") or {}).get("finalizers"))


_TOP_ORDER = ("apiVersion", "kind", "metadata")
_META_ORDER = ("name", "generateName", "namespace", "uid", "resourceVersion", "generation",
               "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
               "annotations", "ownerReferences", "finalizers", "managedFields")


def _ordered(obj: Obj) -> Obj:
    """Fields in the order Kubernetes serializes them (kind, apiVersion, metadata first)."""
    meta = obj.get("metadata") or {}
    ordered_meta = {k: meta[k] for k in _META_ORDER if k in meta}
    if len(ordered_meta) != len(meta):
        ordered_meta.update((k, v) for k, v in meta.items() if k not in ordered_meta)
    out: Obj = {"kind": obj.get("kind"), "apiVersion": obj.get("apiVersion"),
                "metadata": ordered_meta}
    for k, v in obj.items():
        if k not in _TOP_ORDER:
            out[k] = v
    return out

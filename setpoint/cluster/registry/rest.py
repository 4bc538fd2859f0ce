"""The REST storage of every resource: the verbs the HTTP front and the server's own parts call.

As the apiserver's request handlers over a resource's storage (k8s.io/apiserver's
pkg/endpoints/handlers: create.go and update.go decode the body and hand it to the store,
patch.go builds the patched object and hands it to the store's update): this face decodes,
checks what the URL says against the body, and sends each verb to the module that does it.
The generic store (create, get, update) stands at the bottom; patch, delete, list and scale
stand on its public methods; nothing below imports this module.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from setpoint.cluster.registry import Registry
from setpoint.cluster.registry.admissionpoints import Steps, run_sync
from setpoint.cluster.registry.decoder import CustomSchema, ObjectDecoder
from setpoint.cluster.registry.deletion import DeleteAdmission, delete_steps
from setpoint.cluster.registry.genericstore import (
    Admission,
    GenericStore,
    WriteResult,
)
from setpoint.cluster.registry.listing import list_steps, list_stored
from setpoint.cluster.registry.options import DeleteOptions, ListOptions, WriteOptions
from setpoint.cluster.registry.patching import patch_steps
from setpoint.cluster.registry.requestnames import check_name, ensure_namespace_matches
from setpoint.cluster.registry.scale import get_scale, patch_scale, update_scale
from setpoint.cluster.registry.storagecodec import StorageCodec
from setpoint.cluster.registry.types import ResourceType
from setpoint.cluster.serializer.decode import Decoded
from setpoint.cluster.storage import Store
from setpoint.machinery import errors
from setpoint.machinery.errors import StatusError
from setpoint.machinery.objects import Obj


class REST:
    """The storage operations, independent of HTTP."""

    def __init__(self, store: Store, registry: Registry,
                 custom_schema: Callable[[ResourceType], CustomSchema | None]) -> None:
        self.store = store
        self.codec = StorageCodec(custom_schema)
        self.decoder = ObjectDecoder(registry.schema, custom_schema)
        self.generic = GenericStore(store, self.decoder, self.codec)
        self.admission: list[Admission] = self.generic.admission
        self.storage_admission: list[Admission] = self.generic.storage_admission
        self.user_validation: list[Admission] = self.generic.user_validation
        self.validating_admission: list[Admission] = self.generic.validating_admission
        self.final_validating_admission: list[Admission] = \
            self.generic.final_validating_admission
        # checks a DELETE passes before the object is read (namespace, resource, name)
        self.delete_admission: list[DeleteAdmission] = []
        self.clock = self.generic.clock
        self.present = self.codec.present
        self.with_defaults = self.codec.with_defaults

    # -- reads -------------------------------------------------------------------------
    def get(self, rt: ResourceType, ns: str | None, name: str, subresource: str = "") -> Obj:
        return run_sync(self.get_steps(rt, ns, name, subresource))

    def get_steps(self, rt: ResourceType, ns: str | None, name: str,
                  subresource: str = "") -> Steps[Obj]:
        if subresource == "scale":
            return get_scale(self.generic, rt, ns, name)
        live = self.generic.live(rt, ns, name)
        return (yield from self.codec.present_steps(rt, live))

    def get_served_json(self, rt: ResourceType, ns: str | None, name: str) -> bytes | None:
        """The JSON answer to a GET of ``rt``'s object, straight from storage, when ``rt`` is
        served as stored (``StorageCodec.serves_stored``: what ``get_steps`` hands back is
        the stored object unchanged, and the store keeps it as ``gojson.dumps`` writes it, so
        decoding and encoding it again would give back the same bytes); ``None`` when the
        object must be presented. A missing object raises the 404 ``get_steps`` raises."""
        if not self.codec.serves_stored(rt):
            return None
        raw = self.store.get_raw(rt.storage_key, ns or "", name)
        if raw is None:
            raise errors.not_found(rt.resource, name, rt.group)
        return raw

    def list(self, rt: ResourceType, ns: str | None, opts: ListOptions) -> Obj:
        return run_sync(self.list_steps(rt, ns, opts))

    def list_steps(self, rt: ResourceType, ns: str | None, opts: ListOptions) -> Steps[Obj]:
        return list_steps(self.store, self.codec, rt, ns, opts)

    def list_stored(self, rt: ResourceType, ns: str | None, opts: ListOptions) -> Obj:
        """A LIST's page as stored (see ``listing.list_stored``)."""
        return list_stored(self.store, self.codec, rt, ns, opts)

    # -- create ------------------------------------------------------------------------
    def create(self, rt: ResourceType, ns: str | None, body: Decoded,
               opts: WriteOptions) -> WriteResult:
        return run_sync(self.create_steps(rt, ns, body, opts))

    def create_steps(self, rt: ResourceType, ns: str | None, body: Decoded,
                     opts: WriteOptions) -> Steps[WriteResult]:
        """``create``, stopping at its admission points (see ``admissionpoints``)."""
        obj, warnings = self.decoder.decode(rt, body, opts)
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
        return (yield from self.generic.create_steps(rt, ns, obj, opts, warnings))

    # -- update ------------------------------------------------------------------------
    def update(self, rt: ResourceType, ns: str | None, name: str, body: Decoded,
               opts: WriteOptions, subresource: str = "") -> WriteResult:
        return run_sync(self.update_steps(rt, ns, name, body, opts, subresource))

    def update_steps(self, rt: ResourceType, ns: str | None, name: str, body: Decoded,
                     opts: WriteOptions, subresource: str = "") -> Steps[WriteResult]:
        """``update``, stopping at its admission points."""
        if subresource == "scale":
            return (yield from update_scale(self.generic, rt, ns, name, body.obj, opts,
                                               body.literals))
        # a status write's spec sent as stored is not decoded again (the read first: it
        # changes nothing, and the decoding's errors still come before its NotFound)
        old = self.store.get(rt.storage_key, ns or "", name) \
            if subresource == "status" and self.codec.serves_stored(rt) else None
        obj, warnings = self.decoder.decode(rt, body, opts, status_of=old)
        meta = obj["metadata"]
        # update.go: the namespace first, then the name
        ensure_namespace_matches(meta, rt.namespaced, ns)
        check_name(meta, name)
        if old is None:
            old = self.store.get(rt.storage_key, ns or "", name)
        if old is None:
            if rt.strategy.allows_create_on_update(rt) and not subresource:
                # (no "resourceVersion should not be set" here: store.go Update parses the
                # version after the mutating admission and creates regardless of it)
                return (yield from self.generic.create_steps(rt, ns, obj, opts, warnings,
                                                             on_update=True))
            # the store's NotFound names the resource of the request, not its subresource
            raise errors.not_found(rt.resource, name, rt.group)
        rv = meta.get("resourceVersion")
        result = yield from self.generic.update_steps(rt, obj, old, opts, subresource,
                                                      precondition_rv=rv)
        result.warnings[:0] = warnings
        return result

    # -- patch -------------------------------------------------------------------------
    def patch(self, rt: ResourceType, ns: str | None, name: str, raw: bytes,
              content_type: str, opts: WriteOptions, subresource: str = "") -> WriteResult:
        return run_sync(self.patch_steps(rt, ns, name, raw, content_type, opts, subresource))

    def patch_steps(self, rt: ResourceType, ns: str | None, name: str, raw: bytes,
                    content_type: str, opts: WriteOptions,
                    subresource: str = "") -> Steps[WriteResult]:
        if subresource == "scale":
            return patch_scale(self.generic, rt, ns, name, raw, content_type, opts)
        return patch_steps(self.generic, rt, ns, name, raw, content_type, opts, subresource)

    # -- delete ------------------------------------------------------------------------
    def delete(self, rt: ResourceType, ns: str | None, name: str,
               opts: DeleteOptions) -> tuple[int, Obj]:
        return run_sync(self.delete_steps(rt, ns, name, opts))

    def delete_steps(self, rt: ResourceType, ns: str | None, name: str,
                     opts: DeleteOptions) -> Steps[tuple[int, Obj]]:
        return delete_steps(self.generic, self.delete_admission, rt, ns, name, opts)

    def delete_collection(self, rt: ResourceType, ns: str | None, lopts: ListOptions,
                          dopts: DeleteOptions) -> Obj:
        return run_sync(self.delete_collection_steps(rt, ns, lopts, dopts))

    def delete_collection_steps(self, rt: ResourceType, ns: str | None, lopts: ListOptions,
                                dopts: DeleteOptions) -> Steps[Obj]:
        """Each listed object deleted as by its own DELETE (admission points included). The
        list is read in pages (store.go DeleteCollection): the request's own page when it
        sets a limit, else pages of ``DELETE_COLLECTION_PAGE_SIZE`` until none is left, the
        first page's list answering with every item. An item is in the answer as read
        before the deletions, even one another request deleted first; the first other error
        stops the deletions and is the answer."""
        opts = delete_collection_page(lopts)
        first: Obj | None = None
        items: list[Obj] = []
        while True:
            listed = self.list(rt, ns, opts)
            for item in listed["items"]:
                meta = item["metadata"]
                try:
                    yield from self.delete_steps(rt, meta.get("namespace"), meta["name"], dopts)
                except StatusError as exc:
                    if exc.code != 404:
                        raise
            if lopts.limit:
                return listed
            first = first or listed
            items.extend(listed["items"])
            token = listed["metadata"].get("continue")
            if not token:
                first["items"] = items
                return first
            # the next pages continue the first one's snapshot
            opts = replace(opts, continue_token=token, resource_version="",
                           resource_version_match="")


# store.go deleteCollectionPageSize: the limit DeleteCollection lists with when the request
# sets none, which makes a resourceVersion without a match the legacy exact read of etcd
# (cacher.go shouldDelegateList), not a read of the watch cache waiting to be fresh
DELETE_COLLECTION_PAGE_SIZE = 10000


def delete_collection_page(lopts: ListOptions) -> ListOptions:
    """The options of the first LIST a DELETECOLLECTION makes (store.go DeleteCollection)."""
    return lopts if lopts.limit > 0 else replace(lopts, limit=DELETE_COLLECTION_PAGE_SIZE)

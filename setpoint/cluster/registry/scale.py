"""The ``scale`` subresource: an autoscaling/v1 Scale view of a resource's replica counts."""

from __future__ import annotations

import copy
from typing import Any

from setpoint.cluster.registry.admissionpoints import (
    MUTATING,
    VALIDATING,
    AdmissionPoint,
    Changed,
    Steps,
    run_sync,
)
from setpoint.cluster.registry.decoder import check_body_kind
from setpoint.cluster.registry.genericstore import GenericStore, WriteResult
from setpoint.cluster.registry.options import WriteOptions
from setpoint.cluster.registry.patching import (
    APPLY_PATCH,
    JSON_PATCH,
    MERGE_PATCH,
    check_patch_type,
    patch_decode_error,
)
from setpoint.cluster.registry.requestnames import check_name, ensure_namespace_matches
from setpoint.cluster.registry.types import ResourceType, ScalePaths
from setpoint.cluster.serializer.decode import parse_body
from setpoint.cluster.serializer.typeddecode import decode_builtin
from setpoint.machinery import errors
from setpoint.machinery import fielderrors as fe
from setpoint.machinery import patch as patches
from setpoint.machinery.apply import apply
from setpoint.machinery.errors import Cause
from setpoint.machinery.gofmt import go_quote
from setpoint.machinery.labels import selector_from_label_selector, selector_from_set
from setpoint.machinery.managedfields import (
    scale_to_parent,
    scale_to_subresource,
    update_managed_fields,
)
from setpoint.machinery.objects import Obj
from setpoint.machinery.schema import Schema, definitions

SCALE_KIND = ("autoscaling", "v1", "Scale")


def _get_path(obj: Obj, path: str) -> Any:
    cur: Any = obj
    for part in path.lstrip(".").split("."):
        if not isinstance(cur, dict):
            return None
        cur = cur.get(part)
    return cur


def _set_path(obj: Obj, path: str, value: Any) -> None:
    parts = path.lstrip(".").split(".")
    cur = obj
    for part in parts[:-1]:
        nxt = cur.get(part)
        nxt = dict(nxt) if isinstance(nxt, dict) else {}
        cur[part] = nxt
        cur = nxt
    cur[parts[-1]] = value


def _paths(rt: ResourceType) -> ScalePaths:
    if rt.scale is None:
        raise errors.path_not_found()
    return rt.scale


def _selector_string(rt: ResourceType, obj: Obj, paths: ScalePaths) -> str | None:
    if paths.label_selector is None:
        return None
    value = _get_path(obj, paths.label_selector)
    if paths.label_selector_is_set:
        # an empty selector is the empty string, which Scale's omitempty leaves out
        return str(selector_from_set(value if isinstance(value, dict) else None)) or None
    if rt.is_custom:
        return value if isinstance(value, str) else None
    # built-ins keep a LabelSelector object in spec.selector
    selector = (obj.get("spec") or {}).get("selector")
    if isinstance(selector, dict):
        return str(selector_from_label_selector(selector))
    return value if isinstance(value, str) else None


def scale_of(rt: ResourceType, obj: Obj) -> Obj:
    paths = _paths(rt)
    meta = obj["metadata"]
    spec_replicas = _get_path(obj, paths.spec_replicas)
    status: Obj = {"replicas": _get_path(obj, paths.status_replicas) or 0}
    selector = _selector_string(rt, obj, paths)
    if selector is not None:
        status["selector"] = selector
    scale_meta = {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion",
                                       "creationTimestamp") if k in meta}
    return {"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": scale_meta,
            # autoscaling/v1 ScaleSpec.Replicas is omitempty: no replicas is zero replicas
            "spec": {"replicas": spec_replicas} if spec_replicas else {},
            "status": status}


# customresource/etcd.go scaleUpdatedObjectInfo: the old Scale of an object without spec
# replicas carries the smallest int32, and a new Scale that still does is refused
_UNSET_SPEC_REPLICAS = -2147483648


def _validate_scale(rt: ResourceType, name: str, scale: Any, *, patched: bool = False,
                    literals: bytes | None = None) -> int:
    """The replicas of a Scale body; a body of the wrong shape is a 400 (a 422 on ``patch``
    when it is the result of a patch, as the apiserver reports those). ``literals``: the JSON
    text Go decodes the Scale from (typeddecode.decode_builtin). The built-in registries run
    ValidateScale; the custom resources' ScaleREST does not (a negative count is the custom
    resource validator's, on the parent's update) but refuses replicas it marked unset."""
    if not isinstance(scale, dict):
        raise errors.bad_request("the body of a Scale must be a JSON object")
    try:
        decoded, _ = decode_builtin(scale, _scale_schema(), "Scale", literals=literals)
    except errors.StatusError as err:
        raise patch_decode_error(scale, err) if patched else err from None
    # decoded against the Scale schema: an int32 when present
    replicas: int = (decoded.get("spec") or {}).get("replicas", 0)
    if rt.is_custom:
        if replicas == _UNSET_SPEC_REPLICAS:
            raise errors.bad_request(
                f"the spec replicas field {go_quote(_paths(rt).spec_replicas)} cannot be empty")
        return replicas
    if replicas < 0:
        raise errors.invalid("Scale", name, [fe.invalid(
            "spec.replicas", replicas, "must be greater than or equal to 0")],
            group="autoscaling")
    return replicas


def _mappings(rt: ResourceType, paths: ScalePaths) -> dict[str, list[str]]:
    return {rt.api_version: paths.spec_replicas.lstrip(".").split(".")}


def _scale_view(rt: ResourceType, live: Obj, paths: ScalePaths) -> Obj:
    """The Scale with the managedFields of its replicas field (as the apiserver shows it)."""
    view = scale_of(rt, live)
    if rt.is_custom and _get_path(live, paths.spec_replicas) is None:
        view["spec"] = {"replicas": _UNSET_SPEC_REPLICAS}
    entries = scale_to_subresource(live["metadata"].get("managedFields"),
                                   mappings=_mappings(rt, paths))
    if entries:
        view["metadata"]["managedFields"] = entries
    return view


def _scale_schema() -> Schema:
    schema = definitions().for_kind("autoscaling", "v1", "Scale")
    assert schema is not None  # autoscaling/v1 is among the built-in definitions
    return schema


# The ScaleREST.Get of these registries answers its own NotFound for a missing parent
# (pkg/registry/apps/{deployment,replicaset}/storage/storage.go,
# pkg/registry/core/replicationcontroller/storage/storage.go); the others (statefulsets,
# custom resources) pass on the store's, which names the resource of the request. Updates
# and patches all go through the store's Update, whose NotFound is the store's.
_GET_NOT_FOUND = {
    ("apps", "deployments"): ("deployments/scale", "apps"),
    ("apps", "replicasets"): ("replicasets/scale", "apps"),
    ("", "replicationcontrollers"): ("replicationcontrollers/scale", "autoscaling"),
}


def get_scale(store: GenericStore, rt: ResourceType, ns: str | None, name: str) -> Obj:
    """GET of ``<resource>/scale``."""
    live = store.storage.get(rt.storage_key, ns or "", name)
    if live is None:
        resource, group = _GET_NOT_FOUND.get((rt.group, rt.resource), (rt.resource, rt.group))
        raise errors.not_found(resource, name, group)
    paths = _paths(rt)
    if rt.is_custom and _get_path(live, paths.spec_replicas) is None:
        # customresource/etcd.go ScaleREST.Get: apierrors.NewInternalError, its one cause the
        # error's text (an update goes on, from replicas the apiserver marks as unset)
        detail = f'the spec replicas field "{paths.spec_replicas}" does not exist'
        raise errors.StatusError(500, "InternalError", f"Internal error occurred: {detail}",
                                 causes=[Cause("", detail, "")])
    return scale_of(rt, live)


def update_scale(store: GenericStore, rt: ResourceType, ns: str | None, name: str, scale: Any,
                 opts: WriteOptions, literals: bytes | None = None) -> Steps[WriteResult]:
    """PUT of ``<resource>/scale``, stopping at its admission points (a Scale's)."""
    paths = _paths(rt)
    if isinstance(scale, dict):  # decoded into an autoscaling/v1 Scale, whatever the parent
        check_body_kind(scale, into_kind="Scale", into_version="autoscaling/v1",
                        group="autoscaling", custom=False)
        _check_request_names(scale, ns, name)
    live = store.storage.get(rt.storage_key, ns or "", name)
    if live is None:
        raise errors.not_found(rt.resource, name, rt.group)
    replicas = _validate_scale(rt, name, scale, literals=literals)
    rv = ((scale.get("metadata") or {}).get("resourceVersion")) or None
    old_view = _scale_view(rt, live, paths)
    new_view = _new_view(old_view, scale, replicas)
    update_managed_fields(_scale_schema(), old_view, new_view, manager=opts.field_manager,
                          api_version="autoscaling/v1", now=store.clock(), subresource="scale")
    return (yield from _write_back(store, rt, live, paths, old_view, new_view, rv, opts))


def _check_request_names(scale: Any, ns: str | None, name: str) -> None:
    """The Scale's namespace, then its name, against the URL: update.go and patch.go's
    applyPatch check the decoded Scale like any object (``EnsureObjectNamespaceMatchesRequest
    Namespace``, ``checkName``), before the parent is read."""
    if not isinstance(scale, dict):
        return
    meta = scale.get("metadata")
    if meta is None:  # no name at all: checkName's "undeterminable"
        meta = {}
    if isinstance(meta, dict):  # (any other shape is the decoder's error)
        meta = dict(meta)
        ensure_namespace_matches(meta, True, ns)
        check_name(meta, name)


def _new_view(old_view: Obj, scale: Any, replicas: int) -> Obj:
    """The Scale to write: the old one with the new replicas, and the uid the request
    gave (a precondition, checked by :func:`_check_uid`)."""
    new_view = copy.deepcopy(old_view)
    new_view["spec"] = {"replicas": replicas}
    uid = ((scale.get("metadata") or {}).get("uid")) if isinstance(scale, dict) else None
    if uid:
        new_view["metadata"]["uid"] = uid
    return new_view


def _check_uid(rt: ResourceType, live: Obj, view: Obj) -> None:
    """scaleUpdatedObjectInfo.UpdatedObject of the built-in registries (pkg/registry/apps/
    {deployment,replicaset,statefulset}/storage/storage.go, pkg/registry/core/
    replicationcontroller/storage/storage.go): a Scale uid other than the parent's is a
    Conflict on ``<resource>/scale``, after ValidateScale. The custom resources' ScaleREST
    (apiextensions-apiserver pkg/registry/customresource/etcd.go) has no such check."""
    if rt.is_custom:
        return
    uid = view["metadata"].get("uid")
    have = live["metadata"].get("uid")
    if uid and uid != have:
        raise errors.conflict(f"{rt.resource}/scale", live["metadata"]["name"],
                              f"Precondition failed: UID in precondition: {uid}, "
                              f"UID in object meta: {have}", rt.group)


def _write_back(store: GenericStore, rt: ResourceType, live: Obj, paths: ScalePaths, old_view: Obj,
                view: Obj, rv: str | None, opts: WriteOptions) -> Steps[WriteResult]:
    """Admit the new Scale, then set the parent's replicas from it and carry its ownership
    over (the parent's own update passes no admission again, as in the apiserver)."""
    meta = live["metadata"]
    point = AdmissionPoint(MUTATING, "UPDATE", rt, meta.get("namespace", ""), meta["name"],
                           view, old_view, opts.dry_run, "scale",
                           opts.options_object("UpdateOptions"), SCALE_KIND)
    mutated = yield point
    if mutated is not None:
        _validate_scale(rt, meta["name"], mutated)
        view = mutated
    _check_uid(rt, live, view)
    yield AdmissionPoint(VALIDATING, "UPDATE", rt, point.namespace, point.name, view, old_view,
                         opts.dry_run, "scale", point.options, SCALE_KIND)
    current = store.storage.get(rt.storage_key, point.namespace, point.name)
    if current is None or current["metadata"].get("resourceVersion") != \
            meta.get("resourceVersion"):
        raise Changed  # written while webhooks answered
    new = copy.deepcopy(store.codec.present(rt, live))
    _set_path(new, paths.spec_replicas, (view.get("spec") or {}).get("replicas", 0))
    entries = scale_to_parent(live["metadata"].get("managedFields"),
                              view["metadata"].get("managedFields"),
                              mappings=_mappings(rt, paths), parent_api_version=rt.api_version)
    new["metadata"]["managedFields"] = entries
    if not entries:
        del new["metadata"]["managedFields"]
    # scaleUpdatedObjectInfo: the Scale's resourceVersion, when it has one, is the parent's
    result = run_sync(store.update_steps(
        rt, new, live, opts, "scale", precondition_rv=rv or meta.get("resourceVersion"),
        tracked=True))
    result.obj = scale_of(rt, result.obj)
    result.served_json = None  # (the parent's JSON: the answer is the Scale)
    return result


def patch_scale(store: GenericStore, rt: ResourceType, ns: str | None, name: str, raw: bytes,
                content_type: str, opts: WriteOptions) -> Steps[WriteResult]:
    """PATCH of ``<resource>/scale``, stopping at its admission points."""
    check_patch_type(rt, content_type)
    paths = _paths(rt)
    live = store.storage.get(rt.storage_key, ns or "", name)
    if live is None:
        raise errors.not_found(rt.resource, name, rt.group)
    old_view = _scale_view(rt, store.codec.present(rt, live), paths)
    # (a patch document: decoded into maps, the last of a repeated key wins)
    decoded = parse_body(raw, content_type, kind="Scale", track_duplicates=False,
                         into_struct=False)
    if content_type == APPLY_PATCH:
        return (yield from _apply_scale(store, rt, live, paths, old_view, decoded.obj, opts))
    if content_type == JSON_PATCH:
        patched = patches.json_patch(old_view, decoded.obj, raw)
    elif content_type == MERGE_PATCH:
        patched = patches.merge_patch(old_view, decoded.obj)
    else:
        patched = patches.strategic_merge_patch(old_view, decoded.obj, _scale_schema())
    _check_request_names(patched, ns, name)
    # a JSON or merge patch keeps its literals in the patched JSON (json-patch's lazyNode)
    replicas = _validate_scale(rt, name, patched, patched=True, literals=raw if content_type in (
        JSON_PATCH, MERGE_PATCH) else None)
    rv = (patched.get("metadata") or {}).get("resourceVersion") or None
    new_view = _new_view(old_view, patched, replicas)
    update_managed_fields(_scale_schema(), old_view, new_view, manager=opts.field_manager,
                          api_version="autoscaling/v1", now=store.clock(), subresource="scale")
    return (yield from _write_back(store, rt, live, paths, old_view, new_view, rv, opts))


def _apply_scale(store: GenericStore, rt: ResourceType, live: Obj, paths: ScalePaths, old_view: Obj,
                 config: Any, opts: WriteOptions) -> Steps[WriteResult]:
    name = live["metadata"]["name"]
    _validate_scale(rt, name, config)
    applied = apply(_scale_schema(), old_view, config, manager=opts.field_manager,
                    force=opts.force, api_version="autoscaling/v1", now=store.clock(),
                    subresource="scale", kind="Scale")
    _check_request_names(applied, live["metadata"].get("namespace"), name)
    _validate_scale(rt, name, applied)
    # the configuration's resourceVersion is merged like any field: a stale one is the
    # parent's precondition (scaleUpdatedObjectInfo.UpdatedObject)
    rv = (applied.get("metadata") or {}).get("resourceVersion") or None
    return (yield from _write_back(store, rt, live, paths, old_view, applied, rv, opts))

"""PATCH: the four patch types applied to the live object, then the update pipeline."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from setpoint.cluster.registry.options import WriteOptions
from setpoint.cluster.registry.types import ResourceType
from setpoint.cluster.serializer.decode import parse_body
from setpoint.cluster.serializer.decodelimits import nested_too_deep
from setpoint.machinery import errors
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.registry.admissionpoints import Steps
    from setpoint.cluster.registry.rest import REST, WriteResult


def patch_steps(rest: REST, rt: ResourceType, ns: str | None, name: str, raw: bytes,
                content_type: str, opts: WriteOptions, subresource: str) -> Steps[WriteResult]:
    """A PATCH, stopping at its admission points (an UPDATE, or a CREATE for an apply)."""
    from setpoint.cluster.registry.rest import (
        APPLY_PATCH,
        JSON_PATCH,
        MERGE_PATCH,
        STRATEGIC_PATCH,
    )
    from setpoint.machinery import patch as patches

    if content_type == STRATEGIC_PATCH and rt.is_custom:
        raise errors.unsupported_media_type(
            "application/json-patch+json, application/merge-patch+json, "
            "application/apply-patch+yaml")
    if subresource == "scale":
        from setpoint.cluster.registry.scale import patch_scale

        return (yield from patch_scale(rest, rt, ns, name, raw, content_type, opts))
    decoded = parse_body(raw, content_type, kind=rt.kind,
                         track_duplicates=opts.field_validation != "Ignore")
    live = rest.store.get(rt.storage_key, ns or "", name)
    if content_type == APPLY_PATCH:
        return (yield from _apply_steps(rest, rt, ns, name, decoded.obj, live, opts,
                                        subresource, decoded.duplicates))
    if live is None:
        resource = f"{rt.resource}/{subresource}" if subresource else rt.resource
        raise errors.not_found(resource, name, rt.group)
    current = yield from rest.present_steps(rt, live)
    if content_type == JSON_PATCH:
        patched = patches.json_patch(current, decoded.obj)
    elif content_type == MERGE_PATCH:
        if not isinstance(decoded.obj, dict):
            raise errors.bad_request("json: cannot unmarshal array into Go value of type "
                                     "map[string]interface {}")
        patched = patches.merge_patch(current, decoded.obj)
    elif content_type == STRATEGIC_PATCH:
        if not isinstance(decoded.obj, dict):
            raise errors.bad_request("json: cannot unmarshal array into Go value of type "
                                     "map[string]interface {}")
        patched = patches.strategic_merge_patch(current, decoded.obj, rest.registry.schema(rt))
    else:
        raise errors.unsupported_media_type(
            "application/json-patch+json, application/merge-patch+json, "
            "application/apply-patch+yaml, application/strategic-merge-patch+json")
    if not isinstance(patched, dict):
        raise errors.bad_request("the patched object is not a JSON object")
    if nested_too_deep(patched):
        # what Go's decoder of the patched JSON refuses ("exceeded max depth"), answered as
        # a patch that cannot apply; the object is not echoed as it cannot be encoded
        from setpoint.machinery.patch._status import unprocessable

        raise unprocessable()
    from setpoint.cluster.serializer.decode import Decoded

    if rt.is_custom and opts.field_validation == "Strict":
        _reject_unknown_in_patch(rest, rt, patched)
    try:
        obj, warnings = rest._decode(rt, Decoded(patched, decoded.duplicates), opts)
    except errors.StatusError as err:
        raise patch_decode_error(patched, err) from None
    meta = obj["metadata"]
    if meta.get("name") != name:
        raise errors.bad_request(
            f"the name of the object ({meta.get('name')}) does not match the name on the URL "
            f"({name})")
    if rt.namespaced:
        meta["namespace"] = ns
    precondition = meta.get("resourceVersion")
    result = yield from rest.update_stored_steps(rt, obj, live, opts, subresource,
                                                 precondition_rv=precondition)
    result.warnings[:0] = warnings
    return result


def _apply_steps(rest: REST, rt: ResourceType, ns: str | None, name: str, config: Any,
                 live: Obj | None, opts: WriteOptions, subresource: str,
                 duplicates: list[str]) -> Steps[WriteResult]:
    """Server-side apply: create when absent, else merge by managed fields."""
    from setpoint.cluster.serializer.decode import Decoded
    from setpoint.machinery.apply import apply

    if not isinstance(config, dict):
        raise errors.bad_request("error decoding YAML: the applied object is not a map")
    kind, api_version = config.get("kind"), config.get("apiVersion")
    if not kind or not api_version:
        raise errors.bad_request(
            "Object 'Kind' is missing in '" + _short(config) + "'" if not kind else
            "Object 'apiVersion' is missing")
    meta = config.get("metadata") or {}
    if isinstance(meta, dict) and meta.get("name") not in (None, name):
        raise errors.bad_request(
            f"the name of the object ({meta.get('name')}) does not match the name on the URL "
            f"({name})")
    cfg, warnings = rest._decode(rt, Decoded(config, duplicates), opts)
    cfg["metadata"].setdefault("name", name)
    if rt.namespaced:
        cfg["metadata"]["namespace"] = ns
    if live is None:
        if subresource:
            raise errors.not_found(f"{rt.resource}/{subresource}", name, rt.group)
        applied = apply(rest._schema(rt), None, cfg, manager=opts.field_manager,
                        force=opts.force, api_version=rt.api_version, now=rest.clock(),
                        kind=rt.kind, reset_fields=reset_fields(rt, ""))
        applied.setdefault("metadata", {})
        return (yield from rest.finish_create_steps(rt, ns, applied, opts, warnings,
                                                    tracked=True))
    current = copy.deepcopy((yield from rest.present_steps(rt, live)))
    applied = apply(rest._schema(rt), current, cfg, manager=opts.field_manager,
                    force=opts.force, api_version=rt.api_version, now=rest.clock(),
                    subresource=subresource, kind=rt.kind,
                    reset_fields=reset_fields(rt, subresource))
    precondition = cfg["metadata"].get("resourceVersion")
    result = yield from rest.update_stored_steps(rt, applied, live, opts, subresource,
                                                 precondition_rv=precondition, tracked=True)
    result.warnings[:0] = warnings
    return result


def _reject_unknown_in_patch(rest: REST, rt: ResourceType, patched: Obj) -> None:
    """A strict patch of a custom resource naming unknown fields: the apiserver's 422."""
    cs = rest.custom_schema(rt)
    unknown = cs.unknown_fields(patched) if cs is not None else []
    if unknown:
        detail = ", ".join(f'unknown field "{u}"' for u in unknown)
        raise invalid_patch(patched, f"strict decoding error: {detail}")


def invalid_patch(patched: Any, detail: str) -> errors.StatusError:
    """The 422 the apiserver answers when a patched object cannot be decoded: the cause is on
    field ``patch`` and shows the patched object."""
    import orjson

    from setpoint.machinery.errors import Cause

    text = orjson.dumps(patched, option=orjson.OPT_SORT_KEYS).decode()
    cause = Cause("FieldValueInvalid",
                  f"Invalid value: {orjson.dumps(text).decode()}: {detail}", "patch")
    return errors.StatusError(422, "Invalid", f' "" is invalid: patch: {cause.message}',
                              causes=[cause])


def patch_decode_error(patched: Any, err: errors.StatusError) -> errors.StatusError:
    """Turn a decoding failure (wrong types, strict unknown fields) of a patched object into
    the apiserver's 422; other errors pass through."""
    if err.code != 400 or "cannot be handled as a" not in err.message:
        return err
    detail = err.message.split(": ", 1)[1] if ": " in err.message else err.message
    return invalid_patch(patched, detail)


def reset_fields(rt: ResourceType, subresource: str) -> list[str]:
    """The fields an endpoint's strategy resets, which no writer through it owns."""
    if not rt.has_status:
        return []
    return ["spec"] if subresource == "status" else ["status"]


def _short(obj: Obj) -> str:
    import orjson

    return orjson.dumps(obj).decode()[:200]

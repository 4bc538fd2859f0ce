"""PATCH: the patched object built from the live one, then the ordinary update.

As k8s.io/apiserver's endpoints/handlers/patch.go: a JSON patch, merge patch or strategic
merge patch is applied to the live object as served and the result decoded as a body would
be; a server-side apply merges the configuration by managed fields (creating the object when
there is none). What comes out is handed to the generic store's update (or create), as the
patcher hands ``store.Update`` its ``UpdatedObjectInfo``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import orjson

from setpoint.cluster.registry.admissionpoints import Steps
from setpoint.cluster.registry.genericstore import (
    GenericStore,
    WriteResult,
    reset_fields,
)
from setpoint.cluster.registry.options import WriteOptions
from setpoint.cluster.registry.requestnames import check_name, ensure_namespace_matches
from setpoint.cluster.registry.types import ResourceType
from setpoint.cluster.serializer.decode import Decoded, parse_body, strict_decoding_order
from setpoint.cluster.serializer.decodelimits import nested_too_deep
from setpoint.cluster.serializer.gosyntax import go_syntax_error
from setpoint.cluster.serializer.typeddecode import unstructured_conversion_error
from setpoint.cluster.serializer.yamlstrict import YAML_ERRORS_PREFIX, duplicate_key_errors
from setpoint.cluster.storage.versioner import object_resource_version
from setpoint.machinery import errors
from setpoint.machinery import patch as patches
from setpoint.machinery.apply import apply, typed_config_fields
from setpoint.machinery.errors import Cause
from setpoint.machinery.fielderrors import unmarshal_kind
from setpoint.machinery.gofmt import format_v
from setpoint.machinery.objects import Obj
from setpoint.machinery.patch._status import unprocessable
from setpoint.machinery.schema import Schema

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH, APPLY_PATCH)


def patched_object(current: Obj, patch: Any, content_type: str, schema: Schema | None,
                   field_validation: str = "Warn", raw: bytes | None = None) -> Any:
    """``current`` with a JSON, merge or strategic merge ``patch`` applied (a new object).

    A merge patch body is first decoded strictly into a map unless fieldValidation is Ignore
    (patch.go ``applyJSPatch``: the default directive is Warn), so a body that is no object
    and no ``null`` is that decoder's 400; under Ignore, json-patch's MergePatch decides.
    ``raw`` is the body as sent: a JSON patch's ``test`` compares by the values' text."""
    if content_type == JSON_PATCH:
        return patches.json_patch(current, patch, raw)
    if content_type == MERGE_PATCH:
        if field_validation != "Ignore" and patch is not None and not isinstance(patch, dict):
            raise errors.bad_request(
                f"error decoding patch: json: cannot unmarshal {unmarshal_kind(patch)} into "
                "Go value of type map[string]interface {}")
        return patches.merge_patch(current, patch)
    if content_type == STRATEGIC_PATCH:
        return patches.strategic_merge_patch(current, patch, schema)
    raise errors.unsupported_media_type(
        "application/json-patch+json, application/merge-patch+json, "
        "application/strategic-merge-patch+json, application/apply-patch+yaml")


def patch_syntax_error(content_type: str, field_validation: str,
                       syntax: str) -> errors.StatusError:
    """A patch body that is not JSON, as patch.go's decoder of each patch type words it:
    Strict and Warn (the default) decode JSON and merge patches strictly first ("error
    decoding patch: ..."); under Ignore json-patch decides (DecodePatch's error as it is,
    MergePatch's ErrBadJSONPatch); a strategic merge patch is the decoder's error as is."""
    if content_type == STRATEGIC_PATCH:
        return errors.bad_request(syntax)
    if field_validation != "Ignore":
        return errors.bad_request(f"error decoding patch: {syntax}")
    return errors.bad_request(syntax if content_type == JSON_PATCH else "Invalid JSON Patch")


_JSON_PATCH_OP_FIELDS = frozenset({"op", "path", "from", "value"})


def patch_strict_problems(decoded: Decoded, content_type: str) -> list[str]:
    """What strict decoding finds in the patch body itself, listed before the patched
    object's unknown fields (patch.go applyPatchToCurrentObject and applyPatchToObject:
    ``append(appliedStrictErrs, strictError.Errors()...)``): a JSON patch is decoded into
    ``[]jsonPatchOp`` (an operation's keys beyond op, path, from and value are unknown;
    each problem prefixed "json patch "), a merge or strategic merge patch into a map (only
    repeated keys)."""
    if content_type != JSON_PATCH:
        return [f'duplicate field "{d}"' for d in decoded.duplicates]
    ops = decoded.obj if isinstance(decoded.obj, list) else []
    unknown = [f"[{i}].{key}" for i, op in enumerate(ops) if isinstance(op, dict)
               for key in op if key not in _JSON_PATCH_OP_FIELDS]
    return [f"json patch {p}" for p in strict_decoding_order(decoded, unknown)]


def check_patch_type(rt: ResourceType, content_type: str) -> None:
    """Custom resources take no strategic merge patch: they have no patch strategies."""
    if content_type == STRATEGIC_PATCH and rt.is_custom:
        raise errors.unsupported_media_type(
            "application/json-patch+json, application/merge-patch+json, "
            "application/apply-patch+yaml")


def patch_steps(store: GenericStore, rt: ResourceType, ns: str | None, name: str, raw: bytes,
                content_type: str, opts: WriteOptions, subresource: str) -> Steps[WriteResult]:
    """A PATCH, stopping at its admission points (an UPDATE, or a CREATE for an apply)."""
    check_patch_type(rt, content_type)
    try:
        # a patch document is decoded into maps (json-patch's partialDoc, the strategic
        # patch's map[string]interface{}): of a repeated key the last one wins
        decoded = parse_body(raw, content_type, kind=rt.kind,
                             track_duplicates=opts.field_validation != "Ignore",
                             into_struct=False)
    except errors.StatusError:
        syntax = go_syntax_error(raw) if content_type != APPLY_PATCH else None
        if syntax is None:
            raise
        raise patch_syntax_error(content_type, opts.field_validation, syntax) from None
    live = store.storage.get(rt.storage_key, ns or "", name)
    if content_type == APPLY_PATCH:
        return (yield from _apply_steps(store, rt, ns, name, decoded.obj, live, opts,
                                        subresource, raw))
    if live is None:
        # the store's update answers NotFound for the resource of the request (store.go)
        raise errors.not_found(rt.resource, name, rt.group)
    current = yield from store.codec.present_steps(rt, live)
    patched = patched_object(current, decoded.obj, content_type, store.decoder.schema(rt),
                             opts.field_validation, raw)
    if not isinstance(patched, dict):
        raise errors.bad_request("the patched object is not a JSON object")
    if nested_too_deep(patched):
        # what Go's decoder of the patched JSON refuses ("exceeded max depth"), answered as
        # a patch that cannot apply; the object is not echoed as it cannot be encoded
        raise unprocessable()
    found = patch_strict_problems(decoded, content_type) \
        if opts.field_validation != "Ignore" else []
    if rt.is_custom and opts.field_validation == "Strict":
        problems = found + [f'unknown field "{u}"'
                            for u in store.decoder.unknown_fields(rt, patched)]
        if problems:
            raise invalid_patch(patched, f"strict decoding error: {', '.join(problems)}")
    try:
        # the JSON and merge patches keep each value's literal as sent (json-patch's lazyNode
        # holds it raw), so Go decodes the patch's own number literals
        literals = raw if content_type in (JSON_PATCH, MERGE_PATCH) else None
        body = Decoded(patched, literals=literals,
                       from_unstructured=content_type == STRATEGIC_PATCH)
        obj, warnings = store.decoder.decode(
            rt, body, opts, patch_problems=found,
            status_of=live if subresource == "status" and store.codec.serves_stored(rt)
            else None)
    except errors.StatusError as err:
        if content_type == STRATEGIC_PATCH:
            raise strategic_patch_decode_error(decoded.obj, patched, err,
                                               store.decoder.schema(rt), rt.kind) from None
        raise patch_decode_error(patched, err) from None
    meta = obj["metadata"]
    # patch.go applyPatch: the patched object's namespace, then its name, against the URL
    ensure_namespace_matches(meta, rt.namespaced, ns)
    check_name(meta, name)
    precondition = meta.get("resourceVersion")
    result = yield from store.update_steps(rt, obj, live, opts, subresource,
                                           precondition_rv=precondition, uid_precondition=False)
    result.warnings[:0] = warnings
    return result


def _apply_steps(store: GenericStore, rt: ResourceType, ns: str | None, name: str,
                 config: Any, live: Obj | None, opts: WriteOptions, subresource: str,
                 raw: bytes) -> Steps[WriteResult]:
    """Server-side apply: create when absent, else merge by managed fields. The field
    manager works on the live object as served (defaulted as it is decoded from storage);
    the merged object is defaulted once, by the store's create or update."""
    if config is None:
        config = {}  # sigs.k8s.io/yaml leaves the map nil: the version check refuses it
    if not isinstance(config, dict):
        # applyPatcher: sigs.k8s.io/yaml.Unmarshal into a map[string]interface{}
        raise errors.bad_request(
            "error decoding YAML: error unmarshaling JSON: while decoding JSON: json: cannot "
            f"unmarshal {unmarshal_kind(config)} into Go value of type map[string]interface {{}}")
    if (config.get("apiVersion"), config.get("kind")) != (rt.api_version, rt.kind):
        # managedfields' versionCheckManager, the outermost of the field manager's layers
        raise errors.bad_request(f"invalid object type: {_gvk_text(config)}")
    schema = store.decoder.schema(rt)
    if schema is not None and config.get("apiVersion") == rt.api_version:
        typed_config_fields(schema, config)  # undeclared fields: the typed conversion's 500
    # what is left to report are repeated keys, after the merge (``applyPatcher``)
    check_duplicates = _apply_duplicates(raw, opts)
    cfg, warnings = store.decoder.decode(rt, Decoded(config), opts)
    # patch.go applyPatch checks the merged object; what the configuration leaves out comes
    # from the live object, and a new object has nothing but the configuration
    ensure_namespace_matches(cfg["metadata"], rt.namespaced, ns)
    if live is None or cfg["metadata"].get("name"):
        check_name(cfg["metadata"], name)
    cfg["metadata"].setdefault("name", name)
    # structuredmerge.go Apply takes the configuration as sent (an unstructured map): an
    # explicit null is owned and wins the merge like any value; a built-in kind's result is
    # then converted to its Go type (TypedToObject, toVersioned), where the null becomes nil
    nulls = not rt.is_custom and _has_null(config)
    merged_config = _with_sent_nulls(config, cfg) if nulls else cfg
    if live is None:
        if subresource:
            raise errors.not_found(rt.resource, name, rt.group)
        # store.go Update parses the object's resourceVersion before it creates (apply may
        # create: forceAllowCreate)
        object_resource_version(cfg["metadata"].get("resourceVersion") or "")
        applied = apply(schema, None, merged_config, manager=opts.field_manager,
                        force=opts.force, api_version=rt.api_version, now=store.clock(),
                        kind=rt.kind, reset_fields=reset_fields(rt, ""), sent=config)
        applied = _as_typed(store, rt, applied, nulls)
        applied.setdefault("metadata", {})
        if applied["metadata"].get("uid"):
            # patch.go applyPatch: a uid names an object that should have been there
            raise errors.conflict(
                rt.resource, name, "uid mismatch: the provided object specified uid "
                f"{applied['metadata']['uid']}, and no existing object was found", rt.group)
        warnings += check_duplicates()
        return (yield from store.create_steps(rt, ns, applied, opts, warnings, tracked=True))
    current = copy.deepcopy((yield from store.codec.present_steps(rt, live)))
    applied = apply(schema, current, merged_config, manager=opts.field_manager,
                    force=opts.force, api_version=rt.api_version, now=store.clock(),
                    subresource=subresource, kind=rt.kind,
                    reset_fields=reset_fields(rt, subresource), sent=config)
    applied = _as_typed(store, rt, applied, nulls)
    meta = applied.get("metadata")
    if rt.crd is None and isinstance(meta, dict) and meta.get("annotations") == {}:
        # a map the apply emptied (a last-applied annotation dropped) is left out by a
        # built-in kind's typed encoding (omitempty); an unstructured one keeps it
        del meta["annotations"]
    warnings += check_duplicates()
    # the merged object keeps the live resourceVersion unless the configuration sets one
    precondition = cfg["metadata"].get("resourceVersion") or live["metadata"].get(
        "resourceVersion")
    result = yield from store.update_steps(rt, applied, live, opts, subresource,
                                           precondition_rv=precondition, tracked=True,
                                           uid_precondition=False)
    result.warnings[:0] = warnings
    return result


def _has_null(value: Any) -> bool:
    if isinstance(value, dict):
        return any(v is None or _has_null(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_null(v) for v in value)
    return False


def _with_sent_nulls(sent: Any, decoded: Any) -> Any:
    """``decoded`` with the members ``sent`` set to null put back where decoding dropped
    them (lists matched item by item when decoding kept their length)."""
    if isinstance(sent, dict) and isinstance(decoded, dict):
        out = dict(decoded)
        for k, v in sent.items():
            if v is None:
                out.setdefault(k, None)
            elif k in out:
                out[k] = _with_sent_nulls(v, out[k])
        return out
    if isinstance(sent, list) and isinstance(decoded, list) and len(sent) == len(decoded):
        return [_with_sent_nulls(s, d) for s, d in zip(sent, decoded, strict=True)]
    return decoded


def _as_typed(store: GenericStore, rt: ResourceType, applied: Obj, nulls: bool) -> Obj:
    """The applied object as its Go type holds it, when a null of the configuration may
    have landed in it (a nil pointer or slice left out, a string map value ""). The
    managedFields are not the decoder's business: they are carried over as they are."""
    if not nulls:
        return applied
    managed = (applied.get("metadata") or {}).get("managedFields")
    obj, _ = store.decoder.decode(rt, Decoded(applied), WriteOptions(field_validation="Ignore"))
    if managed is not None:
        obj["metadata"]["managedFields"] = managed
    return obj


def _gvk_text(config: dict[str, Any]) -> str:
    """How schema.GroupVersionKind prints the configuration's kind (``group/version, Kind=``):
    an apiVersion that does not parse leaves group and version empty."""
    api_version = config.get("apiVersion")
    kind = config.get("kind")
    api_version = api_version if isinstance(api_version, str) else ""
    kind = kind if isinstance(kind, str) else ""
    group, version = "", ""
    if api_version.count("/") == 1:
        group, version = api_version.split("/")
    elif "/" not in api_version:
        version = api_version
    return f"{group}/{version}, Kind={kind}"


def _apply_duplicates(raw: bytes, opts: WriteOptions) -> Callable[[], list[str]]:
    """What ``applyPatcher`` does with repeated keys once the configuration is merged: go-yaml's
    strict decoding errors are a 400 under Strict, one warning each under Warn."""
    def check() -> list[str]:
        if opts.field_validation not in ("Strict", "Warn"):
            return []
        problems = duplicate_key_errors(raw)
        if problems and opts.field_validation == "Strict":
            raise errors.bad_request(
                "error strict decoding YAML: error converting YAML to JSON: "
                f"{YAML_ERRORS_PREFIX}" + "\n".join(f"  {p}" for p in problems))
        return problems
    return check


def invalid_patch(patched: Any, detail: str, shown: str | None = None) -> errors.StatusError:
    """The 422 the apiserver answers when a patched object cannot be decoded: the cause is on
    field ``patch`` and shows the patched object (or ``shown``)."""
    text = shown if shown is not None else \
        orjson.dumps(patched, option=orjson.OPT_SORT_KEYS).decode()
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


def strategic_patch_decode_error(patch: Any, patched: Any, err: errors.StatusError,
                                 schema: Schema | None, kind: str) -> errors.StatusError:
    """A strategic merge patch's result that cannot become the typed object, as patch.go
    applyPatchToObject words it: the patched map is converted, not decoded
    (runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation, whose texts differ
    from encoding/json's), and the cause shows the patch map (``fmt.Sprintf("%+v",
    patchMap)``) rather than the patched object. The map is shown as sent: the directives
    StrategicMergeMapPatch consumes from it are not taken out."""
    if err.code != 400 or "cannot be handled as a" not in err.message:
        return err
    detail = err.message.split(": ", 1)[1] if ": " in err.message else err.message
    if not detail.startswith("strict decoding error") and schema is not None \
            and isinstance(patched, dict):
        detail = unstructured_conversion_error(patched, schema, kind) or detail
    return invalid_patch(patched, detail, format_v(patch))

"""A written object decoded as its resource type, as the apiserver's request scope decodes it.

Kind and apiVersion checks, typed decoding of built-ins (wrong JSON types are the decoder's
400), pruning of custom resources, and unknown and duplicate fields answered by
``fieldValidation`` (k8s.io/apiserver/pkg/endpoints/handlers/create.go, update.go and
patch.go decode through the same codec). The decoder also knows each type's schemas: the
OpenAPI schema managed fields and strategic merge follow, and a custom resource version's
structural schema.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Protocol

import orjson

from setpoint.cluster.registry import gomembers
from setpoint.cluster.registry.builtin import builtin_kinds
from setpoint.cluster.registry.options import WriteOptions
from setpoint.cluster.registry.types import ResourceType
from setpoint.cluster.serializer.decode import Decoded, strict_decoding_order
from setpoint.cluster.serializer.typeddecode import (
    check_object_meta,
    decode_builtin,
    object_meta_error,
)
from setpoint.cluster.serializer.yamlstrict import YAML_ERRORS_PREFIX
from setpoint.machinery import errors
from setpoint.machinery.errors import Cause
from setpoint.machinery.fielderrors import error_text, unmarshal_kind
from setpoint.machinery.objects import Obj
from setpoint.machinery.schema import Schema


class CustomSchema(Protocol):
    """What the storage needs of a custom resource version's schema."""

    has_defaults: bool
    prunes_on_read: bool

    @property
    def schema(self) -> Schema: ...

    def validate(self, obj: Obj, old: Obj | None = None,
                 warnings: list[str] | None = None,
                 prior: list[Cause] | None = None) -> list[Cause]: ...
    def prune_and_report(self, obj: Obj) -> list[str]: ...
    def unknown_fields(self, obj: Obj) -> list[str]: ...
    def embedded_coerce_error(self, obj: Obj,
                              meta_error: Callable[[object], str | None]) -> Cause | None: ...
    def default(self, obj: Obj) -> Obj: ...


class ObjectDecoder:
    """Bodies decoded for a resource type; given where built-in and custom schemas come from."""

    def __init__(self, builtin_schema: Callable[[ResourceType], Schema | None],
                 custom_schema: Callable[[ResourceType], CustomSchema | None]) -> None:
        self.builtin_schema = builtin_schema
        self.custom_schema = custom_schema

    def schema(self, rt: ResourceType) -> Schema | None:
        """The OpenAPI schema of ``rt``'s objects (managed fields and apply follow it)."""
        if rt.is_custom:
            cs = self.custom_schema(rt)
            return cs.schema if cs is not None else None
        return self.builtin_schema(rt)

    def decode(self, rt: ResourceType, body: Decoded, opts: WriteOptions, *,
               patch_problems: Sequence[str] = (),
               status_of: Obj | None = None) -> tuple[Obj, list[str]]:
        """Kind checks, typed decoding, unknown and duplicate fields, by fieldValidation:
        the object and the warnings to answer with. ``patch_problems``: what strict decoding
        found in the patch that made ``body``, listed before the object's own.
        ``status_of``: the stored object a ``/status`` write replaces (see
        :func:`_reset_members_as_stored`)."""
        obj = body.obj
        if not isinstance(obj, dict):
            raise errors.bad_request(
                f"the object provided is unrecognized (must be of type {rt.kind}): couldn't get "
                "version/kind; json parse error: cannot unmarshal into Go value of type "
                "struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string "
                "\"json:\\\"kind,omitempty\\\"\" }")
        _check_kind(rt, obj)
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
        unknown: list[str] = []
        if rt.is_custom:
            check_object_meta(obj["metadata"], rt.kind, rt.version)
            cs = self.custom_schema(rt)
            if cs is not None:
                # pruning works in place; a patched object shares parts with the stored one
                obj = copy.deepcopy(obj)
                unknown = cs.prune_and_report(obj)
                coerced = cs.embedded_coerce_error(obj, object_meta_error)
                if coerced is not None:
                    # a field error in a decode error: transformDecodeError's 400
                    raise errors.bad_request(
                        f'{rt.kind} in version "{rt.version}" cannot be handled as a '
                        f"{rt.kind}: {error_text(coerced)}")
                _integral_floats_as_go_writes_them(obj)
        else:
            schema = self.builtin_schema(rt)
            if schema is not None:
                whole = obj
                kept = _reset_members_as_stored(obj, status_of) if status_of is not None \
                    else None
                sent = obj if kept is None else {k: v for k, v in obj.items() if k not in kept}
                obj, unknown = decode_builtin(sent, schema, rt.kind, literals=body.literals)
                gomembers.keep_sent_empties_of_kind(rt.group, rt.version, rt.kind, sent, obj)
                if kept is not None:
                    obj = _with_members(whole, obj, kept)
            obj.setdefault("metadata", {})
        if rt.is_custom:
            # unstructured decoding: the JSON decoder's repeats, then what pruning dropped
            problems = [f'duplicate field "{d}"' for d in body.duplicates]
            problems += [f'unknown field "{u}"' for u in unknown]
        elif body.from_unstructured:
            problems = sorted(f'unknown field "{u}"' for u in unknown)
        else:
            problems = strict_decoding_order(body, unknown)
        if body.yaml_duplicates:
            problems[:0] = [YAML_ERRORS_PREFIX + "\n".join(
                f"  {line}" for line in body.yaml_duplicates)]
        problems[:0] = patch_problems
        return obj, _field_validation(rt, problems, opts)

    def unknown_fields(self, rt: ResourceType, obj: Obj) -> list[str]:
        """The fields of a custom resource its schema does not know (none for built-ins)."""
        cs = self.custom_schema(rt) if rt.is_custom else None
        return cs.unknown_fields(obj) if cs is not None else []

    def default(self, rt: ResourceType, obj: Obj) -> None:
        """The type's defaults, in place: its schema's for a custom resource, else its
        strategy's (the ``SetDefaults_*`` functions)."""
        if rt.is_custom:
            cs = self.custom_schema(rt)
            if cs is not None:
                cs.default(obj)
        else:
            rt.strategy.default(rt, obj)

    def validate(self, rt: ResourceType, obj: Obj, old: Obj | None,
                 warnings: list[str] | None = None,
                 prior: list[Cause] | None = None) -> list[Cause]:
        """What a custom resource version's schema says of ``obj`` (nothing for built-ins);
        its ratcheted CEL failures go to ``warnings``; ``prior``: the generic causes."""
        cs = self.custom_schema(rt) if rt.is_custom else None
        return cs.validate(obj, old, warnings, prior) if cs is not None else []


# What a built-in kind's status strategy takes from the stored object whatever the write
# sends (strategy.prepare_for_status_update: the spec)
_RESET_BY_STATUS_WRITES = ("spec",)


def _reset_members_as_stored(sent: Obj, stored: Obj) -> dict[str, object] | None:
    """The members of a ``/status`` write's body that its status strategy replaces with the
    stored object's and that are the stored ones as they are (a status PUT sends back the
    object it read; a patch leaves them alone), each as a copy of its stored value: decoding
    a stored value gives it back (it is what a decoding gave, defaulted and stored), so they
    are not decoded again. Compared by their JSON text, which tells ``1`` from ``1.0`` and
    ``true``, and in which nothing unknown, repeated or sent empty can hide; a member that
    differs is decoded as sent (its errors and unknown fields are the write's)."""
    kept: dict[str, object] = {}
    for name in _RESET_BY_STATUS_WRITES:
        value = sent.get(name)
        if value.__class__ is not dict or not value:  # (an empty one: decoded, as ever)
            continue
        was = stored.get(name)
        if value is not was:
            if was.__class__ is not dict:
                continue
            try:
                text = orjson.dumps(value)
            except TypeError:  # (an integer past 64 bits: decoded as sent, refused there)
                continue
            if text != orjson.dumps(was):
                continue
        kept[name] = orjson.loads(orjson.dumps(was))  # (defaulting works in place)
    return kept or None


def _with_members(sent: Obj, decoded: Obj, kept: dict[str, object]) -> Obj:
    """``decoded`` with the ``kept`` members in the places the body had them (the order a
    decoding of the whole body would give)."""
    return {k: kept[k] if k in kept else decoded[k] for k in sent
            if k in kept or k in decoded}


# float64 integers up to 2**53 are "a JSON integer" to kube-openapi's type validator
# (swag.IsFloat64AJSONInteger), and encoding/json writes them without a fraction
_JSON_INTEGER = 2**53


def _integral_floats_as_go_writes_them(value: object) -> None:
    """A custom resource is unstructured JSON (a float64 for ``3.0`` or ``1e2``), which Go
    writes back as ``3`` and ``100`` (encoding/json's float64 format) and validates as an
    integer where the schema wants one (kube-openapi validate/type.go ``isFloatInt``): in
    place, such floats become the integers they are, as Go's answer and storage show them."""
    stack = [value]
    while stack:
        node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) \
            if isinstance(node, list) else ()
        for key, v in items:
            if type(v) is float and v.is_integer() and -_JSON_INTEGER < v < _JSON_INTEGER:
                node[key] = int(v)  # type: ignore[index]
            elif isinstance(v, dict | list):
                stack.append(v)


def _field_validation(rt: ResourceType, problems: list[str], opts: WriteOptions) -> list[str]:
    """Strict: one 400 listing every problem; Warn: one warning each, go-yaml's list split
    into its lines (handlers/rest.go and patch.go ``addStrictDecodingWarnings``)."""
    if not problems or opts.field_validation == "Ignore":
        return []
    if opts.field_validation == "Strict":
        raise errors.bad_request(
            f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: '
            f"strict decoding error: {', '.join(problems)}")
    warnings: list[str] = []
    for problem in problems:
        if problem.startswith(YAML_ERRORS_PREFIX):
            warnings += [line.strip() for line in
                         problem.removeprefix(YAML_ERRORS_PREFIX).split("\n")]
        else:
            warnings.append(problem)
    return warnings


def _check_kind(rt: ResourceType, obj: Obj) -> None:
    check_body_kind(obj, into_kind=rt.kind, into_version=rt.api_version, group=rt.group,
                    custom=rt.is_custom)


def check_body_kind(obj: Obj, *, into_kind: str, into_version: str, group: str,
                    custom: bool) -> None:
    """The kind and apiVersion a body names must be the ones the request decodes into
    (``into_kind`` of ``into_version``): the codec makes the type the body names, then converts it
    (runtime.UseOrCreateObject), so another kind is not registered or not convertible
    (handlers/create.go transformDecodeError frames the error)."""
    expected_kind, expected_version = into_kind, into_version
    kind = obj.get("kind")
    api_version = obj.get("apiVersion")
    if custom and not api_version:
        raise errors.bad_request(
            f"the API version in the data () does not match the expected API version "
            f"({expected_version})")
    if (kind and kind != expected_kind) or (api_version and api_version != expected_version):
        got_version = str(api_version or expected_version).rsplit("/", 1)[-1]
        if custom:
            raise errors.bad_request(
                f"the API version in the data ({api_version}) does not match the expected "
                f"API version ({expected_version})"
            ) if kind == expected_kind else errors.invalid(
                str(kind), obj.get("metadata", {}).get("name", "") if isinstance(
                    obj.get("metadata"), dict) else "",
                [Cause("FieldValueInvalid", f'Invalid value: "{kind}": must be {expected_kind}',
                       "kind")], group)
        kind = kind or expected_kind  # the serializer defaults what the body leaves out
        if (api_version or expected_version, kind) not in builtin_kinds():
            # runtime.UseOrCreateObject cannot make the type the body names
            detail = (f'no kind "{kind}" is registered for version '
                      f'"{api_version or expected_version}" in scheme '
                      '"pkg/api/legacyscheme/scheme.go:30"')
        else:
            detail = (f"converting ({got_version}.{kind}) to "
                      f"({group or 'core'}.{expected_kind}): unknown conversion")
        raise errors.bad_request(
            f'{kind} in version "{got_version}" cannot be handled as a {expected_kind}: {detail}')

"""Request bodies: JSON/YAML parsing, duplicate and unknown fields, and built-in types.

The real apiserver decodes built-in kinds into Go structs: a value of the wrong JSON type is a
400, an unknown field is dropped (and reported according to ``fieldValidation``), and a
duplicate key is reported the same way. This module reproduces that on plain dicts, guided by
the kind's OpenAPI schema.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson

from setpoint.cluster.serializer.decodelimits import (
    JSON_STRING,
    ExcessiveAliasing,
    ExpandsTooLarge,
    TooDeep,
    check_json_depth,
    check_yaml,
)
from setpoint.cluster.serializer.gosyntax import go_syntax_error
from setpoint.cluster.serializer.goyamlerrors import go_yaml_error
from setpoint.cluster.serializer.yamlstrict import duplicate_key_errors
from setpoint.cluster.storage.store import request_too_large
from setpoint.machinery import errors
from setpoint.machinery.fielderrors import unmarshal_kind
from setpoint.machinery.schema import Schema, definitions

FIELD_VALIDATION = ("", "Ignore", "Strict", "Warn")


@dataclass
class Decoded:
    """A parsed body with what strict decoding found in it."""

    obj: Any
    duplicates: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    # go-yaml's strict-mode errors for repeated keys of a YAML body ("line N: key ...")
    yaml_duplicates: list[str] = field(default_factory=list)
    yaml: bool = False


class _Dupes(dict[str, Any]):
    """A dict that remembers which of its keys appeared more than once."""

    __slots__ = ("dupes",)
    dupes: list[str]


def _pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    d: dict[str, Any] = {}
    dupes: list[str] = []
    for k, v in pairs:
        if k in d:
            dupes.append(k)
            prev = d[k]
            if isinstance(prev, dict) and isinstance(v, dict):
                # Go decodes a repeated object key into the same map or struct: they merge
                v = {**prev, **v}
        d[k] = v
    if dupes:
        out = _Dupes(d)
        out.dupes = dupes
        return out
    return d


def _collect_dupes(obj: Any, path: str, out: list[str]) -> Any:
    """Replace _Dupes by plain dicts, recording the paths of duplicated keys."""
    if isinstance(obj, dict):
        if isinstance(obj, _Dupes):
            out.extend(f"{path}.{k}" if path else k for k in obj.dupes)
            obj = dict(obj)
        for k, v in obj.items():
            if isinstance(v, dict | list):
                obj[k] = _collect_dupes(v, f"{path}.{k}" if path else k, out)
        return obj
    if isinstance(obj, list):
        return [_collect_dupes(v, f"{path}[{i}]", out) for i, v in enumerate(obj)]
    return obj


def parse_body(raw: bytes, content_type: str, *, kind: str, track_duplicates: bool) -> Decoded:
    """Parse a JSON or YAML request body. ``kind`` names the expected kind in errors."""
    if content_type in ("application/yaml", "application/apply-patch+yaml"):
        decoded = _parse_yaml(raw, kind, apply=content_type == "application/apply-patch+yaml")
        if track_duplicates and content_type == "application/yaml":
            decoded.yaml_duplicates = duplicate_key_errors(raw)
        return decoded
    try:
        check_json_depth(raw)
    except TooDeep as exc:
        raise _json_parse_error(kind, str(exc), raw) from None
    parse_failed = False
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        parse_failed = True  # fall through: NaN, huge exponents, lone surrogates, bad syntax
    else:
        if not track_duplicates:
            return Decoded(obj)
        if _plainly_unrepeated(obj, raw):
            return Decoded(obj)  # no key repeated, nothing for _json_compatible to change
        members = _members_if_plain(obj)
        # every colon of the text separates a member or lies in a string, so as many colons
        # as members kept means none in strings and no key repeated; a body with colons in
        # its strings (times, images) has them counted without its strings
        if members == raw.count(b":") or members == _member_separators(raw):
            return Decoded(obj)  # no key repeated, nothing for _json_compatible to change
    syntax = go_syntax_error(raw) if parse_failed else None
    if syntax is not None:  # what Go's scanner refuses (NaN too, which json.loads takes)
        raise _json_parse_error(kind, syntax, raw)
    try:
        obj = json.loads(raw, object_pairs_hook=_pairs_hook)
    except ValueError as exc:
        raise _json_parse_error(kind, _json_error(exc), raw) from None
    dupes: list[str] = []
    obj = _collect_dupes(obj, "", dupes)
    return Decoded(_json_compatible(obj), dupes)


def _plainly_unrepeated(obj: Any, raw: bytes) -> bool:
    """Whether the JSON text ``raw``, which orjson parsed as ``obj``, repeats no key and
    holds no integer beyond int64, read in C-speed passes (most bodies).

    Written again by orjson, ``obj`` has one colon per member it kept and the colons of
    its strings; the text has one per member it spells and the same strings' colons,
    unless a ``\\u`` escape spells one. A repeated key is a member (and its strings'
    colons) that orjson dropped: the text has more colons. An integer beyond int64 needs
    a run of 19 digits. A text with an escape or such a run is left to the walk of its
    value (:func:`_members_if_plain`)."""
    if b"\\u" in raw or _LONG_DIGITS in raw.translate(_DIGITS_AS_ZEROS):
        return False
    try:
        return orjson.dumps(obj).count(b":") == raw.count(b":")
    except orjson.JSONEncodeError:
        return False


# the digits an integer beyond int64 takes at least (found in a string: only a longer way),
# looked for in the text with every digit made "0" and every other byte a space
_LONG_DIGITS = b"0" * 19
_DIGITS_AS_ZEROS = bytes(48 if 48 <= c <= 57 else 32 for c in range(256))


def _member_separators(raw: bytes) -> int:
    """The members of every object in the JSON text ``raw``: one colon each, outside strings
    (JSON has no other colon)."""
    return JSON_STRING.sub(b"", raw).count(b":")


def _members_if_plain(value: Any) -> int:
    """The members of every object in a value orjson parsed, or -1 when the value holds an
    integer beyond int64, which Go's decoder makes a float (see ``_json_compatible``).

    orjson keeps the last of repeated keys without a word; a parsed value with fewer members
    than its text has colons therefore repeated a key, and is parsed again the slow way,
    which reports each repetition as the apiserver does."""
    members = 0
    stack = [value]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is dict:
            members += len(node)
            children = node.values()
        elif kind is list:
            children = node
        else:
            return -1 if kind is int and node > _INT64 else members
        for v in children:
            kind = type(v)
            if kind is dict or kind is list:
                stack.append(v)
            elif kind is int and v > _INT64:
                return -1
    return members


def _json_parse_error(kind: str, detail: str, raw: bytes) -> errors.StatusError:
    return errors.bad_request(
        f"the object provided is unrecognized (must be of type {kind}): couldn't get "
        f"version/kind; json parse error: {detail} ({_excerpt(raw)})")


def check_type_meta(obj: Any, kind: str, raw: bytes) -> None:
    """The json serializer reads an object's apiVersion and kind into strings before anything
    else (apimachinery runtime/serializer/json/meta.go ``SimpleMetaFactory.Interpret``): the
    first of them, in the document's order, that is not a string (null is) fails the body."""
    if not isinstance(obj, dict):
        return
    for key, value in obj.items():
        if key in ("apiVersion", "kind") and value is not None and not isinstance(value, str):
            raise _json_parse_error(kind, f"json: cannot unmarshal {unmarshal_kind(value)} "
                                          f"into Go struct field .{key} of type string", raw)


def _parse_yaml(raw: bytes, kind: str, *, apply: bool) -> Decoded:
    import yaml  # on first use: not loaded before the first request (start-up time)

    try:
        if raw.lstrip()[:1] == b"{":
            # JSON is YAML, and most apply bodies are JSON: the JSON parser is far faster
            try:
                check_json_depth(raw)
                return Decoded(_json_compatible(orjson.loads(raw)))
            except (orjson.JSONDecodeError, TooDeep):
                pass  # YAML flow syntax that is not JSON, or go-yaml's own depth error
        # the events are counted before the document is built: composing a deep document
        # recurses, and an aliased one is expanded by everything that walks it afterwards
        check_yaml(raw)
        obj = yaml.safe_load(raw)
    except ExpandsTooLarge as exc:
        # kube-apiserver expands it (sigs.k8s.io/yaml) and etcd refuses what it stores
        raise request_too_large(exc.size) or errors.internal(str(exc)) from None
    except (yaml.YAMLError, TooDeep, ExcessiveAliasing) as exc:
        raise _yaml_syntax_error(kind, _yaml_error(exc), raw, apply=apply) from None
    return Decoded(_json_compatible(obj), yaml=True)


def strict_decoding_order(body: Decoded, unknown: list[str]) -> list[str]:
    """The strict decoding problems of a built-in kind's body in the order the apiserver
    lists them (k8s.io/apimachinery's json serializer over sigs.k8s.io/json): as the decoder
    meets them in the document (a YAML body is met as the JSON it converts to, keys sorted),
    and a repeated unknown field, or anything beneath one, only as unknown."""
    if not unknown and not body.duplicates:
        return []  # (most bodies: nothing to order, so no positions to number)
    positions: dict[str, int] = {}
    _number_paths(body.obj, "", positions, sort_keys=body.yaml)
    unknown_set = set(unknown)
    events = [(p, f'unknown field "{p}"') for p in unknown]
    events += [(p, f'duplicate field "{p}"') for p in body.duplicates
               if not any(p == u or p.startswith((u + ".", u + "[")) for u in unknown_set)]
    events.sort(key=lambda e: positions.get(e[0], len(positions)))
    return [text for _, text in events]


def _number_paths(value: Any, path: str, out: dict[str, int], *, sort_keys: bool) -> None:
    if isinstance(value, dict):
        for k in sorted(value) if sort_keys else value:
            child = f"{path}.{k}" if path else str(k)
            out.setdefault(child, len(out))
            _number_paths(value[k], child, out, sort_keys=sort_keys)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _number_paths(item, f"{path}[{i}]", out, sort_keys=sort_keys)


def _yaml_error(exc: Exception) -> str:
    if isinstance(exc, TooDeep | ExcessiveAliasing):
        return f"yaml: {exc}"  # go-yaml's failf prefix
    return go_yaml_error(exc)


def _yaml_syntax_error(kind: str, go_error: str, raw: bytes, *,
                       apply: bool) -> errors.StatusError:
    """A YAML body go-yaml refuses. An apply configuration is read by sigs.k8s.io/yaml's
    Unmarshal, which prefixes "error converting YAML to JSON", and patch.go's applyPatcher
    ("error decoding YAML: %v"); any other YAML body by the YAML serializer's
    ``yaml.YAMLToJSON`` (go-yaml's error as is), whose failure create.go and update.go
    report through handlers/rest.go transformDecodeError, the body summarized after it."""
    if apply:
        return errors.bad_request(
            f"error decoding YAML: error converting YAML to JSON: {go_error}")
    return errors.bad_request(f"the object provided is unrecognized (must be of type {kind}): "
                              f"{go_error} ({_excerpt(raw)})")


_INT64 = 2**63 - 1


def _json_compatible(value: Any) -> Any:
    """What Go's decoder would make of a parsed value: integers beyond int64 become floats,
    lone surrogates become U+FFFD, YAML timestamps and other scalars become their text."""
    if isinstance(value, dict):
        return {_json_compatible(str(k)): _json_compatible(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_compatible(v) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return float(value) if abs(value) > _INT64 else value
    if isinstance(value, float):
        return value
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return str(value)


def _json_error(exc: Exception) -> str:
    msg = str(exc)
    if "Expecting" in msg and ("delimiter" in msg or "value" in msg):
        return "unexpected end of JSON input" if "char" in msg else msg
    return msg.split(":")[0]


def _excerpt(raw: bytes, limit: int = 30) -> str:
    """handlers/rest.go summarizeData(body, 30): an object's first 30 bytes as text, anything
    else in hex, " ..." when cut."""
    if not raw:
        return "<empty>"
    head = raw[:limit]
    text = head.decode("utf-8", "replace") if raw[:1] == b"{" else head.hex()
    return text + " ..." if len(raw) > limit else text


# -- typed decoding of built-in kinds ------------------------------------------------------

_GO_TYPES = {"string": "string", "boolean": "bool", "number": "float64", "integer": "int64"}



def _go_type(schema: Schema) -> str:
    t = schema.type
    if t == "integer":
        return "int32" if schema.raw.get("format") == "int32" else "int64"
    if t == "array":
        item = schema.items
        return "[]" + (_go_type(item) if item is not None else "interface {}")
    if t == "object":
        if schema.properties:
            # Go names a struct type by its package and name: v1.ObjectMeta
            parts = (schema.ref or "").split(".")
            return f"{parts[-2]}.{parts[-1]}" if len(parts) >= 2 else "struct"
        el = schema.additional_properties
        return "map[string]" + (_go_type(el) if el is not None else "interface {}")
    return _GO_TYPES.get(t or "", "interface {}")


class _TypeMismatch(Exception):
    pass


# What Go's decoder stores in an int32 or int64 field: a number literal strconv.ParseInt takes
# and the field does not overflow (encoding/json decode.go literalStore, "number " + literal)
_INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


def decode_builtin(obj: dict[str, Any], schema: Schema, kind: str) -> tuple[dict[str, Any],
                                                                              list[str]]:
    """Check value types against ``schema`` and drop unknown fields.

    Returns the cleaned object and the paths of the unknown fields; a value of the wrong type
    raises the 400 the apiserver's JSON decoder gives.
    """
    unknown: list[str] = []
    try:
        out = _decode(obj, schema, "", unknown, kind)
    except _TypeMismatch as exc:
        raise errors.bad_request(
            f'{kind} in version "{_version_of(obj)}" cannot be handled as a {kind}: {exc}'
        ) from None
    return out, unknown


_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


def check_object_meta(meta: dict[str, Any], kind: str, version: str) -> None:
    """Refuse a custom resource's metadata whose values are of the wrong JSON type.

    The CRD handler's decoder round-trips ``metadata`` through a Go ``ObjectMeta``
    (apiextensions-apiserver pkg/apiserver/schema/objectmeta/coerce.go,
    GetObjectMetaWithOptions, malformed fields not dropped for request bodies); its
    encoding/json error reaches the client as transformDecodeError's 400
    (k8s.io/apiserver/pkg/endpoints/handlers/rest.go)."""
    schema = definitions().get(_OBJECT_META)
    try:
        _decode(meta, schema, "", [], "ObjectMeta")
    except _TypeMismatch as exc:
        raise errors.bad_request(
            f'{kind} in version "{version}" cannot be handled as a {kind}: {exc}') from None


def _version_of(obj: dict[str, Any]) -> str:
    api_version = str(obj.get("apiVersion") or "v1")
    return api_version.rsplit("/", 1)[-1]


class _Plan:
    """What decoding reads of one schema, read once: the schema's own properties are
    computed on every access, and the decoder asks them for every value of every body."""

    __slots__ = ("additional", "additional_passthrough", "additional_plain", "format",
                 "int_or_string", "items", "plain", "properties", "quantity", "struct", "type")

    def __init__(self, schema: Schema) -> None:
        self.int_or_string = schema.int_or_string
        fmt = schema.raw.get("format")
        self.format = fmt
        self.quantity = fmt == "quantity"
        self.type = schema.type
        self.properties: dict[str, Schema] = {}
        self.plain: frozenset[str] = frozenset()
        self.struct: str | None = None
        self.additional: Schema | None = None
        self.additional_passthrough = True
        self.additional_plain = False
        self.items: Schema | None = None
        if self.int_or_string or self.type is None:
            return
        if self.type == "object":
            self.properties = schema.properties
            self.plain = frozenset(k for k, sub in self.properties.items()
                                   if _plain_string(sub))
            self.struct = schema.ref.rsplit(".", 1)[-1] if schema.ref else None
            el = schema.additional_properties
            self.additional = el
            self.additional_passthrough = el is None or (el.type is None
                                                         and not el.int_or_string)
            self.additional_plain = el is not None and _plain_string(el)
        elif self.type == "array":
            self.items = schema.items


_plans: dict[Schema, _Plan] = {}  # (the built-in kinds' schemas: a bounded set, as _plain's)


def _plan(schema: Schema) -> _Plan:
    plan = _plans.get(schema)
    if plan is None:
        plan = _plans[schema] = _Plan(schema)
    return plan


def _decode(value: Any, schema: Schema, path: str, unknown: list[str], kind: str) -> Any:
    if value is None:
        return None
    plan = _plans.get(schema) or _plan(schema)
    if plan.int_or_string:
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise _TypeMismatch(_mismatch(value, path, kind, "intstr.IntOrString"))
        if plan.quantity and isinstance(value, int | float):
            return _number_to_quantity(value)
        return value
    t = plan.type
    if t is None:
        return value  # free-form (RawExtension, JSON)
    if t == "object":
        if not isinstance(value, dict):
            raise _TypeMismatch(_mismatch(value, path, kind, _go_type(schema)))
        props = plan.properties
        if props:
            out: dict[str, Any] = {}
            struct = kind if plan.struct is None else plan.struct  # (_struct_name)
            plain = plan.plain
            for k, v in value.items():
                if type(v) is str and k in plain:
                    out[k] = v  # (most fields: no path to spell, no call)
                    continue
                sub = props.get(k)
                child = f"{path}.{k}" if path else k
                if sub is None:
                    unknown.append(child)
                    continue
                decoded = _decode(v, sub, child, unknown, struct)
                if decoded is None or (not decoded and _omitted_when_empty(sub, decoded)
                                       and (struct, k) not in KEPT_WHEN_EMPTY):
                    continue
                out[k] = decoded
            return out
        if plan.additional_passthrough:
            return value
        el = plan.additional
        assert el is not None
        if plan.additional_plain and _all_strings(value):
            return dict(value)  # labels, annotations, a ConfigMap's data
        # a null member of a Go map is the element type's zero value ("" in a ConfigMap's
        # data, as encoding/json stores it)
        return {k: _decode(v, el, f"{path}.{k}" if path else k, unknown, kind)
                if v is not None else _zero(el) for k, v in value.items()}
    if t == "array":
        if not isinstance(value, list):
            raise _TypeMismatch(_mismatch(value, path, kind, _go_type(schema)))
        item = plan.items
        if item is None:
            return value
        return [_decode(v, item, f"{path}[{i}]", unknown, kind) if v is not None
                else _zero(item) for i, v in enumerate(value)]
    if t == "string":
        if not isinstance(value, str):
            raise _TypeMismatch(_mismatch(value, path, kind, "string"))
        fmt = plan.format
        if fmt == "byte":
            _check_base64(value)
        elif fmt == "date-time":
            return _normalized_time(value, schema)
        return value
    if t == "boolean":
        if not isinstance(value, bool):
            raise _TypeMismatch(_mismatch(value, path, kind, "bool"))
        return value
    if t == "integer":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _TypeMismatch(_mismatch(value, path, kind, _go_type(schema)))
        go_type = _go_type(schema)
        low, high = _INT_RANGES[go_type]
        if isinstance(value, float):
            if not value.is_integer() or not low <= value <= high:
                raise _TypeMismatch(_mismatch(value, path, kind, go_type, literal=True))
            return int(value)
        if not low <= value <= high:
            raise _TypeMismatch(_mismatch(value, path, kind, go_type, literal=True))
        return value
    if t == "number":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _TypeMismatch(_mismatch(value, path, kind, "float64"))
        return value
    return value


_plain: dict[Schema, bool] = {}  # (the built-in kinds' schemas: a bounded set)


def _plain_string(schema: Schema) -> bool:
    """A string field a string value passes through unchanged (no format to check)."""
    plain = _plain.get(schema)
    if plain is None:
        plain = (not schema.int_or_string and schema.type == "string"
                 and schema.raw.get("format") not in ("byte", "date-time"))
        _plain[schema] = plain
    return plain


def _all_strings(value: dict[str, Any]) -> bool:
    for v in value.values():  # noqa: SIM110 (a loop: no generator per map)
        if type(v) is not str:
            return False
    return True


# Slices Go's typed decoding leaves non-nil when the body has ``[]``, whose validation tells
# that from an absent list (validateWindows: ``SupplementalGroups != nil``): kept here for
# validation; the strategy's Canonicalize drops them again, as encoding's omitempty would.
KEPT_WHEN_EMPTY = frozenset({("PodSecurityContext", "supplementalGroups")})


def _omitted_when_empty(schema: Schema, value: Any) -> bool:
    """Go's ``omitempty`` drops empty maps and slices; structs (even empty ones) stay."""
    if isinstance(value, list):
        return schema.type == "array"
    if isinstance(value, dict):
        return schema.additional_properties is not None and not schema.properties
    return False


def _check_base64(value: str) -> None:
    import base64
    import binascii

    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        bad = next((i for i, ch in enumerate(value) if not (ch.isalnum() or ch in "+/=")),
                   len(value) - 1)
        raise _TypeMismatch(f"illegal base64 data at input byte {bad}") from None


_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")
_MICRO_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}(Z|[+-]\d{2}:\d{2})$")


def _normalized_time(value: str, schema: Schema) -> str:
    """A timestamp as Go writes it back: metav1.Time in UTC whole seconds, metav1.MicroTime
    in UTC with six fraction digits. MicroTime insists on exactly six digits on input."""
    micro = schema.ref == "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime"
    if micro and not _MICRO_TIME.match(value):
        raise _TypeMismatch(
            f'parsing time "{value}" as "2006-01-02T15:04:05.000000Z07:00": cannot parse '
            f'"{value[19:]}" as ".000000"')
    if not value:
        return value
    if not micro and not _TIME.match(value):
        raise _TypeMismatch(
            f'parsing time "{value}" as "2006-01-02T15:04:05Z07:00": cannot parse "{value}" as '
            '"2006"')
    if value.endswith("Z") and (micro or "." not in value):
        return value  # already canonical
    moment = datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)
    if micro:
        return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _struct_name(schema: Schema, outer: str) -> str:
    """The Go struct a field belongs to, as encoding/json names it in errors: the innermost
    struct type (DeploymentSpec for spec.replicas), the kind at the top."""
    return schema.ref.rsplit(".", 1)[-1] if schema.ref else outer


def _zero(schema: Schema) -> Any:
    """What a JSON null becomes as an element of a Go slice or map: the element type's zero
    value."""
    if schema.type == "object" and schema.properties:
        return {}
    return {"string": "", "integer": 0, "number": 0, "boolean": False}.get(schema.type or "")


def _number_literal(value: int | float) -> str:
    """A number as the literal Go's error quotes (the parsed value stands in for it)."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return repr(value)


def _mismatch(value: Any, path: str, kind: str, go_type: str, *, literal: bool = False) -> str:
    jt = unmarshal_kind(value)
    if jt == "number" and (literal or (isinstance(value, float) and not value.is_integer())):
        jt = f"number {_number_literal(value)}"
    return f"json: cannot unmarshal {jt} into Go struct field {kind}.{path} of type {go_type}"


def _number_to_quantity(value: float) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value)

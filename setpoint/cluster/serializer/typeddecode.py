"""Typed decoding of built-in kinds: a body checked as the apiserver's JSON decoder fills a
Go struct.

A value of the wrong JSON type is the 400 encoding/json's ``UnmarshalTypeError`` becomes
(``<Kind> in version "v1" cannot be handled as a <Kind>: ...``), an unknown field is dropped
and its path returned (for ``fieldValidation``), an empty map or list of an ``omitempty``
field vanishes, and base64 and time formats are checked, all guided by the kind's OpenAPI
schema. Custom resources' ``metadata`` goes through the same check (:func:`check_object_meta`).
"""

from __future__ import annotations

import calendar
import re
from typing import Any

import orjson

from setpoint.cluster.serializer.decodelimits import JSON_STRING
from setpoint.cluster.serializer.gobase64 import corrupt_input_offset
from setpoint.cluster.serializer.rfc3339 import rfc3339_error, rfc3339_micro_utc, rfc3339_utc
from setpoint.machinery import errors
from setpoint.machinery.fielderrors import unmarshal_kind
from setpoint.machinery.gofmt import type_name
from setpoint.machinery.schema import Schema, definitions

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
    """A value of the wrong JSON type: the message is encoding/json's; ``unstructured`` is
    what runtime.DefaultUnstructuredConverter says of the same value (a strategic merge
    patch's result is converted from a map, not decoded from JSON), when it refuses it."""

    def __init__(self, message: str, unstructured: str | None = None,
                 number: float | None = None) -> None:
        super().__init__(message)
        self.unstructured = unstructured
        # a float whose literal the message quotes (see _literal_in: as the text spells it)
        self.number = number


def _kind_of(value: Any) -> str:
    """reflect's Kind of a decoded JSON value as ``%v`` prints it: a scalar's type name, a
    container's kind."""
    if isinstance(value, list):
        return "slice"
    return "map" if value is None or isinstance(value, dict) else type_name(value)


def _unstructured_scalar(value: Any, go_kind: str) -> str | None:
    """apimachinery runtime/converter.go fromUnstructured into a bool, number or string
    field: only numbers convert between kinds (an integer into a string is the one Go
    conversion JSON forbids); anything else is "unrecognized type"."""
    if go_kind.startswith("int") and isinstance(value, float) and not isinstance(value, bool):
        return None if value.is_integer() else f"cannot convert float64 to {go_kind}"
    if go_kind == "string" and isinstance(value, int) and not isinstance(value, bool):
        return f"cannot convert int64 to {go_kind}"
    return f"unrecognized type: {go_kind}"


def unstructured_conversion_error(obj: dict[str, Any], schema: Schema, kind: str) -> str | None:
    """What runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation answers for
    the first value of ``obj`` of the wrong type (None when it has none, or it is one the
    converter hands to a type's own JSON decoding)."""
    try:
        _decode(obj, schema, "", [], kind)
    except _TypeMismatch as exc:
        return exc.unstructured
    return None


# What Go's decoder stores in an int32 or int64 field: a number literal strconv.ParseInt takes
# and the field does not overflow (encoding/json decode.go literalStore, "number " + literal)
_INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}
_INT32_LOW, _INT32_HIGH = _INT_RANGES["int32"]
# resource.ErrFormatWrong: what Quantity.UnmarshalJSON answers for any value ParseQuantity
# cannot read (apimachinery pkg/api/resource/quantity.go), a bool or an object too
_QUANTITY_FORMAT = ("quantities must match the regular expression "
                    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")


def _unmarshal_text(value: Any) -> str:
    """encoding/json's UnmarshalTypeError Value: the JSON kind, a number with its literal."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f"number {_number_literal(value)}"
    return unmarshal_kind(value)


def decode_builtin(obj: dict[str, Any], schema: Schema, kind: str, *,
                   literals: bytes | None = None) -> tuple[dict[str, Any], list[str]]:
    """Check value types against ``schema`` and drop unknown fields.

    Returns the cleaned object and the paths of the unknown fields; a value of the wrong type
    raises the 400 the apiserver's JSON decoder gives.

    ``literals`` is the JSON text ``obj`` was read from when Go decodes that very text into
    the struct: then a float literal (``3.0``, ``1e2``) is no integer, as literalStore reads
    an integer field with strconv.ParseInt (sigs.k8s.io/json internal/golang/encoding/json
    decode.go). Without it (YAML converted by sigs.k8s.io/yaml, which writes float64 3 back
    as ``3``; a strategic merge patch's map, which runtime/converter.go converts when
    integral), an integral float is its integer.
    """
    unknown: list[str] = []
    try:
        out = _decode(obj, schema, "", unknown, kind, literals is not None)
    except _TypeMismatch as exc:
        message = str(exc)
        if literals is not None and exc.number is not None:
            spelled = _literal_in(literals, exc.number)
            if spelled is not None:
                message = message.replace(f"number {_number_literal(exc.number)} ",
                                          f"number {spelled} ", 1)
        raise errors.bad_request(
            f'{kind} in version "{_version_of(obj)}" cannot be handled as a {kind}: {message}'
        ) from None
    return out, unknown


_JSON_NUMBER = re.compile(rb"-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")


def _literal_in(text: bytes, number: float) -> str | None:
    """How the JSON ``text`` spells the float ``number`` (a literal with a fraction or an
    exponent, or an integer too long for int64): Go's UnmarshalTypeError quotes the literal
    ("number 3.0", "number 1e2"). Read only for an error, in one pass over the text with its
    strings blanked (a string holds no literal)."""
    for match in _JSON_NUMBER.finditer(JSON_STRING.sub(b'""', text)):
        token = match.group()
        if (len(token) > 18 or any(c in token for c in b".eE")) and float(token) == number:
            return token.decode()
    return None


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


def object_meta_error(meta: Any) -> str | None:
    """What encoding/json says when ``meta`` is unmarshalled into an ObjectMeta (an
    embedded resource's metadata, objectmeta.GetObjectMetaWithOptions), or None."""
    if meta is None:
        return None
    if not isinstance(meta, dict):
        return f"json: cannot unmarshal {unmarshal_kind(meta)} into Go value of type v1.ObjectMeta"
    try:
        _decode(meta, definitions().get(_OBJECT_META), "", [], "ObjectMeta")
    except _TypeMismatch as exc:
        return str(exc)
    return None


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


def _decode(value: Any, schema: Schema, path: str, unknown: list[str], kind: str,
            exact: bool = False) -> Any:
    """``value`` decoded as ``schema``; ``exact``: a float is a float literal of the JSON text
    Go decodes (see :func:`decode_builtin`)."""
    if value is None:
        return None
    plan = _plans.get(schema) or _plan(schema)
    if plan.int_or_string:
        if plan.quantity:
            if isinstance(value, bool) or not isinstance(value, str | int | float):
                raise _TypeMismatch(_QUANTITY_FORMAT, None)
            return _number_to_quantity(value) if isinstance(value, int | float) else value
        if isinstance(value, str):
            return value
        # intstr.go UnmarshalJSON: anything but a string is json.Unmarshal'd into IntVal, an
        # int32, whose UnmarshalTypeError the outer decoder gives the field's context
        if isinstance(value, bool) or not isinstance(value, int | float) or not (
                _INT32_LOW <= value <= _INT32_HIGH) or (
                isinstance(value, float) and (exact or not value.is_integer())):
            number = value if isinstance(value, float) else None
            raise _TypeMismatch(_mismatch(value, path, kind, "int32", literal=True),
                                f"json: cannot unmarshal {_unmarshal_text(value)} into Go "
                                "value of type int32", number=number)
        return int(value)
    t = plan.type
    if t is None:
        return value  # free-form (RawExtension, JSON)
    if t == "object":
        if not isinstance(value, dict):
            raise _TypeMismatch(_mismatch(value, path, kind, _go_type(schema)),
                                f"cannot restore struct from: {_kind_of(value)}"
                                if plan.properties else
                                f"cannot restore map from {_kind_of(value)}")
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
                if not path and type(v) is dict and k != "metadata":
                    decoded = _decode_member(v, sub, child, unknown, struct, exact)
                else:
                    decoded = _decode(v, sub, child, unknown, struct, exact)
                if decoded is None or (not decoded and _omitted_when_empty(sub, decoded)
                                       and (struct, k) not in KEPT_WHEN_EMPTY
                                       and child != RESET_MANAGED_FIELDS):
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
        return {k: _decode(v, el, f"{path}.{k}" if path else k, unknown, kind, exact)
                if v is not None else _zero(el) for k, v in value.items()}
    if t == "array":
        if not isinstance(value, list):
            raise _TypeMismatch(_mismatch(value, path, kind, _go_type(schema)),
                                f"cannot restore slice from {_kind_of(value)}")
        item = plan.items
        if item is None:
            return value
        return [_decode(v, item, f"{path}[{i}]", unknown, kind, exact) if v is not None
                else _zero(item) for i, v in enumerate(value)]
    if t == "string":
        if not isinstance(value, str):
            # a []byte or a Time decodes its JSON itself (None: the JSON text stands)
            raise _TypeMismatch(_mismatch(value, path, kind, "string"),
                                None if plan.format in ("byte", "date-time")
                                else _unstructured_scalar(value, "string"))
        fmt = plan.format
        if fmt == "byte":
            _check_base64(value)
        elif fmt == "date-time":
            return _normalized_time(value, schema)
        return value
    if t == "boolean":
        if not isinstance(value, bool):
            raise _TypeMismatch(_mismatch(value, path, kind, "bool"),
                                _unstructured_scalar(value, "bool"))
        return value
    if t == "integer":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _TypeMismatch(_mismatch(value, path, kind, _go_type(schema)),
                                _unstructured_scalar(value, _go_type(schema)))
        go_type = _go_type(schema)
        low, high = _INT_RANGES[go_type]
        if isinstance(value, float):
            if exact or not value.is_integer() or not low <= value <= high:
                raise _TypeMismatch(_mismatch(value, path, kind, go_type, literal=True),
                                    _unstructured_scalar(value, go_type), number=value)
            return int(value)
        if not low <= value <= high:
            raise _TypeMismatch(_mismatch(value, path, kind, go_type, literal=True))
        return value
    if t == "number":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _TypeMismatch(_mismatch(value, path, kind, "float64"),
                                _unstructured_scalar(value, "float64"))
        return value
    return value


# What an object's top-level members (a spec, a status) decoded to, as JSON, by (plan, struct
# name, ``exact``, JSON text) of the member as sent, when decoding found no unknown field in
# it: the spec a status write sends back unchanged, the pod template every replica's spec
# repeats. Decoding a member depends on nothing else (its path only names errors and unknown
# fields; metadata, whose ``managedFields: []`` depends on its path, is never remembered),
# and a decoded value reads back from its JSON as itself (orjson keeps the order, ints and
# bools). Errors are never remembered: their messages are built as before.
_DECODED: dict[tuple[_Plan, str, bool, bytes], bytes] = {}
_DECODED_MAX = 1024


def _decode_member(value: dict[str, Any], schema: Schema, path: str, unknown: list[str],
                   kind: str, exact: bool) -> Any:
    """``_decode`` of a top-level member, read back for a text decoded before."""
    plan = _plans.get(schema) or _plan(schema)
    if not plan.properties:
        return _decode(value, schema, path, unknown, kind, exact)
    try:
        text = orjson.dumps(value)
    except TypeError:  # (orjson.JSONEncodeError: an integer past 64 bits) walked as before
        return _decode(value, schema, path, unknown, kind, exact)
    key = (plan, kind, exact, text)
    decoded = _DECODED.get(key)
    if decoded is not None:
        return orjson.loads(decoded)  # a fresh copy: the caller defaults it in place
    seen = len(unknown)
    out = _decode(value, schema, path, unknown, kind, exact)
    if len(unknown) == seen:
        if len(_DECODED) >= _DECODED_MAX:
            _DECODED.clear()
        _DECODED[key] = orjson.dumps(out)
    return out


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
# An object's ``managedFields: []`` decodes non-nil too: the field manager reads it as a reset
# of the tracking (fieldmanager.go isResetManagedFields) and then drops the key itself.
RESET_MANAGED_FIELDS = "metadata.managedFields"


def _omitted_when_empty(schema: Schema, value: Any) -> bool:
    """Go's ``omitempty`` drops empty maps and slices; structs (even empty ones) stay."""
    if isinstance(value, list):
        return schema.type == "array"
    if isinstance(value, dict):
        return schema.additional_properties is not None and not schema.properties
    return False


def _check_base64(value: str) -> None:
    offset = corrupt_input_offset(value)
    if offset is not None:
        raise _TypeMismatch(f"illegal base64 data at input byte {offset}")


_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")
_MICRO_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}(Z|[+-]\d{2}:\d{2})$")


# metav1.Time and MicroTime texts Go's parser took and writes back as they are: a time is
# decoded again at every write of its object (its creationTimestamp), and parses the same
_CANONICAL_TIMES: dict[tuple[str, bool], None] = {}
_CANONICAL_TIMES_MAX = 4096


def _normalized_time(value: str, schema: Schema) -> str:
    """A timestamp as Go writes it back: metav1.Time in UTC whole seconds, metav1.MicroTime
    in UTC with six fraction digits (its layout insists on exactly six on input). Go's own
    parser, element by element: a month 13 or a February 30 is its error too, and it takes
    what a pattern would not (a one-digit hour, a comma before a fraction)."""
    if not value:
        return value
    micro = schema.ref == "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime"
    if (value, micro) in _CANONICAL_TIMES:
        return value  # (every write's creationTimestamp: parsed once)
    if _canonical_in_range(value, micro):
        return _canonical(value, micro)  # (an Event's eventTime: new at every write)
    problem = rfc3339_error(value, micro=micro)
    if problem is not None:
        raise _TypeMismatch(problem)
    if micro:
        if value.endswith("Z") and _MICRO_TIME.match(value):
            return _canonical(value, micro)
        return rfc3339_micro_utc(value)
    if value.endswith("Z") and "." not in value and _TIME.match(value):
        return _canonical(value, micro)
    return rfc3339_utc(value)


# the text Go writes (UTC, whole seconds or exactly six fraction digits), in ASCII digits
_WRITTEN_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z")
_WRITTEN_MICRO_TIME = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z")


def _canonical_in_range(value: str, micro: bool) -> bool:
    """Whether ``value`` is written as Go writes the type and Go's parser takes it: each
    element within the range format.go's ``parse`` checks (a day against its month), so
    that the element-by-element parse is left for the rest and for the errors. Year 0 is
    left to it too."""
    if not (_WRITTEN_MICRO_TIME if micro else _WRITTEN_TIME).fullmatch(value):
        return False
    year, month, day = int(value[:4]), int(value[5:7]), int(value[8:10])
    return (year > 0 and 1 <= month <= 12 and int(value[11:13]) <= 23
            and int(value[14:16]) <= 59 and int(value[17:19]) <= 59
            and 1 <= day <= calendar.monthrange(year, month)[1])


def _canonical(value: str, micro: bool) -> str:
    if len(_CANONICAL_TIMES) >= _CANONICAL_TIMES_MAX:
        _CANONICAL_TIMES.clear()
    _CANONICAL_TIMES[value, micro] = None
    return value  # already canonical


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

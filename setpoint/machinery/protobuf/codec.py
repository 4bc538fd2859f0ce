"""Protobuf messages <-> the JSON-compatible dicts the server keeps.

Decoding gives exactly what the same Go object would marshal to as JSON:

- gogo writes every non-pointer scalar, so a zero scalar on the wire is dropped unless the
  field's JSON tag has no ``omitempty`` or it is a pointer (present means set);
- an absent slice, map or bytes field without ``omitempty`` is ``null``, as Go reads it back
  as nil (a list's ``items``, ``TokenRequest.spec.audiences``);
- non-pointer structs are always written and always appear in JSON (``omitempty`` does not
  omit structs): ``spec: {}``, ``creationTimestamp: null``;
- the types with their own JSON form (``Time``, ``MicroTime``, ``Quantity``, ``IntOrString``,
  ``RawExtension``, ``FieldsV1``, the slice wrappers ``Verbs`` and ``ExtraValue``) are mapped
  here; ``bytes`` become base64 strings; inline embedded structs merge into their parent.

A ``RawExtension`` may hold a whole object behind the ``k8s\\x00`` envelope, so the decoding of
whole objects (``decode``) is here too, beside the messages it recurses into.

Encoding is the inverse, writing fields in number order as gogo does, so that Go clients read
the bytes as they would read the real apiserver's.
"""

from __future__ import annotations

import base64
import binascii
import functools
import struct
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

import orjson

from setpoint.machinery import gojson
from setpoint.machinery.protobuf import wire
from setpoint.machinery.protobuf.table import META, Field, table
from setpoint.machinery.protobuf.unknown import CONTENT_TYPE, MAGIC, Unknown, read_unknown
from setpoint.machinery.protobuf.wire import ProtobufError, scan

TIME = META + "Time"
MICRO_TIME = META + "MicroTime"
FIELDS_V1 = META + "FieldsV1"
QUANTITY = "k8s.io.apimachinery.pkg.api.resource.Quantity"
QUANTITY_VALUE = "k8s.io.apimachinery.pkg.api.resource.QuantityValue"
INT_OR_STRING = "k8s.io.apimachinery.pkg.util.intstr.IntOrString"
RAW_EXTENSION = "k8s.io.apimachinery.pkg.runtime.RawExtension"

Raw = int | bytes


# -- scalars ---------------------------------------------------------------------------------


def _need_bytes(v: Raw) -> bytes:
    if not isinstance(v, bytes):
        raise ProtobufError("proto: wrong wireType = 0 for a length-delimited field")
    return v


def _need_int(v: Raw) -> int:
    if not isinstance(v, int):
        raise ProtobufError("proto: wrong wireType = 2 for a varint field")
    return v


def _fixed(fmt: str) -> Callable[[Raw], Any]:
    def read(v: Raw) -> Any:
        b = _need_bytes(v)
        if len(b) != struct.calcsize(fmt):
            raise ProtobufError("proto: wrong wireType for a fixed-width field")
        return struct.unpack(fmt, b)[0]
    return read


def _string(v: Raw) -> str:
    # Go keeps invalid UTF-8 and its JSON encoder writes U+FFFD for it
    return _need_bytes(v).decode("utf-8", "replace")


SCALAR_DECODERS: dict[str, Callable[[Raw], Any]] = {
    "string": _string,
    "bytes": lambda v: base64.b64encode(_need_bytes(v)).decode("ascii"),
    "bool": lambda v: _need_int(v) != 0,
    "int32": lambda v: wire.signed(_need_int(v), 32),
    "int64": lambda v: wire.signed(_need_int(v), 64),
    "uint32": lambda v: _need_int(v) & 0xFFFFFFFF,
    "uint64": _need_int,
    "sint32": lambda v: wire.zigzag(_need_int(v) & 0xFFFFFFFF),
    "sint64": lambda v: wire.zigzag(_need_int(v)),
    "double": _fixed("<d"), "float": _fixed("<f"), "fixed32": _fixed("<I"),
    "fixed64": _fixed("<Q"), "sfixed32": _fixed("<i"), "sfixed64": _fixed("<q"),
}
_VARINT_TYPES = {"bool", "int32", "int64", "uint32", "uint64", "sint32", "sint64"}
_FIXED_WIDTH = {"double": 8, "float": 4, "fixed32": 4, "fixed64": 8, "sfixed32": 4,
                "sfixed64": 8}


def _repeated_scalars(f: Field, values: list[Raw]) -> list[Any]:
    """A repeated scalar's elements, accepting the packed encoding as Go does."""
    decode = SCALAR_DECODERS[f.type]
    out: list[Any] = []
    for v in values:
        if isinstance(v, bytes) and f.type in _VARINT_TYPES:
            out.extend(decode(x) for x in wire.unpack_varints(v))
        elif isinstance(v, bytes) and f.type in _FIXED_WIDTH and len(v) != _FIXED_WIDTH[f.type]:
            w = _FIXED_WIDTH[f.type]
            out.extend(decode(v[i:i + w]) for i in range(0, len(v) - w + 1, w))
        else:
            out.append(decode(v))
    return out


# -- the types with their own JSON form ------------------------------------------------------


def _seconds_nanos(buf: bytes) -> tuple[int, int]:
    f = scan(buf)
    seconds = wire.signed(_need_int(f[1][-1]), 64) if 1 in f else 0
    nanos = wire.signed(_need_int(f[2][-1]), 32) if 2 in f else 0
    return seconds, nanos


def _utc(seconds: int) -> str:
    try:
        t = time.gmtime(seconds)
    except (OverflowError, OSError, ValueError):
        raise ProtobufError(f"time out of range: {seconds}s") from None
    if not 0 <= t.tm_year <= 9999:
        raise ProtobufError(f"time out of range: {seconds}s")
    return (f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}"
            f"T{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}")


def _decode_time(buf: bytes) -> str | None:
    # an empty message is Go's zero time, which marshals to JSON null; the apiserver drops nanos
    if not buf:
        return None
    return _utc(_seconds_nanos(buf)[0]) + "Z"


def _decode_micro_time(buf: bytes) -> str | None:
    if not buf:
        return None
    seconds, nanos = _seconds_nanos(buf)
    seconds += nanos // 1_000_000_000
    nanos %= 1_000_000_000
    return f"{_utc(seconds)}.{nanos // 1000:06d}Z"


def _decode_quantity(buf: bytes) -> str:
    f = scan(buf)
    return _string(f[1][-1]) if 1 in f else "0"


def _decode_int_or_string(buf: bytes) -> int | str:
    f = scan(buf)
    kind = _need_int(f[1][-1]) if 1 in f else 0
    if kind == 0:
        return wire.signed(_need_int(f[2][-1]), 32) if 2 in f else 0
    if kind == 1:
        return _string(f[3][-1]) if 3 in f else ""
    raise ProtobufError("impossible IntOrString.Type")


def _decode_json_bytes(buf: bytes) -> Any:
    """RawExtension and FieldsV1: their bytes are the JSON (or a nested protobuf object)."""
    f = scan(buf)
    raw = _need_bytes(f[1][-1]) if 1 in f else b""
    if not raw:
        return None
    if raw.startswith(MAGIC):
        return decode(raw)
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        raise ProtobufError(f"embedded object is not JSON: {e}") from None


SPECIAL_DECODERS: dict[str, Callable[[bytes], Any]] = {
    TIME: _decode_time, MICRO_TIME: _decode_micro_time, QUANTITY: _decode_quantity,
    QUANTITY_VALUE: _decode_quantity, INT_OR_STRING: _decode_int_or_string,
    RAW_EXTENSION: _decode_json_bytes, FIELDS_V1: _decode_json_bytes,
}


# -- decoding --------------------------------------------------------------------------------


def decode(data: bytes, *, api_version: str | None = None,
           kind: str | None = None) -> dict[str, Any]:
    """The object in protobuf ``data`` as its JSON-compatible dict.

    ``api_version`` and ``kind`` are defaults for an envelope that leaves them empty, as the
    request's resource provides them to the apiserver's decoder. Raises ProtobufError.
    """
    unk = read_unknown(data)
    got_version, got_kind = _defaulted(unk, api_version, kind)
    if unk.content_type and unk.content_type != CONTENT_TYPE:
        raise ProtobufError(f"unsupported embedded content type {unk.content_type!r}")
    message = table().for_kind(got_version, got_kind)
    if message is None:
        raise ProtobufError(f'no kind "{got_kind}" is registered for version "{got_version}" '
                            f'in scheme "pkg/api/legacyscheme/scheme.go:30"')
    body = decode_message(message, unk.raw)
    if not isinstance(body, dict):
        raise ProtobufError(f"{got_kind} is not an object")
    return {"kind": got_kind, "apiVersion": got_version, **body}


def _defaulted(unk: Unknown, api_version: str | None, kind: str | None) -> tuple[str, str]:
    """The envelope's type, filled in from the defaults (copyKindDefaults)."""
    got_kind = unk.kind or kind or ""
    got_version = unk.api_version
    if not got_version.rpartition("/")[2] and api_version:
        got_version = api_version
    type_meta = f'runtime.TypeMeta{{APIVersion:"{unk.api_version}", Kind:"{unk.kind}"}}'
    if not got_kind:
        raise ProtobufError(f"Object 'Kind' is missing in '{type_meta}'")
    if not got_version.rpartition("/")[2]:
        raise ProtobufError(f"Object 'apiVersion' is missing in '{type_meta}'")
    return got_version, got_kind


def decode_message(name: str, buf: bytes) -> Any:
    """Message ``name`` read from ``buf``, as its JSON form (usually a dict)."""
    special = SPECIAL_DECODERS.get(name)
    if special is not None:
        return special(buf)
    msg = table().message(name)
    raw = scan(buf)
    if msg.wrapper:
        return _repeated_scalars(msg.fields[0], raw.get(1, []))
    out: dict[str, Any] = {}
    for f in msg.fields:
        values = raw.get(f.number)
        if values is None:
            if f.emits_zero and (f.repeated or f.type in ("map", "bytes")):
                # gogo writes nothing for an empty slice or map; Go reads it back as nil,
                # which JSON shows as null without omitempty
                out[f.name] = None
            continue
        if f.type == "message":
            assert f.message is not None
            if f.repeated:
                out[f.name] = [decode_message(f.message, _need_bytes(v)) for v in values]
                continue
            # a message written twice merges, which for the wire means concatenation
            data = _need_bytes(values[0]) if len(values) == 1 else b"".join(
                _need_bytes(v) for v in values)
            value = decode_message(f.message, data)
            if f.inline and isinstance(value, dict):
                out.update(value)
            else:
                out[f.name] = value
        elif f.type == "map":
            out[f.name] = _decode_map(f, values)
        elif f.repeated:
            out[f.name] = _repeated_scalars(f, values)
        else:
            value = SCALAR_DECODERS[f.type](values[-1])
            # gogo writes Go's zero values; encoding/json omits them under omitempty
            if value or f.nullable or f.emits_zero:
                out[f.name] = value
    return out


def _decode_map(f: Field, entries: list[Raw]) -> dict[str, Any]:
    assert f.key_type is not None and f.value_type is not None
    key_decode = SCALAR_DECODERS[f.key_type]
    out: dict[str, Any] = {}
    for entry in entries:
        e = scan(_need_bytes(entry))
        # an entry may leave out its key or value: they are then the zero value
        key = key_decode(e[1][-1]) if 1 in e else _zero_scalar(f.key_type)
        if f.value_type == "message":
            assert f.message is not None
            data = b"".join(_need_bytes(v) for v in e.get(2, ()))
            out[str(key)] = decode_message(f.message, data)
        else:
            out[str(key)] = (SCALAR_DECODERS[f.value_type](e[2][-1]) if 2 in e
                             else _zero_scalar(f.value_type))
    return out


def _zero_scalar(type_: str) -> Any:
    return {"string": "", "bytes": "", "bool": False, "double": 0.0, "float": 0.0}.get(type_, 0)


# -- encoding --------------------------------------------------------------------------------


def _int(v: Any, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int | float) or v != int(v):
        raise ProtobufError(f"{what}: expected an integer, got {v!r}")
    return int(v)


def _str(v: Any, what: str) -> str:
    if not isinstance(v, str):
        raise ProtobufError(f"{what}: expected a string, got {v!r}")
    return v


def _b64(v: Any, what: str) -> bytes:
    try:
        return base64.b64decode(_str(v, what), validate=True)
    except binascii.Error as e:
        raise ProtobufError(f"{what}: illegal base64 data: {e}") from None


def _bool(v: Any, what: str) -> bool:
    if not isinstance(v, bool):
        raise ProtobufError(f"{what}: expected a boolean, got {v!r}")
    return v


def _varint_field(number: int, v: int) -> bytes:
    return wire.tag(number, wire.VARINT) + wire.varint(v)


def _fixed_field(fmt: str, wt: int) -> Callable[[int, Any, str], bytes]:
    def write(number: int, v: Any, what: str) -> bytes:
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise ProtobufError(f"{what}: expected a number, got {v!r}")
        return wire.tag(number, wt) + struct.pack(fmt, v)
    return write


SCALAR_ENCODERS: dict[str, Callable[[int, Any, str], bytes]] = {
    "string": lambda n, v, w: wire.length_delimited(n, _str(v, w).encode()),
    "bytes": lambda n, v, w: wire.length_delimited(n, _b64(v, w)),
    "bool": lambda n, v, w: _varint_field(n, int(_bool(v, w))),
    "int32": lambda n, v, w: _varint_field(n, _int(v, w)),
    "int64": lambda n, v, w: _varint_field(n, _int(v, w)),
    "uint32": lambda n, v, w: _varint_field(n, _int(v, w)),
    "uint64": lambda n, v, w: _varint_field(n, _int(v, w)),
    "sint32": lambda n, v, w: _varint_field(n, (_int(v, w) << 1) ^ (_int(v, w) >> 31)),
    "sint64": lambda n, v, w: _varint_field(n, (_int(v, w) << 1) ^ (_int(v, w) >> 63)),
    "double": _fixed_field("<d", wire.FIXED64), "float": _fixed_field("<f", wire.FIXED32),
    "fixed32": _fixed_field("<I", wire.FIXED32), "fixed64": _fixed_field("<Q", wire.FIXED64),
    "sfixed32": _fixed_field("<i", wire.FIXED32), "sfixed64": _fixed_field("<q", wire.FIXED64),
}


def _parse_time(v: Any, what: str) -> tuple[int, int]:
    try:
        dt = datetime.fromisoformat(_str(v, what))
    except ValueError:
        raise ProtobufError(f"{what}: not an RFC 3339 time: {v!r}") from None
    if dt.tzinfo is None:
        raise ProtobufError(f"{what}: not an RFC 3339 time: {v!r}")
    return int(dt.timestamp() // 1), dt.microsecond * 1000


def _encode_time(v: Any, what: str) -> bytes:
    # the apiserver keeps whole seconds (metav1.Time.ProtoTime); gogo writes both fields
    seconds, _ = _parse_time(v, what)
    return _varint_field(1, seconds) + _varint_field(2, 0)


def _encode_micro_time(v: Any, what: str) -> bytes:
    seconds, nanos = _parse_time(v, what)
    return _varint_field(1, seconds) + _varint_field(2, nanos)


def _encode_quantity(v: Any, what: str) -> bytes:
    if isinstance(v, int | float) and not isinstance(v, bool):
        v = str(v)
    return wire.length_delimited(1, _str(v, what).encode())


def _encode_int_or_string(v: Any, what: str) -> bytes:
    if isinstance(v, str):
        return _varint_field(1, 1) + _varint_field(2, 0) + wire.length_delimited(3, v.encode())
    return _varint_field(1, 0) + _varint_field(2, _int(v, what)) + wire.length_delimited(3, b"")


def _encode_json_bytes(v: Any, what: str) -> bytes:
    # the raw bytes a Go client's json.Marshal stored (compact, HTML-escaped): a client
    # compares them byte for byte (kubectl's daemonSetMatch against a ControllerRevision)
    return wire.length_delimited(1, gojson.dumps(v))


SPECIAL_ENCODERS: dict[str, Callable[[Any, str], bytes]] = {
    TIME: _encode_time, MICRO_TIME: _encode_micro_time, QUANTITY: _encode_quantity,
    QUANTITY_VALUE: _encode_quantity, INT_OR_STRING: _encode_int_or_string,
    RAW_EXTENSION: _encode_json_bytes, FIELDS_V1: _encode_json_bytes,
}
_ZERO_SCALARS = {"string": "", "bool": False, "double": 0.0, "float": 0.0}


@functools.cache
def _zero_field(f: Field) -> bytes:
    """What gogo writes for field ``f`` holding Go's zero value."""
    if f.type != "message":
        return SCALAR_ENCODERS[f.type](f.number, _ZERO_SCALARS.get(f.type, 0), f.name)
    assert f.message is not None
    return wire.length_delimited(f.number, _zero_message(f.message))


@functools.cache
def _zero_message(name: str) -> bytes:
    if name in (TIME, MICRO_TIME, RAW_EXTENSION, FIELDS_V1):
        return b""  # their Marshal writes nothing for the zero value
    if name in (QUANTITY, QUANTITY_VALUE):
        return _encode_quantity("0", name)
    if name == INT_OR_STRING:
        return _encode_int_or_string(0, name)
    if table().message(name).wrapper:
        return b""
    return encode_message(name, {})


def encode_message(name: str, value: Any, path: str = "") -> bytes:
    """The wire bytes of message ``name`` holding ``value`` (its JSON form).

    Keys the message does not have are ignored, as Go's JSON decoding drops unknown fields;
    a value of the wrong type raises ProtobufError naming its path.
    """
    special = SPECIAL_ENCODERS.get(name)
    if special is not None:
        return special(value, path or name)
    msg = table().message(name)
    if msg.wrapper:
        if not isinstance(value, list):
            raise ProtobufError(f"{path}: expected a list, got {value!r}")
        item = msg.fields[0]
        return b"".join(SCALAR_ENCODERS[item.type](1, v, path) for v in value)
    if not isinstance(value, Mapping):
        raise ProtobufError(f"{path or name}: expected an object, got {value!r}")
    parts: list[bytes] = []
    for f in msg.numbered:
        if f.inline:
            assert f.message is not None
            parts.append(wire.length_delimited(f.number, encode_message(f.message, value, path)))
            continue
        v = value.get(f.name)
        if v is None:
            # absent is Go's zero value, and gogo writes every non-pointer field but bytes
            if not (f.nullable or f.repeated or f.type in ("map", "bytes")):
                parts.append(_zero_field(f))
            continue
        where = f"{path}.{f.name}" if path else f.name
        if f.type == "map":
            parts.extend(_encode_map(f, v, where))
        elif f.repeated:
            if not isinstance(v, list):
                raise ProtobufError(f"{where}: expected a list, got {v!r}")
            for i, item in enumerate(v):
                parts.append(_encode_one(f, item, f"{where}[{i}]"))
        else:
            parts.append(_encode_one(f, v, where))
    return b"".join(parts)


def _encode_one(f: Field, v: Any, where: str) -> bytes:
    if f.type == "message":
        assert f.message is not None
        return wire.length_delimited(f.number, encode_message(f.message, v, where))
    return SCALAR_ENCODERS[f.type](f.number, v, where)


def _encode_map(f: Field, v: Any, where: str) -> list[bytes]:
    assert f.key_type is not None and f.value_type is not None
    if not isinstance(v, Mapping):
        raise ProtobufError(f"{where}: expected an object, got {v!r}")
    out = []
    # gogo sorts map keys, which makes the encoding deterministic
    for key in sorted(v):
        item = v[key]
        entry = SCALAR_ENCODERS[f.key_type](1, key, where)
        if f.value_type == "message":
            assert f.message is not None
            entry += wire.length_delimited(2, encode_message(f.message, item, f"{where}.{key}"))
        elif item is not None:
            entry += SCALAR_ENCODERS[f.value_type](2, item, f"{where}.{key}")
        out.append(wire.length_delimited(f.number, entry))
    return out


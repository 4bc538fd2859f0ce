"""Whole objects in Kubernetes' protobuf media types: the ``k8s\\x00`` envelope and watch frames.

A body of ``application/vnd.kubernetes.protobuf`` is the magic ``k8s\\x00`` followed by a
``runtime.Unknown`` (typeMeta = 1 {apiVersion = 1, kind = 2}, raw = 2, contentEncoding = 3,
contentType = 4) whose ``raw`` is the object's own message. A watch stream of
``application/vnd.kubernetes.protobuf;stream=watch`` is a sequence of frames, each a 4-byte
big-endian length and a bare ``meta.v1.WatchEvent`` message whose object is an envelope.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from setpoint.machinery import errors
from setpoint.machinery.protobuf import wire
from setpoint.machinery.protobuf.codec import MAGIC, decode_message, encode_message
from setpoint.machinery.protobuf.table import META, table
from setpoint.machinery.protobuf.wire import ProtobufError, scan

CONTENT_TYPE = "application/vnd.kubernetes.protobuf"
WATCH_CONTENT_TYPE = CONTENT_TYPE + ";stream=watch"
WATCH_EVENT = META + "WatchEvent"
_FRAME = struct.Struct(">I")


@dataclass(frozen=True, slots=True)
class Unknown:
    """The envelope's fields: the object's type, its message bytes and their encoding."""

    api_version: str
    kind: str
    raw: bytes
    content_encoding: str = ""
    content_type: str = ""


def read_unknown(data: bytes) -> Unknown:
    """The envelope of ``data``; ProtobufError with the apiserver's words if there is none."""
    if not data:
        raise ProtobufError("empty data")
    if not data.startswith(MAGIC):
        raise ProtobufError("provided data does not appear to be a protobuf message, "
                            "expected prefix [107 56 115 0]")
    if len(data) == len(MAGIC):
        raise ProtobufError("empty body")
    f = scan(data[len(MAGIC):])

    def text(fields: dict[int, list[int | bytes]], n: int) -> str:
        v = fields.get(n)
        if not v:
            return ""
        if not isinstance(v[-1], bytes):
            raise ProtobufError("proto: wrong wireType = 0 for field of runtime.Unknown")
        return v[-1].decode("utf-8", "replace")

    type_meta = b"".join(v for v in f.get(1, ()) if isinstance(v, bytes))
    tm = scan(type_meta)
    raw = b"".join(v for v in f.get(2, ()) if isinstance(v, bytes))
    return Unknown(text(tm, 1), text(tm, 2), raw, text(f, 3), text(f, 4))


def write_unknown(unk: Unknown) -> bytes:
    """``unk`` behind the magic prefix, every field written as gogo writes them."""
    type_meta = (wire.length_delimited(1, unk.api_version.encode())
                 + wire.length_delimited(2, unk.kind.encode()))
    return (MAGIC + wire.length_delimited(1, type_meta) + wire.length_delimited(2, unk.raw)
            + wire.length_delimited(3, unk.content_encoding.encode())
            + wire.length_delimited(4, unk.content_type.encode()))


def supports(api_version: str, kind: str) -> bool:
    """Whether ``kind`` of ``api_version`` is a built-in kind with a protobuf message.

    Custom resources have none: the apiserver serves them as JSON (and YAML) only.
    """
    return table().for_kind(api_version, kind) is not None


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


def decode_body(data: bytes, *, api_version: str, kind: str) -> dict[str, Any]:
    """A request body for a resource of ``kind`` in ``api_version``, as a JSON body would be.

    A body that cannot be decoded raises the 400 StatusError the apiserver answers
    (``transformDecodeError``): it names the body's kind when the envelope gave one.
    """
    try:
        return decode(data, api_version=api_version, kind=kind)
    except ProtobufError as e:
        try:
            unk = read_unknown(data)
        except ProtobufError:
            unk = None
        if unk is not None and (unk.kind or kind):
            version = (unk.api_version or api_version).rpartition("/")[2]
            raise errors.bad_request(f'{unk.kind or kind} in version "{version}" cannot be '
                                     f"handled as a {kind}: {e}") from None
        raise errors.bad_request(f"the object provided is unrecognized (must be of type "
                                 f"{kind}): {e} ({_summary(data)})") from None


def _summary(data: bytes, limit: int = 30) -> str:
    if not data:
        return "<empty>"
    if data[:1] == b"{":
        text = data[:limit].decode("utf-8", "replace")
        return text + " ..." if len(data) > limit else text
    return data[:limit].hex() + (" ..." if len(data) > limit else "")


def encode(obj: Mapping[str, Any]) -> bytes:
    """``obj`` (a built-in kind, with apiVersion and kind) as a protobuf body.

    Raises ProtobufError for kinds without a message (custom resources) and for values of the
    wrong type; the apiserver answers such an Accept with JSON or 406.
    """
    api_version = obj.get("apiVersion")
    kind = obj.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str) or not kind:
        raise ProtobufError("an object needs apiVersion and kind to be encoded")
    message = table().for_kind(api_version, kind)
    if message is None:
        raise ProtobufError(f"object {api_version}, Kind={kind} does not implement the "
                            "protobuf marshalling interface and cannot be encoded to a "
                            "protobuf message")
    return write_unknown(Unknown(api_version, kind, encode_message(message, obj)))


def encode_watch_event(event_type: str, obj: Mapping[str, Any]) -> bytes:
    """One frame of a protobuf watch stream: ``event_type`` (ADDED, ...) with ``obj``."""
    event = (wire.length_delimited(1, event_type.encode())
             + wire.length_delimited(2, wire.length_delimited(1, encode(obj))))
    return _FRAME.pack(len(event)) + event


def decode_watch_events(stream: bytes) -> tuple[list[dict[str, Any]], bytes]:
    """The complete frames at the start of ``stream`` as ``{type, object}`` dicts, and the rest.

    A BOOKMARK or ERROR event decodes like any other (its object is a built-in kind or Status).
    """
    events: list[dict[str, Any]] = []
    pos = 0
    while len(stream) - pos >= _FRAME.size:
        (n,) = _FRAME.unpack_from(stream, pos)
        if len(stream) - pos - _FRAME.size < n:
            break
        frame = stream[pos + _FRAME.size:pos + _FRAME.size + n]
        events.append(decode_message(WATCH_EVENT, frame))
        pos += _FRAME.size + n
    return events, stream[pos:]

"""Whole objects in Kubernetes' protobuf media types: request bodies and watch frames.

A body of ``application/vnd.kubernetes.protobuf`` is the magic ``k8s\\x00`` followed by a
``runtime.Unknown`` (``unknown``) whose ``raw`` is the object's own message; ``codec.decode``
reads one, as it reads the objects nested in a ``RawExtension``. A watch stream of
``application/vnd.kubernetes.protobuf;stream=watch`` is a sequence of frames, each a 4-byte
big-endian length and a bare ``meta.v1.WatchEvent`` message whose object is an envelope.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

from setpoint.machinery import errors
from setpoint.machinery.protobuf import wire
from setpoint.machinery.protobuf.codec import decode, decode_message, encode_message
from setpoint.machinery.protobuf.table import META, table
from setpoint.machinery.protobuf.unknown import (
    CONTENT_TYPE,
    Unknown,
    read_unknown,
    write_unknown,
)
from setpoint.machinery.protobuf.wire import ProtobufError

WATCH_CONTENT_TYPE = CONTENT_TYPE + ";stream=watch"
WATCH_EVENT = META + "WatchEvent"
_FRAME = struct.Struct(">I")


def supports(api_version: str, kind: str) -> bool:
    """Whether ``kind`` of ``api_version`` is a built-in kind with a protobuf message.

    Custom resources have none: the apiserver serves them as JSON (and YAML) only.
    """
    return table().for_kind(api_version, kind) is not None


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

"""Kubernetes' protobuf encoding of built-in objects (``application/vnd.kubernetes.protobuf``).

kubectl's typed commands and client-go's typed clientsets send built-in kinds as protobuf.
This package turns such bodies into the same JSON-compatible dicts a JSON body would give, and
back. It needs nothing at run time but the generated message table (``descriptors.json``,
made by ``tools/protobuf_descriptors.py`` from kubectl 1.32's embedded descriptors).

Entry points:

- ``decode_body(data, api_version=, kind=)``: a request body, or the apiserver's 400;
- ``decode(data)`` / ``encode(obj)``: whole objects behind the ``k8s\\x00`` envelope;
- ``supports(api_version, kind)``: whether a kind has a protobuf form (custom resources don't);
- ``encode_watch_event`` / ``decode_watch_events``: the protobuf watch stream's frames;
- ``decode_message`` / ``encode_message``: one message by its full protobuf name.
"""

from setpoint.machinery.protobuf.codec import decode, decode_message, encode_message
from setpoint.machinery.protobuf.envelope import (
    WATCH_CONTENT_TYPE,
    decode_body,
    decode_watch_events,
    encode,
    encode_watch_event,
    supports,
)
from setpoint.machinery.protobuf.table import table
from setpoint.machinery.protobuf.unknown import CONTENT_TYPE, Unknown, read_unknown, write_unknown
from setpoint.machinery.protobuf.wire import ProtobufError

__all__ = [
    "CONTENT_TYPE",
    "WATCH_CONTENT_TYPE",
    "ProtobufError",
    "Unknown",
    "decode",
    "decode_body",
    "decode_message",
    "decode_watch_events",
    "encode",
    "encode_message",
    "encode_watch_event",
    "read_unknown",
    "supports",
    "table",
    "write_unknown",
]

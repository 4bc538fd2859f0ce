"""Kubernetes' protobuf envelope: the magic ``k8s\\x00`` and the ``runtime.Unknown`` behind it.

The envelope is ``runtime.Unknown`` (typeMeta = 1 {apiVersion = 1, kind = 2}, raw = 2,
contentEncoding = 3, contentType = 4) whose ``raw`` is the object's own message. Both the
request bodies (``envelope``) and the objects nested in a ``RawExtension`` (``codec``) are
read through it, so it stands apart from both.
"""

from __future__ import annotations

from dataclasses import dataclass

from setpoint.machinery.protobuf import wire
from setpoint.machinery.protobuf.wire import ProtobufError, scan

CONTENT_TYPE = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"


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

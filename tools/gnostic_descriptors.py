"""Generate setpoint/machinery/protobuf/openapi_v2.json: gnostic's OpenAPI v2 messages.

kubectl links ``github.com/google/gnostic-models/openapiv2`` (the protobuf form of a Swagger 2.0
document, served by the apiserver at /openapi/v2) and ``google.protobuf.Any``. Both are
compiled with Go's APIv2 protobuf runtime, which keeps each file's ``FileDescriptorProto`` as raw
(not gzipped) bytes in the binary. This script finds them by their file name, which is the
first field of the serialized descriptor, and writes one row per field: what
``setpoint.machinery.protobuf.openapiv2`` needs to encode and decode a document.

Usage: ``.venv/bin/python tools/gnostic_descriptors.py [--kubectl PATH] [--out PATH]`` (also
run by ``tools/protobuf_descriptors.py``).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path
from typing import Any

from google.protobuf import descriptor_pb2
from kubectl_tables import default_kubectl, kubectl_version, render

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from setpoint.machinery.protobuf.wire import read_varint, varint  # noqa: E402

OUT = REPO / "setpoint" / "machinery" / "protobuf" / "openapi_v2.json"
FILES = ("google/protobuf/any.proto", "openapiv2/OpenAPIv2.proto")

FD = descriptor_pb2.FieldDescriptorProto
SCALARS = {
    FD.TYPE_DOUBLE: "double", FD.TYPE_FLOAT: "float", FD.TYPE_INT64: "int64",
    FD.TYPE_UINT64: "uint64", FD.TYPE_INT32: "int32", FD.TYPE_BOOL: "bool",
    FD.TYPE_STRING: "string", FD.TYPE_BYTES: "bytes", FD.TYPE_UINT32: "uint32",
    FD.TYPE_ENUM: "int32",
}
# FileDescriptorProto's field numbers: a raw descriptor ends where anything else begins
_FILE_FIELDS = range(1, 15)


def raw_descriptor(binary: bytes, name: str) -> descriptor_pb2.FileDescriptorProto:
    """The raw ``FileDescriptorProto`` of file ``name`` embedded in ``binary``.

    The descriptor's extent is not stored beside it, so its top-level fields are walked until
    one could not belong to a FileDescriptorProto; the result must re-serialize to exactly the
    bytes read, or the candidate is rejected.
    """
    needle = b"\n" + varint(len(name)) + name.encode()
    start = binary.find(needle)
    while start >= 0:
        pos = start
        try:
            while pos < len(binary):
                key, after = read_varint(binary, pos)
                if key >> 3 not in _FILE_FIELDS or key & 7 not in (0, 2):
                    break
                if key & 7 == 0:
                    _, after = read_varint(binary, after)
                else:
                    length, after = read_varint(binary, after)
                    after += length
                pos = after
            raw = binary[start:pos]
            fd = descriptor_pb2.FileDescriptorProto()
            fd.ParseFromString(raw)
            if fd.name == name and fd.SerializeToString() == raw:
                return fd
        except Exception:  # a false match of the file name: try the next one
            pass
        start = binary.find(needle, start + 1)
    raise SystemExit(f"no descriptor of {name} in the kubectl binary")


def rows(fd: descriptor_pb2.FileDescriptorProto) -> dict[str, list[list[Any]]]:
    """Message name -> field rows ``[number, name, JSON name, type, flags, message]``."""
    out: dict[str, list[list[Any]]] = {}
    for m in fd.message_type:
        fields: list[list[Any]] = []
        for f in m.field:
            flags = ("r" if f.label == FD.LABEL_REPEATED else "") + (
                "o" if f.HasField("oneof_index") and not f.proto3_optional else "")
            if f.type == FD.TYPE_MESSAGE:
                fields.append([f.number, f.name, f.json_name, "message", flags,
                               f.type_name.lstrip(".")])
            else:
                fields.append([f.number, f.name, f.json_name, SCALARS[f.type], flags])
        out[f"{fd.package}.{m.name}"] = fields
    return out


def build(binary: bytes, version: str) -> dict[str, Any]:
    """The gnostic table: source, and every message of the files in ``FILES``."""
    messages: dict[str, list[list[Any]]] = {}
    files = []
    for name in FILES:
        fd = raw_descriptor(binary, name)
        files.append(fd.name)
        messages.update(rows(fd))
    return {
        "source": {"kubectl": version, "sha256": hashlib.sha256(binary).hexdigest(),
                   "files": files},
        "format": "field row: [number, name, JSON name, type, flags (r repeated, o member of "
                  "a oneof), message name]",
        "messages": dict(sorted(messages.items())),
    }


def write(kubectl: Path, version: str, out: Path = OUT) -> None:
    """Extract the gnostic table from ``kubectl`` (reporting ``version``) into ``out``."""
    table = build(kubectl.read_bytes(), version)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(table))
    print(f"{out}: {len(table['messages'])} messages from kubectl {version}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubectl", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    kubectl = args.kubectl or default_kubectl()
    write(kubectl, kubectl_version(kubectl), args.out)


if __name__ == "__main__":
    main()

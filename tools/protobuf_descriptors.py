"""Generate setpoint/machinery/protobuf/descriptors.json from a kubectl binary.

Kubernetes' generated Go code registers the gzipped ``FileDescriptorProto`` of every
``k8s.io/.../generated.proto`` it links (gogo protobuf's ``proto.RegisterFile``), so a kubectl
binary carries the exact field numbers, names and types of every built-in message. This script
finds those gzip streams, parses them with the ``protobuf`` package (needed here only, not at
run time) and writes a compact table that ``setpoint.machinery.protobuf`` reads.

Three facts of the JSON form are not in the descriptors: a field's JSON name (usually, but
not always, its protobuf name: ``Webhooks`` is ``webhooks``), whether its JSON tag has
``omitempty`` (gogo writes every non-pointer scalar, so a decoder must know whether JSON would
show a zero value), and whether it is a Go embedded struct inlined into its parent's JSON
(``json:",inline"``, such as ``Probe.handler``). They are read from the Go struct tags the same
binary keeps for reflection (``json:"name,omitempty" protobuf:"bytes,1,opt,name=name"``, stored
beside the Go field name, and grouped by struct through the structs' field arrays). Where
structs of the same shape still disagree (about 90 fields, mostly conditions), the Kubernetes
OpenAPI definitions that ``kubernetes-validate`` ships decide: openapi-gen marks a field
required exactly when its tag has no ``omitempty`` (unless it says ``+optional``).

Usage: ``.venv/bin/python tools/protobuf_descriptors.py [--kubectl PATH] [--out PATH]``
also writes the gnostic OpenAPI v2 table (``tools/gnostic_descriptors.py``, ``--gnostic-out``).
"""

from __future__ import annotations

import argparse
import array
import hashlib
import re
import struct
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gnostic_descriptors
from google.protobuf import descriptor_pb2
from kubectl_tables import default_kubectl, kubectl_version, render

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from setpoint.machinery.protobuf.wire import read_varint  # noqa: E402
from setpoint.machinery.schema import definitions  # noqa: E402

OUT = REPO / "setpoint" / "machinery" / "protobuf" / "descriptors.json"
PACKAGES = ("k8s.io.api.", "k8s.io.apimachinery.", "k8s.io.apiextensions-apiserver.")
META = "k8s.io.apimachinery.pkg.apis.meta.v1."
GOGO_NULLABLE = 65001  # (gogoproto.nullable): false means a Go value, not a pointer
GOGO_CUSTOMNAME = 65004  # (gogoproto.customname): the Go field name

FD = descriptor_pb2.FieldDescriptorProto
SCALARS = {
    FD.TYPE_DOUBLE: "double", FD.TYPE_FLOAT: "float", FD.TYPE_INT64: "int64",
    FD.TYPE_UINT64: "uint64", FD.TYPE_INT32: "int32", FD.TYPE_FIXED64: "fixed64",
    FD.TYPE_FIXED32: "fixed32", FD.TYPE_BOOL: "bool", FD.TYPE_STRING: "string",
    FD.TYPE_BYTES: "bytes", FD.TYPE_UINT32: "uint32", FD.TYPE_ENUM: "int32",
    FD.TYPE_SFIXED32: "sfixed32", FD.TYPE_SFIXED64: "sfixed64", FD.TYPE_SINT32: "sint32",
    FD.TYPE_SINT64: "sint64",
}


def file_descriptors(binary: bytes) -> list[descriptor_pb2.FileDescriptorProto]:
    """Every gzipped FileDescriptorProto embedded in ``binary`` whose package we keep."""
    out: dict[str, descriptor_pb2.FileDescriptorProto] = {}
    i = binary.find(b"\x1f\x8b\x08")
    while i >= 0:
        d = zlib.decompressobj(31)
        try:
            raw = d.decompress(binary[i:i + 4_000_000])
        except zlib.error:
            raw = b""
        if d.eof and raw:
            try:
                fd = descriptor_pb2.FileDescriptorProto.FromString(raw)
            except Exception:  # a gzip stream that is not a descriptor
                fd = None
            if fd is not None and fd.name.endswith(".proto") and fd.package.startswith(PACKAGES):
                out[fd.name] = fd
        i = binary.find(b"\x1f\x8b\x08", i + 1)
    return [out[k] for k in sorted(out)]


def _varint_option(options: bytes, number: int) -> int | None:
    """The value of varint extension ``number`` in serialized options, if present."""
    value: int | None = None
    pos = 0
    while pos < len(options):
        key, pos = read_varint(options, pos)
        wt = key & 7
        if wt == 0:
            v, pos = read_varint(options, pos)
            if key >> 3 == number:
                value = v
        elif wt == 2:
            n, pos = read_varint(options, pos)
            pos += n
        elif wt == 5:
            pos += 4
        elif wt == 1:
            pos += 8
        else:
            raise ValueError(f"unexpected wire type {wt} in options")
    return value


def _string_option(options: bytes, number: int) -> str | None:
    pos = 0
    while pos < len(options):
        key, pos = read_varint(options, pos)
        wt = key & 7
        if wt == 0:
            _, pos = read_varint(options, pos)
        elif wt == 2:
            n, pos = read_varint(options, pos)
            if key >> 3 == number:
                return options[pos:pos + n].decode()
            pos += n
        elif wt == 5:
            pos += 4
        elif wt == 1:
            pos += 8
    return None


def openapi_name(proto_name: str) -> str:
    """``k8s.io.api.core.v1.Pod`` -> ``io.k8s.api.core.v1.Pod`` (the OpenAPI definition name)."""
    return "io.k8s." + proto_name.removeprefix("k8s.io.")


# Messages the runtime codec maps itself: their JSON form is not their protobuf structure.
SPECIAL = {
    META + "Time", META + "MicroTime", META + "FieldsV1",
    "k8s.io.apimachinery.pkg.api.resource.Quantity",
    "k8s.io.apimachinery.pkg.api.resource.QuantityValue",
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString",
    "k8s.io.apimachinery.pkg.runtime.RawExtension", "k8s.io.apimachinery.pkg.runtime.Unknown",
}


class Tags:
    """The Go struct tags in a Go binary: by Go field name, and by struct.

    Go keeps each struct field's name and tag together (``abi.Name``: a flags byte, a varint
    length and the name, then a varint length and the tag), so every tag can be paired with
    its Go field name. A struct type's field array (``abi.StructField``: name pointer, type
    pointer, offset; 24 bytes each) points at those names, which groups the tags by struct.
    """

    def __init__(self, binary: bytes) -> None:
        self.by_go_name: dict[str, set[Tag]] = {}
        self.structs: dict[frozenset[tuple[int, str]], list[dict[tuple[int, str], Tag]]] = {}
        sections = _elf_sections(binary)
        names: dict[int, Tag] = {}  # virtual address of a field name -> its tag
        for m in re.finditer(rb'json:"', binary):
            found = self._read(binary, m.start())
            if found is not None:
                offset, tag = found
                self.by_go_name.setdefault(tag.go_name, set()).add(tag)
                address = _address(sections, offset)
                if address is not None:
                    names[address] = tag
        self._group(binary, sections, names)

    def _read(self, b: bytes, start: int) -> tuple[int, Tag] | None:
        for size in (1, 2):
            if size == 1 and b[start - 1] < 0x80:
                length = b[start - 1]
            elif size == 2 and b[start - 1] < 0x80 <= b[start - 2]:
                length = (b[start - 2] & 0x7F) | b[start - 1] << 7
            else:
                continue
            raw = b[start:start + length]
            proto = re.search(rb'protobuf:"([^"]*)"', raw)
            json_tag = re.match(rb'json:"([^"]*)"', raw)
            if not raw.endswith(b'"') or proto is None or json_tag is None:
                return None
            end = start - size
            for n in range(1, 100):
                name = b[end - n:end]
                if b[end - n - 1] == n and b[end - n - 2] & 2 and _IDENT.fullmatch(name):
                    return end - n - 2, Tag.parse(name.decode(), json_tag.group(1).decode(),
                                                  proto.group(1).decode())
            return None
        return None

    def _group(self, b: bytes, sections: list[tuple[int, int, int]],
               names: dict[int, Tag]) -> None:
        hits: list[tuple[int, Tag]] = []
        for address, offset, size in sections:
            words = array.array("Q")
            words.frombytes(b[offset:offset + size - size % 8])
            hits.extend((address + i * 8, names[w]) for i, w in enumerate(words) if w in names)
        hits.sort(key=lambda h: h[0])
        # consecutive StructField entries (24 bytes apart) are the fields of one struct
        runs: list[list[Tag]] = []
        previous = None
        for address, tag in hits:
            if previous is not None and address - previous == 24:
                runs[-1].append(tag)
            else:
                runs.append([tag])
            previous = address
        for run in runs:
            fields = {(t.number, t.proto_name): t for t in run}
            self.structs.setdefault(frozenset(fields), []).append(fields)

    def lookup(self, keys: frozenset[tuple[int, str]], go_name: str, number: int,
               proto_name: str) -> Tag | None:
        """The tag of a field of the message whose fields are ``keys``, if it is certain.

        First the structs with exactly those protobuf fields; then any field with that Go
        name, number and protobuf name. None when the candidates disagree.
        """
        structs = self.structs.get(keys, [])
        candidates = {s[(number, proto_name)] for s in structs}
        if len(candidates) == 1:
            return candidates.pop()
        by_name = {t for t in self.by_go_name.get(go_name, ())
                   if t.number == number and t.proto_name == proto_name}
        if len(by_name) == 1:
            return by_name.pop()
        return None


@dataclass(frozen=True)
class Tag:
    """What a Go struct tag says of a field's JSON and protobuf forms."""

    go_name: str
    json_name: str
    omitempty: bool
    inline: bool
    number: int
    proto_name: str

    @classmethod
    def parse(cls, go_name: str, json_tag: str, proto_tag: str) -> Tag:
        parts = proto_tag.split(",")
        opts = dict(p.split("=", 1) for p in parts if "=" in p)
        name, _, flags = json_tag.partition(",")
        return cls(go_name, name, "omitempty" in flags.split(","), "inline" in flags.split(","),
                   int(parts[1]), opts.get("name", ""))


def _elf_sections(b: bytes) -> list[tuple[int, int, int]]:
    """(address, file offset, size) of the loaded sections of an ELF64 binary."""
    if b[:4] != b"\x7fELF" or b[4] != 2:
        raise SystemExit("kubectl is not an ELF64 binary")
    shoff = struct.unpack_from("<Q", b, 0x28)[0]
    entsize, count = struct.unpack_from("<HH", b, 0x3A)
    out = []
    for i in range(count):
        _, kind, flags, address, offset, size = struct.unpack_from("<IIQQQQ", b,
                                                                    shoff + i * entsize)
        if flags & 2 and kind != 8:  # SHF_ALLOC, not SHT_NOBITS
            out.append((address, offset, size))
    return out


def _address(sections: list[tuple[int, int, int]], offset: int) -> int | None:
    for address, start, size in sections:
        if start <= offset < start + size:
            return address + offset - start
    return None


_IDENT = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")


class Collector:
    """Walks the descriptors and builds the table."""

    def __init__(self, fds: list[descriptor_pb2.FileDescriptorProto], tags: Tags) -> None:
        self.tags = tags
        self.stats = {"tags": 0, "openapi": 0}
        self.defs: dict[str, Any] = definitions().raw
        self.messages: dict[str, descriptor_pb2.DescriptorProto] = {}
        for fd in fds:
            for m in fd.message_type:
                self._index(fd.package + "." + m.name, m)
        self.warnings: list[str] = []
        # inline targets without a definition of their own read their parent's
        self._inline_parent: dict[str, str] = {}
        for name in self.messages:
            if self.is_map_entry(name):
                continue
            for f in self.messages[name].field:
                if f.type == FD.TYPE_MESSAGE and self.inline(name, f):
                    self._inline_parent.setdefault(f.type_name.lstrip("."), name)

    def _index(self, name: str, m: descriptor_pb2.DescriptorProto) -> None:
        self.messages[name] = m
        for n in m.nested_type:
            self._index(name + "." + n.name, n)

    def is_map_entry(self, name: str) -> bool:
        return self.messages[name].options.map_entry

    def definition(self, name: str, seen: frozenset[str] = frozenset()) -> dict[str, Any]:
        """The OpenAPI definition describing message ``name``'s JSON form ({} if none).

        A message of a version the 1.32 OpenAPI no longer serves (``apps/v1beta1``) reads the
        definition of the same type in another version, preferably of the same group; a type
        inlined into its parent (``ProbeHandler``) reads the parent's.
        """
        own = self.defs.get(openapi_name(name))
        if own is not None:
            return dict(own)
        twin = self._own_or_twin(name)
        if twin:
            return twin
        parent = self._inline_parent.get(name)
        if parent and parent not in seen:
            return self.definition(parent, seen | {name})
        return {}

    def tag(self, owner: str, f: descriptor_pb2.FieldDescriptorProto) -> Tag | None:
        """What the Go struct tags say of field ``f`` of message ``owner``, if certain."""
        if owner in SPECIAL:
            return None
        go_name = _string_option(f.options.SerializeToString(), GOGO_CUSTOMNAME)
        keys = frozenset((g.number, g.name) for g in self.messages[owner].field)
        return self.tags.lookup(keys, go_name or f.name[:1].upper() + f.name[1:], f.number,
                                f.name)

    def inline(self, owner: str, f: descriptor_pb2.FieldDescriptorProto) -> bool:
        """Whether ``f`` is a Go embedded struct inlined into ``owner``'s JSON."""
        if f.type_name.lstrip(".") in SPECIAL:
            return False
        tag = self.tag(owner, f)
        return tag.inline if tag is not None else self._is_inline(owner, f)

    def _is_inline(self, owner: str, f: descriptor_pb2.FieldDescriptorProto) -> bool:
        """The OpenAPI answer: a field that is no property, while its type's fields are."""
        target = f.type_name.lstrip(".")
        if target in SPECIAL or self.is_map_entry(target):
            return False
        embedded = _string_option(f.options.SerializeToString(), GOGO_CUSTOMNAME)
        if embedded != target.rsplit(".", 1)[1]:
            return False
        props = set(self._own_or_twin(owner).get("properties") or ())
        if not props or f.name in props:
            return False
        sub = {g.name.lower() for g in self.messages[target].field}
        return sub <= {p.lower() for p in props} | _inline_names(self, target)

    def _own_or_twin(self, name: str) -> dict[str, Any]:
        own = self.defs.get(openapi_name(name))
        if own is not None:
            return dict(own)
        short = name.rsplit(".", 1)[1]
        group = openapi_name(name.rsplit(".", 2)[0])  # io.k8s.api.apps
        # extensions/v1beta1 types moved to apps, networking and policy
        prefix = "io.k8s.api." if group == "io.k8s.api.extensions" else group + "."
        twins = sorted(d for d in self.defs if d.rsplit(".", 1)[1] == short
                       and d.startswith(prefix) and "properties" in self.defs[d])
        return dict(self.defs[twins[0]]) if twins else {}

    def wrappers(self) -> list[str]:
        """Messages standing for a Go slice type (``Verbs``, ``ExtraValue``): JSON arrays."""
        out = []
        for name, m in self.messages.items():
            if (len(m.field) == 1 and m.field[0].name == "items"
                    and m.field[0].label == FD.LABEL_REPEATED
                    and m.field[0].type != FD.TYPE_MESSAGE
                    and openapi_name(name) not in self.defs):
                out.append(name)
        return sorted(out)

    def fields(self, name: str) -> list[list[Any]]:
        """The field rows of message ``name``, in declaration (Go struct) order."""
        m = self.messages[name]
        d = self.definition(name) if name not in SPECIAL else {}
        props: dict[str, Any] = d.get("properties") or {}
        by_lower = {p.lower(): p for p in props}
        required = set(d.get("required") or ())
        rows: list[list[Any]] = []
        for f in m.field:
            flags = ""
            ref: Any = None
            if f.label == FD.LABEL_REPEATED:
                flags += "r"
            if _varint_option(f.options.SerializeToString(), GOGO_NULLABLE) != 0:
                flags += "n"
            if f.type == FD.TYPE_MESSAGE and self.is_map_entry(f.type_name.lstrip(".")):
                entry = self.messages[f.type_name.lstrip(".")]
                key, value = sorted(entry.field, key=lambda x: x.number)
                kind = "map"
                ref = [SCALARS[key.type], self._type(value), self._ref(value)]
                flags = flags.replace("r", "")
            elif f.type == FD.TYPE_MESSAGE:
                kind = "message"
                ref = f.type_name.lstrip(".")
                if self.inline(name, f):
                    flags += "i"
            else:
                kind = SCALARS[f.type]
            tag = self.tag(name, f)
            json_name = tag.json_name if tag is not None and not tag.inline else None
            omitempty = tag.omitempty if tag is not None else None
            if json_name is None:
                # a protobuf name taken from the Go name (Webhooks, uID): JSON spells it
                json_name = f.name if f.name in props or not props else by_lower.get(
                    f.name.lower(), f.name)
                if props and "i" not in flags and json_name not in props:
                    self.warnings.append(f"{name}.{f.name}: no JSON name known")
            if omitempty is None:
                self.stats["openapi"] += 1
                omitempty = json_name not in required
            else:
                self.stats["tags"] += 1
            if not omitempty and "i" not in flags:
                flags += "e"
            row: list[Any] = [f.number, json_name, kind, flags]
            if ref is not None:
                row.append(ref)
            rows.append(row)
        return rows

    def _type(self, f: descriptor_pb2.FieldDescriptorProto) -> str:
        return "message" if f.type == FD.TYPE_MESSAGE else SCALARS[f.type]

    def _ref(self, f: descriptor_pb2.FieldDescriptorProto) -> str | None:
        return f.type_name.lstrip(".") if f.type == FD.TYPE_MESSAGE else None

    def kinds(self) -> dict[str, str]:
        """``group/version/Kind`` -> message, for every built-in kind outside meta/v1."""
        out: dict[str, str] = {}
        for dname, d in self.defs.items():
            for gvk in d.get("x-kubernetes-group-version-kind") or ():
                proto = "k8s.io." + dname.removeprefix("io.k8s.")
                if proto not in self.messages or proto.startswith(META):
                    continue
                key = f"{gvk.get('group', '')}/{gvk['version']}/{gvk['kind']}"
                out.setdefault(key, proto)
        return dict(sorted(out.items()))


def _inline_names(c: Collector, name: str) -> set[str]:
    """Lower-cased field names a message brings through its own inline members."""
    out: set[str] = set()
    for f in c.messages[name].field:
        if f.type == FD.TYPE_MESSAGE and f.type_name.lstrip(".") in c.messages:
            out.add(f.name.lower())
    return out


def build(kubectl: Path) -> dict[str, Any]:
    """The table: source, messages (name -> field rows), slice wrappers and kinds."""
    binary = kubectl.read_bytes()
    fds = file_descriptors(binary)
    c = Collector(fds, Tags(binary))
    messages = {name: c.fields(name) for name in sorted(c.messages)
                if not c.is_map_entry(name)}
    print(f"omitempty from struct tags for {c.stats['tags']} fields, from OpenAPI for "
          f"{c.stats['openapi']}", file=sys.stderr)
    if c.warnings:
        # fields of versions the 1.32 OpenAPI no longer serves: they keep their protobuf names
        print(f"{len(c.warnings)} fields without an OpenAPI property, e.g. {c.warnings[0]}",
              file=sys.stderr)
    return {
        "source": {
            "kubectl": kubectl_version(kubectl),
            "sha256": hashlib.sha256(binary).hexdigest(),
            "files": [fd.name for fd in fds],
        },
        "format": "field row: [number, JSON name, type, flags (r repeated, n nullable, "
                  "e JSON shows zero values: no omitempty, i inline), "
                  "message name | [key type, value type, value message]]",
        "wrappers": c.wrappers(),
        "kinds": c.kinds(),
        "messages": messages,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubectl", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--gnostic-out", type=Path, default=OUT.with_name("openapi_v2.json"),
                        help="where the gnostic OpenAPI v2 table goes (see gnostic_descriptors)")
    args = parser.parse_args()
    kubectl = args.kubectl or default_kubectl()
    table = build(kubectl)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(render(table))
    print(f"{args.out}: {len(table['messages'])} messages, {len(table['kinds'])} kinds, "
          f"from kubectl {table['source']['kubectl']}")
    if args.gnostic_out is not None:
        # gnostic's OpenAPI v2 messages (the /openapi/v2 protobuf form), from the same binary
        gnostic_descriptors.write(kubectl, table["source"]["kubectl"], args.gnostic_out)


if __name__ == "__main__":
    main()

"""Generate setpoint/cluster/registry/gomembers.json from the Go sources of k8s.io/api.

openapi-gen (k8s.io/kube-openapi pkg/generators/openapi.go, ``generateDefault`` and
``mustEnforceDefault``) gives a struct member a ``default``: the value of its ``+default=``
comment tag, else the zero value Go would decode it to when the member cannot be absent: ``{}``
for a struct (a struct with a single embedded member counts as that member's type), the zero
value of a builtin or of a named builtin type unless the JSON tag says ``omitempty``, nothing
for pointers, slices, maps and interfaces, and nothing for the types with their own OpenAPI
schema (metav1.Time, MicroTime, IntOrString, Quantity). A slice's items and a map's values get
the same, as never omitempty. kube-openapi serves defaults in OpenAPI v3 only (the v2 document
is built with them pruned), and a ``$ref`` with a default beside it is wrapped in ``allOf``.
A non-pointer metav1.Time or MicroTime member is marked ``x-go-null-when-zero`` (Go writes it
as ``null``; setpoint/cluster/registry/gomembers.py fills it, the OpenAPI documents skip it).
A slice (but ``[]byte``) or map member whose JSON tag lacks ``omitempty`` is marked
``x-go-null-when-empty``: stored as protobuf, which cannot tell nil from empty, it is decoded
as nil and encoded by encoding/json as ``null`` when absent or empty. A non-pointer member of a
builtin or named builtin type, ``omitempty`` or not, is marked ``x-go-zero`` with its zero value:
absent from JSON it decodes to that value, so apiequality.Semantic.DeepEqual takes an absent
``minReadySeconds`` and ``minReadySeconds: 0`` for the same struct (setpoint/machinery/
equality.py reads the mark; a pointer member has none: absent is nil, unequal to any value).

Usage: ``.venv/bin/python tools/openapi_defaults.py --src k8s.io/api=DIR --src
k8s.io/apimachinery=DIR --src k8s.io/apiextensions-apiserver=DIR --src k8s.io/kube-aggregator=DIR
[--out PATH]``, each DIR a checkout of that module at the release's tag (v0.32.0 for
Kubernetes 1.32).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

from setpoint.cluster.registry.gomembers import GO_ZERO, NULL_WHEN_EMPTY, NULL_WHEN_ZERO

_TYPE = re.compile(r"^type\s+(\w+)\s+(.+?)\s*$")
_MEMBER = re.compile(r'^\s+(\w+)\s+([^`\s]+)\s+`[^`]*json:"([^"]*)"')
_EMBEDDED = re.compile(r"^\s+([\w.*]+)\s*(`.*)?$")
_NAMED_EMBEDDED = re.compile(r'^\s+([\w.*]+)\s+`[^`]*json:"(\w+)((?:,\w+)*)"')
_INLINE = re.compile(r'^\s+([\w.*]+)\s+`[^`]*json:",inline"')
_IMPORT = re.compile(r'^\s*(?:import\s+)?(\w+)?\s*"([^"]+)"\s*$')
_ZERO = {"string": "", "bool": False, "int": 0, "int32": 0, "int64": 0, "uint": 0,
         "uint32": 0, "uint64": 0, "float32": 0, "float64": 0, "byte": 0}
_NONE = object()  # no default
# a non-pointer metav1.Time or MicroTime has no OpenAPI default, but Go always writes it, as
# null when zero (its MarshalJSON; omitempty never omits a struct): gomembers fills these
_WRITTEN_AS_NULL = {"k8s.io/apimachinery/pkg/apis/meta/v1.Time",
                    "k8s.io/apimachinery/pkg/apis/meta/v1.MicroTime"}
# apimachinery types whose Go shape does not say what openapi-gen makes of them: those with
# their own OpenAPI schema (OpenAPISchemaType) get no default, Duration's is ``{}``
_FOREIGN: dict[str, Any] = {
    "k8s.io/apimachinery/pkg/apis/meta/v1.Time": _NONE,
    "k8s.io/apimachinery/pkg/apis/meta/v1.MicroTime": _NONE,
    "k8s.io/apimachinery/pkg/util/intstr.IntOrString": _NONE,
    "k8s.io/apimachinery/pkg/api/resource.Quantity": _NONE,
    "k8s.io/apimachinery/pkg/apis/meta/v1.Duration": "struct",
    "k8s.io/apimachinery/pkg/types.UID": "string",
    "k8s.io/apimachinery/pkg/runtime.RawExtension": _NONE,
    **{f"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1.{name}": _NONE
       for name in ("JSON", "JSONSchemaPropsOrArray", "JSONSchemaPropsOrBool",
                    "JSONSchemaPropsOrStringArray")},
}


def _comment_block(lines: list[str], index: int) -> list[str]:
    out: list[str] = []
    i = index - 1
    while i >= 0 and lines[i].strip().startswith("//"):
        out.append(lines[i].strip()[2:].strip())
        i -= 1
    return list(reversed(out))


def scan(roots: dict[str, Path]) -> dict[str, dict[str, dict[str, Any]]]:
    """The defaults of every definition of the Go modules ``roots`` (module path -> source)."""
    named: dict[str, str] = {}  # type key -> underlying expression (resolved) or "struct"
    single_embedded: dict[str, str] = {}
    # struct key -> its members, an inlined embedded struct as ("", type key, ...)
    members: dict[str, list[tuple[str, str, bool, list[str], str, dict[str, str]]]] = {}
    definitions: dict[str, str] = {}  # struct key -> definition name
    same_members: dict[str, str] = {}  # a type declared as another struct type -> that type
    sources = sorted((module, p, root) for module, root in roots.items()
                     for p in root.rglob("*.go") if not p.name.endswith("_test.go"))
    for module, path, root in sources:
        package = f"{module}/{path.parent.relative_to(root).as_posix()}".rstrip("/.")
        host, _, rest = package.partition("/")
        # openapi-gen's friendly names: the Go package path reversed at its host
        prefix = ".".join([*reversed(host.split(".")), *rest.split("/")])
        lines = path.read_text().splitlines()
        imports: dict[str, str] = {}
        in_imports = False
        struct: str | None = None
        fields: list[str] = []
        for i, line in enumerate(lines):
            if line.startswith("import ("):
                in_imports = True
                continue
            if line.startswith("import ") and (m := _IMPORT.match(line)):
                imports[m.group(1) or m.group(2).rsplit("/", 1)[-1]] = m.group(2)
                continue
            if in_imports:
                if line.strip() == ")":
                    in_imports = False
                elif (m := _IMPORT.match(line)):
                    imports[m.group(1) or m.group(2).rsplit("/", 1)[-1]] = m.group(2)
                continue
            if struct is not None:
                if line.startswith("}"):
                    key = f"{package}.{struct}"
                    if len(fields) == 1 and fields[0].startswith("embedded:"):
                        single_embedded[key] = fields[0][len("embedded:"):]
                    struct = None
                elif (m := _MEMBER.match(line)):
                    fields.append(m.group(1))
                    name, _, opts = m.group(3).partition(",")
                    if name != "-" and (name or "inline" in opts.split(",")):
                        members.setdefault(f"{package}.{struct}", []).append((
                            name, m.group(2), "omitempty" in opts.split(","),
                            _comment_block(lines, i), package, imports))
                elif (m := _NAMED_EMBEDDED.match(line)):
                    # ``metav1.ObjectMeta `json:"metadata,omitempty"```: embedded, named by tag
                    fields.append(m.group(1))
                    members.setdefault(f"{package}.{struct}", []).append((
                        m.group(2), m.group(1), "omitempty" in m.group(3).split(","),
                        _comment_block(lines, i), package, imports))
                elif (m := _INLINE.match(line)):
                    # an embedded struct inlined into this one's JSON
                    members.setdefault(f"{package}.{struct}", []).append((
                        "", m.group(1), False, [], package, imports))
                    fields.append("embedded:" + _resolve(m.group(1).lstrip("*"), package,
                                                         imports))
                elif (m := _EMBEDDED.match(line)) and not line.strip().startswith("//"):
                    fields.append("embedded:" + _resolve(m.group(1).lstrip("*"), package,
                                                         imports))
                continue
            if (m := _TYPE.match(line)):
                name, underlying = m.groups()
                key = f"{package}.{name}"
                if underlying.startswith("struct"):
                    named[key] = "struct"
                    definitions[key] = f"{prefix}.{name}"
                    if underlying.rstrip().endswith("{"):
                        struct, fields = name, []
                else:
                    target = _resolve_expr(underlying.lstrip("= "), package, imports)
                    named[key] = target
                    if target.startswith("k8s.io/"):
                        # ``type A = v1.A`` or ``type A v1.A``: the same members
                        definitions[key] = f"{prefix}.{name}"
                        same_members[key] = target

    def type_default(expr: str, omit_empty: bool, depth: int = 0) -> Any:
        if depth > 8 or expr.startswith(("*", "[]", "map[", "interface")) or expr == "byte":
            return _NONE
        if expr in _ZERO:
            return _NONE if omit_empty else _ZERO[expr]
        if expr in _FOREIGN:
            kind = _FOREIGN[expr]
        elif expr in single_embedded:
            return type_default(single_embedded[expr], omit_empty, depth + 1)
        else:
            kind = named.get(expr, _NONE)
        if kind is _NONE:
            return _NONE
        if kind == "struct" or (isinstance(kind, str) and kind in named
                                and named[kind] == "struct"):
            return {}
        return type_default(kind, omit_empty, depth + 1)

    def flattened(key: str, depth: int = 0) -> list[tuple[str, str, bool, list[str], str,
                                                        dict[str, str]]]:
        # openapi-gen lists an inlined embedded struct's members as the parent's own
        out = []
        if key not in members and key in same_members and depth < 5:
            return flattened(same_members[key], depth + 1)
        for member in members.get(key, []):
            if member[0] or depth > 5:
                out.append(member)
            else:
                out.extend(flattened(_resolve_expr(member[1].lstrip("*"), member[4],
                                                   member[5]), depth + 1))
        return out

    out: dict[str, dict[str, dict[str, Any]]] = {}
    for key, definition in definitions.items():
        for prop, raw, omit_empty, comments, package, imports in flattened(key):
            entry = _property(prop, raw, omit_empty, comments, package, imports, type_default,
                              named)
            if entry:
                out.setdefault(definition, {})[prop] = entry
    return {k: dict(sorted(v.items())) for k, v in sorted(out.items())}


def _property(prop: str, raw: str, omit_empty: bool, comments: list[str], package: str,
              imports: dict[str, str], type_default: Any,
              named: dict[str, str]) -> dict[str, Any]:
    expr = _resolve_expr(raw, package, imports)
    tagged = [c[len("+default="):] for c in comments if c.startswith("+default=")]
    value = _tag_value(tagged[0]) if tagged else type_default(expr, omit_empty)
    entry = _element_entry(expr, type_default, named)
    if value is not _NONE:
        entry["default"] = value
    if expr in _WRITTEN_AS_NULL:
        entry[NULL_WHEN_ZERO] = True
    if not omit_empty and _is_slice_or_map(expr, named):
        entry[NULL_WHEN_EMPTY] = True
    builtin = _builtin(expr, named)
    if builtin is not None:
        entry[GO_ZERO] = _ZERO[builtin]
    return entry


def _builtin(expr: str, named: dict[str, str]) -> str | None:
    """The builtin a non-pointer member's type is (``type Protocol string``: ``string``), or
    None for a pointer, a struct, a slice or a map."""
    for _ in range(5):
        if expr in _ZERO:
            return expr
        if expr not in named:
            return None
        expr = named[expr]
    return None


def _is_slice_or_map(expr: str, named: dict[str, str]) -> bool:
    """A slice (not ``[]byte``, a base64 string whose protobuf bytes keep ``""``) or a map,
    named or not."""
    for _ in range(5):
        if expr not in named or not named[expr].startswith(("[]", "map[")):
            break
        expr = named[expr]
    return expr.startswith("map[") or (expr.startswith("[]") and expr != "[]byte")


def _element_entry(expr: str, type_default: Any, named: dict[str, str],
                   depth: int = 0) -> dict[str, Any]:
    """What a slice's items or a map's values get, nested (``map[string]ExtraValue``)."""
    while expr in named and named[expr].startswith(("[]", "map[")) and depth < 5:
        expr, depth = named[expr], depth + 1  # a named slice or map type
    element = _element(expr)
    if element is None or depth > 5:
        return {}
    inner = _element_entry(element, type_default, named, depth + 1)
    value = type_default(element, False)
    if value is not _NONE:
        inner["default"] = value
    return {"items" if expr.startswith("[]") else "additionalProperties": inner} if inner else {}


def _tag_value(text: str) -> Any:
    # ``+default=ref(Name)`` names a constant; the two in k8s.io/api are the constants' names
    if text.startswith("ref("):
        return {"AzureSharedBlobDisk": "Shared",
                "AzureDataDiskCachingReadWrite": "ReadWrite"}.get(text[4:-1], _NONE)
    return json.loads(text)


def _element(expr: str) -> str | None:
    if expr.startswith("[]"):
        return expr[2:]
    if expr.startswith("map["):
        return expr[expr.index("]") + 1:]
    return None


def _resolve(type_name: str, package: str, imports: dict[str, str]) -> str:
    alias, _, name = type_name.rpartition(".")
    if not alias:
        return name if name in _ZERO else f"{package}.{name}"
    return f"{imports.get(alias, alias)}.{name}"


def _resolve_expr(expr: str, package: str, imports: dict[str, str]) -> str:
    if expr.startswith("*"):
        return "*" + _resolve_expr(expr[1:], package, imports)
    if expr.startswith("[]"):
        return "[]" + _resolve_expr(expr[2:], package, imports)
    if expr.startswith("map["):
        key, _, value = expr[4:].partition("]")
        return f"map[{key}]" + _resolve_expr(value, package, imports)
    if not re.fullmatch(r"[\w.]+", expr):
        return expr
    return _resolve(expr, package, imports)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", action="append", required=True, metavar="MODULE=DIR")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent
                        / "setpoint" / "cluster" / "registry" / "gomembers.json")
    args = parser.parse_args()
    table = scan({m: Path(d) for m, _, d in (s.partition("=") for s in args.src)})
    args.out.write_text(json.dumps(table, indent=0, sort_keys=True) + "\n")
    print(f"{sum(len(v) for v in table.values())} properties -> {args.out}")


if __name__ == "__main__":
    main()

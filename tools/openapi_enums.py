"""Generate setpoint/cluster/openapi/enums.json from the Go sources of k8s.io/api.

kube-apiserver 1.32 serves the OpenAPI definitions openapi-gen wrote into
pkg/generated/openapi/zz_generated.openapi.go, and openapi-gen (k8s.io/kube-openapi
pkg/generators/enum.go, pkg/generators/openapi.go) gives every struct member whose Go type (or
the type it points to) is a string type marked ``// +enum`` an ``enum`` list (the type's
constants' values, sorted) and a description ending in a "Possible enum values:" paragraph, one
line per constant with its doc comment. The ``OpenAPIEnums`` feature gate (beta, on by
default) keeps them in the served documents. The spec files checked into
kubernetes/kubernetes (api/openapi-spec) are generated with ``OpenAPIEnums=false``
(hack/update-openapi-spec.sh), and so is every schema package built from them, the
``kubernetes-validate`` definitions the server starts from included: this table puts back
what that gate removed.

The table holds, per enum type, its constants' values and doc comments, and per definition the
properties of enum type. ``setpoint.cluster.openapi.enums`` turns them into the ``enum`` list
and the description text, as enum.go and openapi.go's ``generateDescription`` do.

Usage: ``.venv/bin/python tools/openapi_enums.py --api-src DIR [--out PATH]`` where DIR is a
checkout of k8s.io/api at the release's tag (v0.32.0 for Kubernetes 1.32).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

_TYPE = re.compile(r"^type\s+(\w+)\s+(.+?)\s*(\{)?\s*$")
# ``Name Type = "v"``, ``Name = Type("v")``, ``Name = Type(pkg.Other)``, ``Name Type = Other``
_CONST_ONE = re.compile(r"^const\s+(\w+)\s*([\w.]+)?\s*=\s*(.+?)\s*(?://.*)?$")
_CONST_IN_GROUP = re.compile(r"^\s+(\w+)\s*([\w.]+)?\s*=\s*(.+?)\s*(?://.*)?$")
_CONVERSION = re.compile(r"^([\w.]+)\((.+)\)$")
_MEMBER = re.compile(r'^\s+(\w+)\s+([^`\s]+)\s+`[^`]*json:"([^",]*)[^"]*"')
_IMPORT = re.compile(r'^\s*(?:import\s+)?(\w+)?\s*"([^"]+)"\s*$')


def _package_of(path: Path, root: Path) -> str:
    return "k8s.io/api/" + path.parent.relative_to(root).as_posix()


def _definition_prefix(package: str) -> str:
    # openapi-gen's friendly names: the Go package path reversed at its host, k8s.io → io.k8s
    host, _, rest = package.partition("/")
    return ".".join([*reversed(host.split(".")), *rest.split("/")])


def _comment_block(lines: list[str], index: int) -> list[str]:
    """The doc comment lines directly above ``lines[index]`` (gengo's CommentLines)."""
    out: list[str] = []
    i = index - 1
    while i >= 0 and lines[i].strip().startswith("//"):
        text = lines[i].strip()[2:]
        out.append(text[1:] if text.startswith(" ") else text)
        i -= 1
    return list(reversed(out))


def scan(root: Path) -> tuple[dict[str, list[list[str]]], dict[str, dict[str, str]]]:
    enum_types: set[str] = set()
    # (type key, const name, value expression, comment, package, imports)
    consts: list[tuple[str, str, str, str, str, dict[str, str]]] = []
    members: list[tuple[str, str, str]] = []  # (definition, json name, type key)
    files = sorted(p for p in root.rglob("*.go")
                   if not p.name.endswith("_test.go") and "/testdata/" not in p.as_posix())
    for path in files:
        package = _package_of(path, root)
        lines = path.read_text().splitlines()
        imports: dict[str, str] = {}
        in_imports = in_const = False
        struct: str | None = None
        for i, line in enumerate(lines):
            stripped = line.strip()
            if line.startswith("import ("):
                in_imports = True
                continue
            if line.startswith("import ") and (m := _IMPORT.match(line)):
                imports[m.group(1) or m.group(2).rsplit("/", 1)[-1]] = m.group(2)
                continue
            if in_imports:
                if stripped == ")":
                    in_imports = False
                elif (m := _IMPORT.match(line)):
                    imports[m.group(1) or m.group(2).rsplit("/", 1)[-1]] = m.group(2)
                continue
            if struct is not None:
                if line.startswith("}"):
                    struct = None
                elif (m := _MEMBER.match(line)) and m.group(3) not in ("", "-"):
                    members.append((struct, m.group(3),
                                    _resolve(m.group(2).lstrip("*"), package, imports)))
                continue
            if line.startswith("const ("):
                in_const = True
                continue
            if in_const:
                if line.startswith(")"):
                    in_const = False
                elif (m := _CONST_IN_GROUP.match(line)):
                    consts.append(_const(m, package, imports, _comment_block(lines, i)))
                continue
            if (m := _CONST_ONE.match(line)):
                consts.append(_const(m, package, imports, _comment_block(lines, i)))
                continue
            if (m := _TYPE.match(line)):
                name, underlying, brace = m.groups()
                if underlying == "string" and any(
                        c.strip() == "+enum" for c in _comment_block(lines, i)):
                    enum_types.add(f"{package}.{name}")
                elif underlying.startswith("struct") and brace:
                    struct = f"{_definition_prefix(package)}.{name}"
    literals = {f"{c[4]}.{c[1]}": c for c in consts}

    def value_of(expr: str, package: str, imports: dict[str, str], depth: int = 0) -> str | None:
        # a constant's value: a string literal, or another constant's (possibly converted)
        if expr.startswith('"') and expr.endswith('"'):
            return str(json.loads(expr))
        if depth > 5:
            return None
        if (m := _CONVERSION.match(expr)) is not None:
            return value_of(m.group(2), package, imports, depth + 1)
        if not expr.replace(".", "").isidentifier():
            return None
        other = literals.get(_resolve(expr, package, imports))
        return value_of(other[2], other[4], other[5], depth + 1) if other else None

    values: dict[str, list[list[str]]] = {}
    for key, name, expr, comment, package, imports in consts:
        if key not in enum_types:
            continue
        value = value_of(expr, package, imports)
        if value is None:
            continue
        # addIfNotPresent: one entry per value, the longer comment winning
        entries = values.setdefault(key, [])
        for entry in entries:
            if entry[0] == value:
                if len(entry[2]) < len(comment) or (
                        len(entry[2]) == len(comment) and entry[2] > comment):
                    entry[1:] = [name, comment]
                break
        else:
            entries.append([value, name, comment])
    fields: dict[str, dict[str, str]] = {}
    for definition, prop, key in members:
        if key in enum_types:
            fields.setdefault(definition, {})[prop] = key
    return ({k: sorted(v) for k, v in sorted(values.items())},
            {k: dict(sorted(v.items())) for k, v in sorted(fields.items())})


def _const(m: re.Match[str], package: str, imports: dict[str, str],
           comment: list[str]) -> tuple[str, str, str, str, str, dict[str, str]]:
    name, type_name, expr = m.groups()
    if not type_name and (conv := _CONVERSION.match(expr)):
        type_name = conv.group(1)  # ``Name = Type("v")``
    key = _resolve(type_name, package, imports) if type_name else ""
    return key, name, expr, " ".join(comment), package, imports


def _resolve(type_name: str, package: str, imports: dict[str, str]) -> str:
    alias, _, name = type_name.rpartition(".")
    if not alias:
        return f"{package}.{name}"
    return f"{imports.get(alias, alias)}.{name}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--api-src", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent
                        / "setpoint" / "cluster" / "openapi" / "enums.json")
    args = parser.parse_args()
    types, fields = scan(args.api_src)
    args.out.write_text(json.dumps({"types": types, "fields": fields}, indent=0,
                                   sort_keys=True) + "\n")
    print(f"{len(types)} enum types, {sum(len(v) for v in fields.values())} fields "
          f"-> {args.out}")


if __name__ == "__main__":
    main()

"""additionalPrinterColumns: column definitions, the JSONPath subset, and cell values.

Follows the apiserver's ``tableconvertor``: a Name column first, then the version's columns
(an implicit Age column when it declares none); a cell is the first JSONPath match, rendered
by the column type (``string`` columns print like ``kubectl``'s JSONPath printer, ``date``
columns become a human duration), and ``None`` when nothing matches.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from .fielderrors import go_float

NAME_DESCRIPTION = (
    "Name must be unique within a namespace. Is required when creating resources, although "
    "some resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names")
CREATION_TIMESTAMP_DESCRIPTION = (
    "CreationTimestamp is a timestamp representing the server time when this object was "
    "created. It is not guaranteed to be set in happens-before order across separate "
    "operations. Clients may not set this value. It is represented in RFC3339 form and is in "
    "UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata")


def printer_columns(version: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The version's additionalPrinterColumns, or the implicit Age column when it has none."""
    columns = version.get("additionalPrinterColumns") or []
    if columns:
        return [dict(c) for c in columns]
    return [{"name": "Age", "type": "date", "description": CREATION_TIMESTAMP_DESCRIPTION,
             "jsonPath": ".metadata.creationTimestamp"}]


def column_definitions(columns: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Table ``columnDefinitions``: Name, then each printer column."""
    out = [{"name": "Name", "type": "string", "format": "name",
            "description": NAME_DESCRIPTION, "priority": 0}]
    for c in columns:
        description = c.get("description") or \
            f"Custom resource definition column (in JSONPath format): {c.get('jsonPath', '')}"
        out.append({"name": c.get("name", ""), "type": c.get("type", ""),
                    "format": c.get("format", ""), "description": description,
                    "priority": int(c.get("priority") or 0)})
    return out


# -- JSONPath -----------------------------------------------------------------------------------

class JSONPathError(ValueError):
    """The column's JSONPath cannot be parsed."""


_FILTER = re.compile(r"^\?\(\s*@((?:\.[\w-]+|\['[^']*'\])*)\s*(?:(==|!=|<=|>=|<|>)\s*(.+?))?\s*\)$")


def _split(path: str) -> list[tuple[str, str]]:
    """Tokens of a path: ("field", name), ("bracket", inner) or ("recursive", name)."""
    p = path.strip()
    if p.startswith("{") and p.endswith("}"):
        p = p[1:-1]
    tokens: list[tuple[str, str]] = []
    i = 0
    while i < len(p):
        ch = p[i]
        if ch == ".":
            if p.startswith("..", i):
                m = re.match(r"\.\.([\w-]+|\*)", p[i:])
                if not m:
                    raise JSONPathError(f"unrecognized path {path!r}")
                tokens.append(("recursive", m.group(1)))
                i += m.end()
                continue
            m = re.match(r"\.([\w-]+|\*)?", p[i:])
            assert m is not None
            if m.group(1):
                tokens.append(("field", m.group(1)))
            i += m.end()
        elif ch == "[":
            depth, j = 0, i
            while j < len(p):
                if p[j] == "[":
                    depth += 1
                elif p[j] == "]":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            if j >= len(p):
                raise JSONPathError(f"unterminated [ in {path!r}")
            tokens.append(("bracket", p[i + 1:j].strip()))
            i = j + 1
        elif ch == "@" and i == 0:
            i += 1
        else:
            m = re.match(r"[\w-]+", p[i:])
            if not m:
                raise JSONPathError(f"unrecognized character in {path!r} at {i}")
            tokens.append(("field", m.group(0)))
            i += m.end()
    return tokens


def _literal(text: str) -> Any:
    text = text.strip()
    if text[:1] in ("'", '"') and text[-1:] == text[:1]:
        return text[1:-1]
    try:
        return json.loads(text)
    except ValueError:
        return text


def _compare(left: Any, op: str, right: Any) -> bool:
    try:
        return bool({"==": left == right, "!=": left != right}[op] if op in ("==", "!=") else {
            "<": left < right, ">": left > right, "<=": left <= right, ">=": left >= right}[op])
    except TypeError:
        return False


def _step(values: list[Any], token: tuple[str, str]) -> list[Any]:
    kind, arg = token
    out: list[Any] = []
    for v in values:
        if kind == "field":
            if arg == "*":
                out += list(v.values()) if isinstance(v, dict) else list(v) \
                    if isinstance(v, list) else []
            elif isinstance(v, dict) and arg in v:
                out.append(v[arg])
        elif kind == "recursive":
            out += _recursive(v, arg)
        else:
            out += _bracket(v, arg)
    return out


def _recursive(v: Any, name: str) -> list[Any]:
    found: list[Any] = []
    if isinstance(v, dict):
        if name in v or name == "*":
            found += [v[name]] if name != "*" else list(v.values())
        for child in v.values():
            found += _recursive(child, name)
    elif isinstance(v, list):
        for child in v:
            found += _recursive(child, name)
    return found


def _bracket(v: Any, arg: str) -> list[Any]:
    if arg == "*":
        return list(v) if isinstance(v, list) else list(v.values()) if isinstance(v, dict) else []
    if arg[:1] in ("'", '"'):
        key = arg[1:-1]
        return [v[key]] if isinstance(v, dict) and key in v else []
    if arg.startswith("?"):
        m = _FILTER.match(arg)
        if not m or not isinstance(v, list):
            return []
        sub_path, op, rhs = m.groups()
        sub_tokens = _split(sub_path) if sub_path else []
        out = []
        for item in v:
            found = [item]
            for t in sub_tokens:
                found = _step(found, t)
            if op is None:
                if found:
                    out.append(item)
            elif found and _compare(found[0], op, _literal(rhs)):
                out.append(item)
        return out
    if not isinstance(v, list):
        return []
    if ":" in arg:
        parts = [int(p) if p.strip() else None for p in arg.split(":")[:2]]
        return v[slice(parts[0], parts[1])]
    try:
        i = int(arg)
    except ValueError:
        return []
    return [v[i]] if -len(v) <= i < len(v) else []


def evaluate_column(obj: Any, json_path: str) -> list[Any]:
    """All values ``json_path`` selects in ``obj`` (missing keys select nothing)."""
    values = [obj]
    for token in _split(json_path):
        values = _step(values, token)
    return values


# -- cells ----------------------------------------------------------------------------------------

def human_duration(seconds: float) -> str:
    """``duration.HumanDuration``: ``5s``, ``3m20s``, ``2d3h``, ``4y``..."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m" if s % 60 == 0 else f"{minutes}m{s % 60}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        return f"{hours}h" if minutes % 60 == 0 else f"{hours}h{minutes % 60}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d" if hours % 24 == 0 else f"{hours // 24}d{hours % 24}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        years, days = hours // 24 // 365, (hours // 24) % 365
        return f"{years}y" if days == 0 else f"{years}y{days}d"
    return f"{hours // 24 // 365}y"


def _text(value: Any) -> str:
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return go_float(value)
    return str(value)


def _parse_time(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def cell(column: Mapping[str, Any], obj: Any, now: datetime | None = None) -> Any:
    """The Table cell of ``column`` for ``obj``."""
    try:
        results = evaluate_column(obj, str(column.get("jsonPath") or ""))
    except JSONPathError:
        return None
    if not results or results[0] is None:
        return None
    value = results[0]
    ctype = column.get("type")
    if ctype == "string":
        return _text(value)
    if ctype == "integer":
        if isinstance(value, bool):
            return None
        return int(value) if isinstance(value, int | float) else None
    if ctype == "number":
        if isinstance(value, bool):
            return None
        return float(value) if isinstance(value, int | float) else None
    if ctype == "boolean":
        return value if isinstance(value, bool) else None
    if ctype == "date":
        if not isinstance(value, str):
            return None
        when = _parse_time(value)
        if when is None:
            return "<invalid>"
        now = now or datetime.now(UTC)
        return human_duration((now - when).total_seconds())
    return None


def row_cells(columns: list[Mapping[str, Any]], obj: Mapping[str, Any],
              now: datetime | None = None) -> list[Any]:
    """A Table row's cells: the name, then one cell per printer column."""
    name = (obj.get("metadata") or {}).get("name", "")
    return [name, *(cell(c, obj, now) for c in columns)]

"""The JSONPath subset of printer columns, evaluated the way kubectl's jsonpath package does.

Supports ``.field``, ``['quoted.key']``, ``[n]`` (negative too), ``[*]``, ``[a:b]``, ``..``
(recursive descent) and filters ``[?(@.path OP literal)]`` / ``[?(@.path)]``. Missing keys
yield no result rather than an error, as the apiserver's table convertor allows.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

_TOKEN = re.compile(r"""
    \.\.(?P<rfield>[A-Za-z0-9_\-$/]+|\*)?     # recursive descent
  | \.(?P<field>[A-Za-z0-9_\-$/]+|\*)          # .field or .*
  | \[\s*(?P<quoted>'[^']*'|"[^"]*")\s*\]     # ['key']
  | \[\?\((?P<filter>.*?)\)\]                  # [?(...)]
  | \[(?P<index>[^\]]*)\]                      # [0] [*] [1:3]
""", re.VERBOSE)
_FILTER = re.compile(r"^\s*@(?P<path>[^=!<>\s]*)\s*(?:(?P<op>==|!=|<=|>=|<|>)\s*(?P<lit>.+?))?\s*$")


class JSONPathError(ValueError):
    """The expression is not valid JSONPath."""


def parse(expression: str) -> list[tuple[str, Any]]:
    """The steps of ``expression`` (``{.a.b}`` braces are optional)."""
    text = expression.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1].strip()
    if text.startswith("$"):
        text = text[1:]
    steps: list[tuple[str, Any]] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise JSONPathError(f"unrecognized character in {expression!r} at {pos}")
        pos = m.end()
        if m.group(0).startswith(".."):
            steps.append(("recursive", None))
            name = m.group("rfield")
            if name:
                steps.append(("field", name))
        elif m.group("field") is not None:
            steps.append(("field", m.group("field")))
        elif m.group("quoted") is not None:
            steps.append(("field", m.group("quoted")[1:-1]))
        elif m.group("filter") is not None:
            steps.append(("filter", _parse_filter(m.group("filter"))))
        else:
            steps.append(_parse_index(m.group("index").strip()))
    return steps


def _parse_filter(text: str) -> tuple[list[tuple[str, Any]], str | None, Any]:
    m = _FILTER.match(text)
    if not m:
        raise JSONPathError(f"unsupported filter {text!r}")
    path = parse(m.group("path")) if m.group("path") else []
    literal: Any = None
    if m.group("op"):
        raw = m.group("lit").strip()
        if raw[:1] in ("'", '"'):
            literal = raw[1:-1]
        else:
            try:
                literal = json.loads(raw)
            except ValueError as exc:
                raise JSONPathError(f"unsupported literal {raw!r}") from exc
    return path, m.group("op"), literal


def _parse_index(text: str) -> tuple[str, Any]:
    if text == "*":
        return ("field", "*")
    if ":" in text:
        parts = [p.strip() for p in text.split(":")]
        try:
            bounds = [int(p) if p else None for p in parts[:2]]
        except ValueError as exc:
            raise JSONPathError(f"invalid slice [{text}]") from exc
        return ("slice", (bounds[0], bounds[1] if len(bounds) > 1 else None))
    try:
        return ("index", int(text))
    except ValueError as exc:
        raise JSONPathError(f"invalid index [{text}]") from exc


def find(obj: Any, expression: str | list[tuple[str, Any]]) -> list[Any]:
    """Every value ``expression`` selects in ``obj``, in document order."""
    steps = parse(expression) if isinstance(expression, str) else expression
    current = [obj]
    for kind, arg in steps:
        current = [v for value in current for v in _step(value, kind, arg)]
    return current


def _step(value: Any, kind: str, arg: Any) -> Iterator[Any]:
    if kind == "field":
        if arg == "*":
            if isinstance(value, dict):
                yield from value.values()
            elif isinstance(value, list):
                yield from value
        elif isinstance(value, dict) and arg in value:
            yield value[arg]
    elif kind == "index":
        if isinstance(value, list) and -len(value) <= arg < len(value):
            yield value[arg]
    elif kind == "slice":
        if isinstance(value, list):
            yield from value[arg[0]:arg[1]]
    elif kind == "recursive":
        yield from _descend(value)
    elif kind == "filter":
        path, op, literal = arg
        items = value if isinstance(value, list) else (
            list(value.values()) if isinstance(value, dict) else [])
        for item in items:
            found = find(item, path)
            if op is None:
                if found:
                    yield item
            elif any(_compare(f, op, literal) for f in found):
                yield item


def _descend(value: Any) -> Iterator[Any]:
    yield value
    children = value.values() if isinstance(value, dict) else (
        value if isinstance(value, list) else ())
    for child in children:
        yield from _descend(child)


def _compare(left: Any, op: str, right: Any) -> bool:
    if op == "==":
        return bool(left == right)
    if op == "!=":
        return bool(left != right)
    try:
        return bool({"<": left < right, ">": left > right, "<=": left <= right,
                     ">=": left >= right}[op])
    except TypeError:
        return False

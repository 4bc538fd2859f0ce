"""Field paths and field sets, as in structured-merge-diff's ``fieldpath`` package.

A path element is kept as its ``fieldsV1`` spelling (``f:name``, ``k:{"name":"app"}``,
``v:"x"``, ``i:0``): it is hashable, needs no parsing on the hot path and is already what
goes on the wire. A field set is a tree of plain dicts, ``{element: child}``, where the key
``"."`` in a child marks that child's path as a member of the set; that is the ``fieldsV1``
shape except that leaf members are ``{".": {}}`` instead of ``{}``. Every operation is one
walk over the trees involved.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Iterator
from typing import Any

from setpoint.machinery import errors

PathElement = str
Path = tuple[PathElement, ...]
Node = dict[str, "Node"]

MEMBER = "."

# -- path elements ------------------------------------------------------------------------


def go_json(value: Any) -> str:
    """JSON as Go's encoder writes it: compact, HTML-escaped, integral floats as ints."""
    text = json.dumps(_normalize_number(value), separators=(",", ":"), ensure_ascii=False)
    if "<" in text or ">" in text or "&" in text or "\u2028" in text or "\u2029" in text:
        text = (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
                .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))
    return text


def _normalize_number(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
        return int(value)
    if isinstance(value, dict):
        return {k: _normalize_number(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalize_number(v) for v in value]
    return value


def field(name: str) -> PathElement:
    return "f:" + name


def key(fields: Iterable[tuple[str, Any]]) -> PathElement:
    """The element of an associative-list item; key fields are sorted by name."""
    body = ",".join(f"{json.dumps(n, ensure_ascii=False)}:{go_json(v)}" for n, v in sorted(fields))
    return "k:{" + body + "}"


@functools.lru_cache(maxsize=8192)
def string_key(name: str, v: str) -> PathElement:
    """``key`` of one string key field: the same items come back at every write."""
    return key(((name, v),))


def value(v: Any) -> PathElement:
    return "v:" + go_json(v)


def index(i: int) -> PathElement:
    return f"i:{i}"


def field_name(pe: PathElement) -> str | None:
    return pe[2:] if pe.startswith("f:") else None


@functools.lru_cache(maxsize=4096)
def _sort_key(pe: PathElement) -> tuple[Any, ...]:
    kind, body = pe[0], pe[2:]
    if kind == "f":
        return (0, body)
    if kind == "k":
        return (1, tuple((n, _value_key(v)) for n, v in json.loads(body).items()))
    if kind == "v":
        return (2, _value_key(json.loads(body)))
    if kind == "i":
        return (3, int(body))
    return (4, body)


def _value_key(v: Any) -> tuple[Any, ...]:
    """structured-merge-diff's total order of values: numbers, strings, bools, lists, maps, null."""
    if isinstance(v, bool):
        return (2, v)
    if isinstance(v, int | float):
        return (0, v)
    if isinstance(v, str):
        return (1, v)
    if isinstance(v, list):
        return (3, tuple(_value_key(x) for x in v))
    if isinstance(v, dict):
        return (4, tuple((k, _value_key(v[k])) for k in sorted(v)))
    return (5,)


def sort_elements(elements: Iterable[PathElement]) -> list[PathElement]:
    items = list(elements)
    if len(items) < 2:
        return items
    if not [pe for pe in items if pe[:2] != "f:"]:  # (a list: cheaper than all() here)
        return sorted(items)  # fields sort by name, as their spellings do
    return sorted(items, key=_sort_key)


def _go_value(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ",".join(_go_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "".join(f"{k}={_go_value(x)}" for k, x in v.items())
    return str(_normalize_number(v))


def element_string(pe: PathElement) -> str:
    """The element as structured-merge-diff prints it in conflicts: ``.name``, ``[k="v"]``."""
    kind, body = pe[0], pe[2:]
    if kind == "f":
        return "." + body
    if kind == "k":
        return "[" + ",".join(f"{n}={_go_value(v)}" for n, v in json.loads(body).items()) + "]"
    if kind == "v":
        return f"[={_go_value(json.loads(body))}]"
    if kind == "i":
        return f"[{body}]"
    return "{{invalid path element}}"


def path_string(path: Path) -> str:
    """A path as Kubernetes prints it in apply conflicts, e.g. ``.spec.replicas``."""
    return "".join(element_string(pe) for pe in path)


# -- sets ---------------------------------------------------------------------------------


class FieldSet:
    """A set of field paths (structured-merge-diff's ``fieldpath.Set``)."""

    __slots__ = ("root",)

    def __init__(self, root: Node | None = None) -> None:
        self.root: Node = root if root is not None else {}

    def __repr__(self) -> str:
        return f"FieldSet({[path_string(p) for p in self]!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FieldSet) and _normal(self.root) == _normal(other.root)

    # mutable, so unhashable; typeshed types __hash__ as a method, not as None
    __hash__ = None  # type: ignore[assignment]

    @classmethod
    def of(cls, *paths: Iterable[PathElement]) -> FieldSet:
        s = cls()
        for p in paths:
            s.insert(tuple(p))
        return s

    def insert(self, path: Path) -> None:
        """Add ``path`` (not its parents); the empty path, the whole object, is never owned.

        Only for a set being built: the results of set operations share nodes.
        """
        if not path:
            return
        node = self.root
        for pe in path:
            node = node.setdefault(pe, {})
        node[MEMBER] = {}

    def has(self, path: Path) -> bool:
        node: Node | None = self.root
        for pe in path:
            node = node.get(pe) if node is not None else None
            if node is None:
                return False
        return bool(path) and node is not None and MEMBER in node

    def empty(self) -> bool:
        return _empty(self.root)

    def __iter__(self) -> Iterator[Path]:
        """Member paths, in structured-merge-diff's order: members, then children, sorted."""
        yield from _iterate(self.root, ())

    def with_prefix(self, pe: PathElement) -> FieldSet:
        child = self.root.get(pe)
        return FieldSet({k: v for k, v in child.items() if k != MEMBER} if child else {})

    def union(self, other: FieldSet) -> FieldSet:
        return FieldSet(_union(self.root, other.root))

    def intersection(self, other: FieldSet) -> FieldSet:
        return FieldSet(_intersection(self.root, other.root))

    def difference(self, other: FieldSet) -> FieldSet:
        """Members of self not members of other; a parent never removes its children."""
        return FieldSet(_difference(self.root, other.root))

    def recursive_difference(self, other: FieldSet) -> FieldSet:
        """Like difference, but a member of other also removes everything beneath it."""
        return FieldSet(_recursive_difference(self.root, other.root))

    def to_fields_v1(self) -> dict[str, Any]:
        return encode(self)


def _empty(node: Node) -> bool:
    if MEMBER in node:
        return False
    # a loop, not all() over a generator: this runs for every node of every set a write
    # compares
    for child in node.values():  # noqa: SIM110
        if not _empty(child):
            return False
    return True


def _normal(node: Node) -> Node:
    out: Node = {}
    for k, child in node.items():
        if k == MEMBER:
            out[k] = {}
            continue
        c = _normal(child)
        if c:
            out[k] = c
    return out


def _iterate(node: Node, prefix: Path) -> Iterator[Path]:
    children = sort_elements(k for k in node if k != MEMBER)
    for pe in children:
        if MEMBER in node[pe]:
            yield (*prefix, pe)
    for pe in children:
        yield from _iterate(node[pe], (*prefix, pe))


def _union(a: Node, b: Node) -> Node:
    # set operations share unchanged subtrees with their operands: sets are values, only
    # ever mutated (insert) while being built
    if not b:
        return a
    if not a:
        return b
    out: Node | None = None  # b adds nothing to a: a itself is the answer, so callers can tell
    for k, child in b.items():
        mine = a.get(k)
        if mine is None:
            united = child
        elif k == MEMBER:
            continue
        else:
            united = _union(mine, child)
            if united is mine:
                continue
        if out is None:
            out = dict(a)
        out[k] = united
    return a if out is None else out


def union_nodes(a: Node, b: Node) -> Node:
    """The union of two set trees (for sets built node by node)."""
    return _union(a, b)


def _intersection(a: Node, b: Node) -> Node:
    out: Node = {}
    for k, child in a.items():
        other = b.get(k)
        if other is None:
            continue
        if k == MEMBER:
            out[k] = {}
            continue
        c = _intersection(child, other)
        if c:
            out[k] = c
    return out


def _difference(a: Node, b: Node) -> Node:
    if not b:
        return a  # shared, as _union shares: sets are values once built
    out: Node = {}
    same = True  # nothing of a removed: a itself is the answer, so callers can tell
    for k, child in a.items():
        other = b.get(k)
        if k == MEMBER:
            if other is None:
                out[k] = {}
            else:
                same = False
            continue
        c = _difference(child, other) if other is not None else child
        if c:
            out[k] = c
            if c is not child:
                same = False
        else:
            same = False
    return a if same else out


def _recursive_difference(a: Node, b: Node) -> Node:
    if not b:
        return a
    out: Node = {}
    for k, child in a.items():
        other = b.get(k)
        if k == MEMBER:
            if other is None:
                out[k] = {}
            continue
        if other is not None and MEMBER in other:
            continue
        c = _recursive_difference(child, other) if other is not None else child
        if c:
            out[k] = c
    return out


# -- fieldsV1 -----------------------------------------------------------------------------


def encode(s: FieldSet) -> dict[str, Any]:
    """The ``fieldsV1`` object of a set, keys in structured-merge-diff's order."""
    return _encode(s.root)


def _encode(node: Node) -> dict[str, Any]:
    out: dict[str, Any] = {}
    elements = [k for k in node if k != MEMBER]
    for pe in sort_elements(elements) if len(elements) > 1 else elements:
        child = node[pe]
        if len(child) == 1 and MEMBER in child:
            out[pe] = {}  # a leaf: most of a set
            continue
        body = _encode(child)  # empty exactly when no member lies beneath
        if body:
            out[pe] = {MEMBER: {}, **body} if MEMBER in child else body
        elif MEMBER in child:
            out[pe] = {}
    return out


_PREFIXES = ("f:", "k:", "v:", "i:")


def decode(fields_v1: Any) -> FieldSet:
    """Parse a ``fieldsV1`` object; raises ``ValueError`` on anything malformed."""
    if fields_v1 is None:
        return FieldSet()
    if not isinstance(fields_v1, dict):
        raise ValueError("fieldsV1 must be an object")
    return FieldSet(_decode(fields_v1))


def _decode(obj: dict[str, Any]) -> Node:
    out: Node = {}
    for k, child in obj.items():
        if not isinstance(child, dict):
            raise ValueError(f"fieldsV1 entry {k!r} must be an object")
        if k == MEMBER:
            out[MEMBER] = {}
            continue
        if not k.startswith(_PREFIXES):
            raise ValueError(f"unknown path element {k!r}")
        pe = _canonical(k)
        node = _decode(child) if child else {MEMBER: {}}
        out[pe] = _union(out[pe], node) if pe in out else node
    return out


def _canonical(pe: str) -> PathElement:
    """Re-spell k:/v: elements the way this module builds them, so lookups match."""
    kind, body = pe[0], pe[2:]
    try:
        if kind == "k":
            keys = json.loads(body)
            if not isinstance(keys, dict):
                raise ValueError(f"key element {pe!r} must hold an object")
            return key(keys.items())
        if kind == "v":
            return value(json.loads(body))
        if kind == "i":
            return index(int(body))
    except json.JSONDecodeError as e:
        raise ValueError(f"invalid path element {pe!r}: {e}") from e
    return pe


def decode_or_raise(fields_v1: Any) -> FieldSet:
    """``decode`` for request validation: malformed input is a 400 BadRequest."""
    try:
        return decode(fields_v1)
    except ValueError as e:
        raise errors.bad_request(f"invalid fieldsV1: {e}") from e

"""``cmp.Diff(x, y)`` of github.com/google/go-cmp v0.6.0 over Go values described by a type
table: the comparison tree (cmp/compare.go, report_value.go) and its report
(report_compare.go FormatDiff/formatDiffList, report_reflect.go FormatValue/FormatType),
laid out by gocmptext. kube-apiserver quotes such a diff in some errors (ValidatePodUpdate).

Values: a struct is a dict of every field, a slice a list (None for nil), a map a dict (None
for nil), a pointer a one-element tuple (None for nil), strings, ints and bools as they are.
Not reproduced: Equal methods, Stringer values other than map keys a type marks, the
specialised diff of strings or numeric slices of 32 elements and more (report_slices.go),
cycles and reference markers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .gocmpedits import IDENTITY, MODIFIED, UNIQUE_X, difference
from .gocmptext import (
    INSERTED,
    NIL,
    REMOVED,
    DiffStats,
    Line,
    Record,
    TextList,
    TextNode,
    Wrap,
)
from .gofmt import go_quote

EMIT, ELIDE, AUTO = "emit", "elide", "auto"  # typeMode
_COMPOSITE = ("struct", "slice", "map")
_MAX_VERBOSITY_PRESET = 6
_NUM_CONTEXT_RECORDS = 2


@dataclass(frozen=True)
class GoType:
    """A Go type as reflect sees it: ``kind`` one of struct, slice, map, ptr, string, int,
    bool, float; ``name`` as reflect.Type.String() prints a named type ("core.PodSpec")."""

    kind: str
    name: str = ""
    fields: tuple[tuple[str, GoType], ...] = ()
    elem: GoType | None = None
    key: GoType | None = None
    stringer: bool = False  # has a String method (a ResourceName): printed s"..."
    # has an ``Equal(T) bool`` method (resource.Quantity): compareAny's tryMethod compares
    # by it, a leaf of the tree, so the value is printed as FormatValue prints it
    equal: Callable[[Any, Any], bool] | None = None

    def type_string(self) -> str:
        if self.name:
            return self.name
        elem = self.elem.type_string() if self.elem else ""
        if self.kind == "slice":
            return "[]" + elem
        if self.kind == "ptr":
            return "*" + elem
        if self.kind == "map":
            return f"map[{self.key.type_string() if self.key else ''}]{elem}"
        return self.kind


def zero(t: GoType) -> Any:
    if t.kind == "struct":
        return {name: zero(ft) for name, ft in t.fields}
    return {"string": "", "int": 0, "bool": False, "float": 0.0}.get(t.kind)


def is_zero(t: GoType, v: Any) -> bool:
    if t.kind == "struct":
        return all(is_zero(ft, v[name]) for name, ft in t.fields)
    return bool(v == zero(t)) if t.kind in ("string", "int", "bool", "float") else v is None


_MISSING = object()  # an element or entry one side does not have (reflect.Value{})


@dataclass
class Node:
    """report_value.go valueNode: one comparison and its children."""

    type: GoType
    x: Any
    y: Any
    key: str = ""
    records: list[Node] = field(default_factory=list)
    value: Node | None = None  # a pointer's pointee
    same: int = 0
    diff: int = 0
    children: int = 0
    depth: int = 0

    def add(self, child: Node) -> Node:
        self.same += child.same
        self.diff += child.diff
        self.children += child.children + 1
        self.depth = max(self.depth, child.depth + 1)
        return child


def compare(t: GoType, x: Any, y: Any, key: str = "") -> Node:
    """compareAny over the type table: the tree the reporter formats."""
    node = Node(t, x, y, key)
    if x is _MISSING or y is _MISSING:
        node.diff = 1
        return node
    if t.equal is not None:
        _leaf(node, t.equal(x, y))
    elif t.kind == "struct":
        for name, ft in t.fields:
            node.records.append(node.add(compare(ft, x[name], y[name], name)))
    elif t.kind == "ptr":
        if x is None or y is None:
            _leaf(node, x is None and y is None)
        else:
            node.value = node.add(compare(t.elem or GoType("int"), x[0], y[0]))
    elif t.kind == "slice":
        if x is None or y is None:
            _leaf(node, x is None and y is None)
        else:
            _compare_slice(node, t.elem or GoType("int"), x, y)
    elif t.kind == "map":
        if x is None or y is None:
            _leaf(node, x is None and y is None)
        else:
            for k in sorted(set(x) | set(y)):
                node.records.append(node.add(compare(
                    t.elem or GoType("int"), x.get(k, _MISSING), y.get(k, _MISSING), k)))
    else:
        _leaf(node, x == y)
    return node


def _leaf(node: Node, equal: bool) -> None:
    if equal:
        node.same = 1
    else:
        node.diff = 1


def _compare_slice(node: Node, elem: GoType, x: list[Any], y: list[Any]) -> None:
    def f(ix: int, iy: int) -> tuple[int, int]:
        n = compare(elem, x[ix], y[iy])
        return n.same, n.diff

    ix = iy = 0
    for edit in difference(len(x), len(y), f):
        if edit in (IDENTITY, MODIFIED):
            node.records.append(node.add(compare(elem, x[ix], y[iy])))
            ix, iy = ix + 1, iy + 1
        elif edit == UNIQUE_X:
            node.records.append(node.add(compare(elem, x[ix], _MISSING)))
            ix += 1
        else:
            node.records.append(node.add(compare(elem, _MISSING, y[iy])))
            iy += 1


@dataclass(frozen=True)
class Options:
    """formatOptions: the diff mode (""/" "/"-"/"+"), the type mode, the verbosity."""

    mode: str = ""
    type_mode: str = EMIT
    verbosity: int = 0
    limit: bool = False
    avoid_stringer: bool = False

    def with_mode(self, mode: str) -> Options:
        return Options(mode, self.type_mode, self.verbosity, self.limit, self.avoid_stringer)

    def with_type(self, type_mode: str) -> Options:
        return Options(self.mode, type_mode, self.verbosity, self.limit, self.avoid_stringer)

    def with_verbosity(self, level: int) -> Options:
        return Options(self.mode, self.type_mode, level, True, self.avoid_stringer)

    def level(self) -> int:
        return max(0, min(16, self.verbosity))

    def preset(self, i: int) -> Options:
        return Options(self.mode, self.type_mode, self.level() + 2 * i, self.limit,
                       self.avoid_stringer or i > 0)

    # -- FormatDiff ------------------------------------------------------------------------
    def format_diff(self, v: Node) -> TextNode | None:
        opts = self
        if opts.mode == " ":
            opts = opts.with_verbosity(1)
        elif opts.level() < 3:
            opts = opts.with_verbosity(3)
        if v.depth == 0:
            if opts.mode in ("", " "):
                if v.diff == 0:
                    outx = opts.format_value(v.type, v.x)
                    outy = opts.format_value(v.type, v.y)
                    return outx if outx is not None and outy is not None \
                        and outx.length() < outy.length() else outy
                outx = opts.with_type(ELIDE).format_value(v.type, v.x)
                outy = opts.with_type(ELIDE).format_value(v.type, v.y)
                i = 0
                while i <= _MAX_VERBOSITY_PRESET and outx is not None and outy is not None \
                        and outx == outy:
                    o2 = opts.preset(i).with_type(ELIDE)
                    outx, outy = o2.format_value(v.type, v.x), o2.format_value(v.type, v.y)
                    i += 1
                records = TextList()
                if outx is not None:
                    records.records.append(Record(outx, diff=REMOVED))
                if outy is not None:
                    records.records.append(Record(outy, diff=INSERTED))
                return opts.with_type(EMIT).format_type(v.type, records)
            return opts.format_value(v.type, v.x if opts.mode == REMOVED else v.y)
        if v.type.kind in _COMPOSITE:
            return opts.format_type(v.type, opts._format_list(v))
        # a pointer
        inner = opts.format_diff(v.value) if v.value is not None else None
        return Wrap("&", inner if inner is not None else NIL)

    def _format_list(self, v: Node) -> TextNode:
        kind = v.type.kind
        name = {"struct": "field", "slice": "element", "map": "entry"}[kind]
        opts = self.with_type(AUTO if kind == "struct" else ELIDE)
        max_len = -1
        if opts.limit:
            lvl = opts.level()
            max_len = (((1 << lvl) >> 1) << 2) if opts.mode == " " else ((1 << lvl) << 1)
            opts = Options(opts.mode, opts.type_mode, opts.verbosity - 1, opts.limit,
                           opts.avoid_stringer)

        def key(r: Node) -> str:
            return format_map_key(v.type.key, r.key) if kind == "map" and v.type.key \
                else (r.key if kind == "struct" else "")

        recs = v.records
        if opts.mode in (" ", REMOVED, INSERTED):
            out = TextList()
            ellipsis = False
            for r in recs:
                if len(out.records) == max_len:
                    ellipsis = True
                    break
                if kind == "struct":
                    xz = is_zero(r.type, r.x) if r.x is not _MISSING else True
                    yz = is_zero(r.type, r.y) if r.y is not _MISSING else True
                    if {" ": xz or yz, REMOVED: xz, INSERTED: yz}[opts.mode]:
                        continue
                text = opts.format_diff(r)
                if text is not None:
                    out.records.append(Record(text, key=key(r)))
            if ellipsis:
                out.append_ellipsis()
            return Wrap("{", out, "}")

        out = TextList()
        num_diffs = 0
        groups = _coalesce(name, recs)
        max_group = DiffStats(name)
        for gi, ds in enumerate(groups):
            if max_len >= 0 and num_diffs >= max_len:
                max_group = max_group.append(ds)
                continue
            if ds.num_diff() == 0:
                lo = hi = 0
                equal = ds.ignored + ds.identical
                while lo < _NUM_CONTEXT_RECORDS and lo + hi < equal and gi != 0:
                    lo += 1
                while hi < _NUM_CONTEXT_RECORDS and lo + hi < equal and gi != len(groups) - 1:
                    hi += 1
                if equal - (lo + hi) == 1 and ds.ignored == 0:
                    hi += 1
                for r in recs[:lo]:
                    text = opts.with_mode(" ").format_diff(r)
                    out.records.append(Record(text or NIL, key=key(r)))
                if equal > lo + hi:
                    out.append_ellipsis(DiffStats(name, identical=ds.identical - (lo + hi)))
                for r in recs[equal - hi:equal]:
                    text = opts.with_mode(" ").format_diff(r)
                    out.records.append(Record(text or NIL, key=key(r)))
                recs = recs[equal:]
                continue
            for r in recs[:ds.num_diff()]:
                if r.children == r.depth:
                    outx = opts.with_mode(REMOVED).format_diff(r)
                    outy = opts.with_mode(INSERTED).format_diff(r)
                    i = 0
                    while i <= _MAX_VERBOSITY_PRESET and outx is not None and outy is not None \
                            and outx == outy:
                        o2 = opts.preset(i)
                        outx = o2.with_mode(REMOVED).format_diff(r)
                        outy = o2.with_mode(INSERTED).format_diff(r)
                        i += 1
                    if outx is not None:
                        out.records.append(Record(outx, diff=REMOVED, key=key(r)))
                    if outy is not None:
                        out.records.append(Record(outy, diff=INSERTED, key=key(r)))
                else:
                    out.records.append(Record(opts.format_diff(r) or NIL, key=key(r)))
            recs = recs[ds.num_diff():]
            num_diffs += ds.num_diff()
        if not max_group.is_zero():
            out.append_ellipsis(max_group)
        return Wrap("{", out, "}")

    # -- FormatType, FormatValue -----------------------------------------------------------
    def format_type(self, t: GoType, s: TextNode) -> TextNode:
        if self.type_mode == AUTO:
            if t.kind not in _COMPOSITE or s == NIL or self.mode == " ":
                return s
        elif self.type_mode == ELIDE:
            return s
        return Wrap(t.type_string(), _wrap_parens(s))

    def format_value(self, t: GoType, v: Any) -> TextNode | None:
        if v is _MISSING:
            return None
        out = self._value(t, v)
        if out is None or (t.kind == "ptr" and not t.name and v is not None) or (
                t.kind == "string" and t.stringer and not self.avoid_stringer):
            return out
        return self.format_type(t, out)

    def _value(self, t: GoType, v: Any) -> TextNode | None:
        if t.kind == "bool":
            return Line("true" if v else "false")
        if t.kind in ("int", "float"):
            return Line(str(v))
        if t.kind == "string":
            if t.stringer and not self.avoid_stringer:
                return self.format_string("s", v)
            return self.format_string("", v)
        if v is None:
            return NIL
        opts = self
        lvl = opts.level()
        if t.kind == "struct":
            max_len = len(t.fields)
            if opts.limit:
                max_len = ((1 << lvl) >> 1) << 2
                opts = Options(opts.mode, opts.type_mode, opts.verbosity - 1, opts.limit,
                               opts.avoid_stringer)
            out = TextList()
            for name, ft in t.fields:
                if is_zero(ft, v[name]):
                    continue
                if len(out.records) == max_len:
                    out.append_ellipsis()
                    break
                out.records.append(Record(opts.with_type(AUTO).format_value(ft, v[name]) or NIL,
                                          key=name))
            return Wrap("{", out, "}")
        if t.kind in ("slice", "map"):
            items = list(v.items()) if t.kind == "map" else [("", e) for e in v]
            if t.kind == "map":
                items.sort()
            max_len = len(items)
            if opts.limit:
                max_len = ((1 << lvl) >> 1) << 2
                opts = Options(opts.mode, opts.type_mode, opts.verbosity - 1, opts.limit,
                               opts.avoid_stringer)
            out = TextList()
            elem = t.elem or GoType("int")
            for k, e in items:
                if len(out.records) == max_len:
                    out.append_ellipsis()
                    break
                key = format_map_key(t.key, k) if t.kind == "map" and t.key else ""
                out.records.append(Record(opts.with_type(ELIDE).format_value(elem, e) or NIL,
                                          key=key))
            return Wrap("{", out, "}")
        # a pointer: the pointee prints the type when the pointer type has no name
        inner = opts.format_value(t.elem or GoType("int"), v[0])
        return Wrap("&", inner if inner is not None else NIL)

    def format_string(self, prefix: str, s: str) -> TextNode:
        """formatString: quoted (or a raw string where strconv.Quote escaped something),
        cut at the verbosity's length. (The triple-quoted form of removed or inserted text
        of four lines and more is not reproduced.)"""
        max_len = len(s.encode())
        if self.limit:
            max_len = (1 << self.level()) << 5
        data = s.encode()
        if len(data) > max_len + 3:
            return Line(prefix + _quote(data[:max_len].decode(errors="replace")) + "...")
        return Line(prefix + _quote(s))


def _quote(s: str) -> str:
    quoted = go_quote(s)
    if len(quoted.encode()) == len(s.encode()) + 2:
        return quoted
    if "`" not in s and "\n" not in s and all(c.isprintable() or c == "\t" for c in s):
        return "`" + s + "`"
    return quoted


def format_map_key(t: GoType, k: Any) -> str:
    """formatMapKey: the key as an identical value at the highest verbosity preset."""
    opts = Options(" ", ELIDE, _MAX_VERBOSITY_PRESET, True)
    node = opts.format_value(t, k)
    return _plain(node).strip() if node is not None else ""


def _plain(node: TextNode) -> str:
    if isinstance(node, Wrap):
        return node.render().strip()
    return node.text if isinstance(node, Line) else ""


def _wrap_parens(s: TextNode) -> TextNode:
    if isinstance(s, Wrap) and ((s.prefix.startswith("(") and s.suffix.endswith(")"))
                                or (s.prefix.startswith("{") and s.suffix.endswith("}"))):
        return s
    return Wrap("(", s, ")")


def _coalesce(name: str, recs: list[Node]) -> list[DiffStats]:
    """coalesceAdjacentRecords: runs of equal, and of unequal, records."""
    groups: list[DiffStats] = []
    prev = 0
    for r in recs:
        case = 1 if r.diff == 0 else 2
        if case != prev:
            groups.append(DiffStats(name))
            prev = case
        g = groups[-1]
        if r.diff == 0:
            g.identical += 1
        elif r.y is _MISSING:
            g.removed += 1
        elif r.x is _MISSING:
            g.inserted += 1
        else:
            g.modified += 1
    return groups


def diff(t: GoType, x: Any, y: Any) -> str:
    """``cmp.Diff(x, y)``: "" when equal, else the report (ending in a newline)."""
    root = compare(t, x, y)
    if root.diff == 0:
        return ""
    text = Options().format_diff(root)
    if not isinstance(text, Wrap):
        text = Wrap("", text if text is not None else NIL)
    return text.render()

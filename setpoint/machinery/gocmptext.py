"""The text tree github.com/google/go-cmp v0.6.0 lays a report out with (cmp/report_text.go):
wraps, lists of records, lines; a list is one line unless it holds a removed or inserted
record, a comment or a node that is no line; keys and values are aligned in runs.

go-cmp deliberately varies two things from one process to the next (``randBool``, seeded
with the start time): the line prefixes are ``"  "``, ``"- "``, ``"+ "`` with U+0020 or, in
half of the processes, with U+00A0 (``"\\u00a0\\u00a0"``, ``"-\\u00a0"``, ``"+\\u00a0"``), and
the slice edit script's search starts forward or backward (cmp/internal/diff). These
reports take the deterministic choice (``flags.Deterministic``): plain spaces and a forward
search first, which is also what half of all kube-apiserver processes print.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

MAX_COLUMN_LENGTH = 80
IDENTICAL, REMOVED, INSERTED = " ", "-", "+"


@dataclass
class DiffStats:
    """cmp's diffStats: counts of coalesced records, printed as "6 identical fields"."""

    name: str
    ignored: int = 0
    identical: int = 0
    removed: int = 0
    inserted: int = 0
    modified: int = 0

    def is_zero(self) -> bool:
        return not (self.ignored or self.identical or self.removed or self.inserted
                    or self.modified)

    def num_diff(self) -> int:
        return self.removed + self.inserted + self.modified

    def append(self, other: DiffStats) -> DiffStats:
        return DiffStats(self.name, self.ignored + other.ignored,
                         self.identical + other.identical, self.removed + other.removed,
                         self.inserted + other.inserted, self.modified + other.modified)

    def __str__(self) -> str:
        counts = [(self.ignored, "ignored"), (self.identical, "identical"),
                  (self.removed, "removed"), (self.inserted, "inserted"),
                  (self.modified, "modified")]
        parts = [f"{n} {label}" for n, label in counts if n > 0]
        name = self.name
        if sum(n for n, _ in counts) > 1:
            name += "s"
            if name.endswith("ys"):
                name = name[:-2] + "ies"
        if not parts:
            return ""
        if len(parts) <= 2:
            return " and ".join(parts) + " " + name
        return ", ".join(parts[:-1]) + ", and " + parts[-1] + " " + name


class TextNode:
    """A textWrap, textList or textLine."""

    def length(self) -> int:
        raise NotImplementedError

    def compact(self, b: list[str], d: str) -> TextNode:
        """formatCompactTo: append the one-line form to ``b``; the node, a line if it can
        be one."""
        raise NotImplementedError

    def expanded(self, b: list[str], d: str, n: int) -> None:
        raise NotImplementedError


@dataclass(frozen=True)
class Line(TextNode):
    text: str

    def length(self) -> int:
        return len(self.text.encode())

    def compact(self, b: list[str], d: str) -> TextNode:
        b.append(self.text)
        return self

    def expanded(self, b: list[str], d: str, n: int) -> None:
        b.append(self.text)


NIL = Line("nil")
ELLIPSIS = Line("...")


@dataclass
class Wrap(TextNode):
    prefix: str
    value: TextNode
    suffix: str = ""

    def length(self) -> int:
        return len(self.prefix.encode()) + self.value.length() + len(self.suffix.encode())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Wrap) and (self.prefix, self.value, self.suffix) == (
            other.prefix, other.value, other.suffix)

    def compact(self, b: list[str], d: str) -> TextNode:
        start = len(b)
        b.append(self.prefix)
        self.value = self.value.compact(b, d)
        b.append(self.suffix)
        if isinstance(self.value, Line):
            return Line("".join(b[start:]))
        return self

    def expanded(self, b: list[str], d: str, n: int) -> None:
        b.append(self.prefix)
        self.value.expanded(b, d, n)
        b.append(self.suffix)

    def render(self) -> str:
        """textWrap.String: the whole report, a newline at its end."""
        node = self.compact([], "")
        b = [indent("", 0)]
        node.expanded(b, "", 0)
        b.append("\n")
        return "".join(b)


@dataclass
class Record:
    value: TextNode
    diff: str = ""
    key: str = ""
    elide_comma: bool = False
    comment: DiffStats | str | None = None


@dataclass
class TextList(TextNode):
    records: list[Record] = field(default_factory=list)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TextList) and [
            (r.diff, r.key, r.value, str(r.comment) if r.comment is not None else None)
            for r in self.records] == [
            (r.diff, r.key, r.value, str(r.comment) if r.comment is not None else None)
            for r in other.records]

    def append_ellipsis(self, stats: DiffStats | None = None) -> None:
        has_stats = stats is not None and not stats.is_zero()
        if not self.records or self.records[-1].value != ELLIPSIS:
            self.records.append(Record(ELLIPSIS, elide_comma=True,
                                       comment=stats if has_stats else None))
            return
        last = self.records[-1]
        if has_stats and stats is not None:
            last.comment = last.comment.append(stats) if isinstance(
                last.comment, DiffStats) else stats

    def length(self) -> int:
        n = 0
        for i, r in enumerate(self.records):
            n += len(r.key.encode()) + (2 if r.key else 0) + r.value.length()
            if i < len(self.records) - 1:
                n += 2
        return n

    def compact(self, b: list[str], d: str) -> TextNode:
        records = [Record(r.value, r.diff, r.key, r.elide_comma, r.comment)
                   for r in self.records]
        start = len(b)
        multi = False
        for i, r in enumerate(records):
            if r.diff in (INSERTED, REMOVED):
                multi = True
            b.append(r.key)
            if r.key:
                b.append(": ")
            r.value = r.value.compact(b, d or r.diff)
            if not isinstance(r.value, Line) or r.comment is not None:
                multi = True
            if i < len(records) - 1:
                b.append(", ")
        if d in (INSERTED, REMOVED) and len("".join(b[start:]).encode()) > MAX_COLUMN_LENGTH:
            multi = True
        if not multi:
            return Line("".join(b[start:]))
        return TextList(records)

    def expanded(self, b: list[str], d: str, n: int) -> None:
        rs = self.records
        key_pad = _align(rs, lambda r: not r.key or not isinstance(r.value, Line),
                         lambda r: len(r.key))
        value_pad = _align(rs, lambda r: not isinstance(r.value, Line) or r.value == ELLIPSIS
                           or r.comment is None,
                           lambda r: len(r.value.text) if isinstance(r.value, Line) else 0)
        if rs and all(not r.diff and not r.key and isinstance(r.value, Line)
                      and r.comment is None for r in rs):
            batch = ""
            for r in rs:
                text = r.value.text if isinstance(r.value, Line) else ""
                if batch and len((batch + text + ", ").encode()) > MAX_COLUMN_LENGTH:
                    b.append("\n" + indent(d, n + 1) + batch.rstrip(" "))
                    batch = ""
                batch += text + ", "
            if batch:
                b.append("\n" + indent(d, n + 1) + batch.rstrip(" "))
            b.append("\n" + indent(d, n))
            return
        for i, r in enumerate(rs):
            b.append("\n" + indent(d or r.diff, n + 1))
            if r.key:
                b.append(r.key + ": ")
            b.append(" " * key_pad[i])
            r.value.expanded(b, d or r.diff, n + 1)
            if not r.elide_comma:
                b.append(",")
            b.append(" " * value_pad[i])
            if r.comment is not None:
                b.append(" // " + str(r.comment))
        b.append("\n" + indent(d, n))


def indent(d: str, n: int) -> str:
    """indentMode.appendIndent, deterministic: two columns for the diff mark, then tabs."""
    mark = {REMOVED: "- ", INSERTED: "+ "}.get(d, "  ")
    return mark + "\t" * n


def _align(records: list[Record], skip: Callable[[Record], bool],
           size: Callable[[Record], int]) -> list[int]:
    """textList.alignLens: the padding that lines up each run of records not skipped."""
    pads = [0] * len(records)
    start = end = longest = 0
    for i, r in enumerate(records):
        if skip(r):
            for j in range(start, end):
                pads[j] = longest - size(records[j])
            start, end, longest = i + 1, i + 1, 0
        else:
            longest = max(longest, size(r))
            end = i + 1
    for j in range(start, end):
        pads[j] = longest - size(records[j])
    return pads

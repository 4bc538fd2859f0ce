"""Where in a rule's text cel-go places what it reports: the line and column of an
expression, a literal's elements, and the ``ERROR: <input>:line:col:`` drawing with its caret
(cel-go common/errors.go ToDisplayString), over the ``celpy`` parse tree."""

from __future__ import annotations

import bisect
import functools
import re
from dataclasses import dataclass
from typing import Any

import lark

from .celprogram import ParseTree


def as_rule(child: ParseTree | lark.Token) -> ParseTree:
    """A child the grammar makes a rule, not a token."""
    if isinstance(child, lark.Token):
        raise TypeError(f"expected a rule, not the token {child!r}")
    return child


def as_token(child: ParseTree | lark.Token) -> lark.Token:
    """A child the grammar makes a token, not a rule."""
    if not isinstance(child, lark.Token):
        raise TypeError(f"expected a token, not the rule {child.data!r}")
    return child


def string_literal(tree: Any) -> lark.Token | None:
    """The STRING_LIT token when ``tree`` is nothing but a string literal."""
    node = tree
    while isinstance(node, lark.Tree) and len(node.children) == 1:
        if node.data == "literal":
            token = node.children[0]
            return token if isinstance(token, lark.Token) and token.type in (
                "STRING_LIT", "MLSTRING_LIT") else None
        node = node.children[0]
    return None


# common/error.go: the snippet's marks under a character of one UTF-8 byte, and of more
_DOT, _IND, _WIDE_DOT, _WIDE_IND = ".", "^", "\uff0e", "\uff3e"
_MAX_SNIPPET_LENGTH = 16384


def format_error(text: str, token: Any, message: str) -> str:
    """common/error.go Error.ToDisplayString: the message at its place, then the source line
    (tabs as spaces) and a caret under the column, wide marks under wide characters."""
    line = getattr(token, "line", 1) or 1
    col = getattr(token, "column", 1) or 1
    lines = text.split("\n")
    shown = f"ERROR: <input>:{line}:{col}: {message}"
    if line > len(lines) or len(lines[line - 1].encode()) > _MAX_SNIPPET_LENGTH:
        return shown
    src = lines[line - 1].replace("\t", " ")
    marks = "".join(_WIDE_DOT if len(c.encode()) > 1 else _DOT for c in src[:col - 1])
    at = src[col - 1:col]
    marks += _WIDE_IND if len(at.encode()) > 1 else _IND
    return f"{shown}\n | {src}\n | {marks}"


@dataclass
class SourcePosition:
    """A position in the rule text, as cel-go reports it (line, 1-based column)."""

    line: int
    column: int


def position_at(text: str, pos: int) -> SourcePosition:
    # (a rule of thousands of errors asks for each one's: found in its line index, not by
    # counting the text before it, which would grow with the square of the rule)
    starts = _line_starts(text)
    line = bisect.bisect_right(starts, pos)
    return SourcePosition(line, pos - starts[line - 1] + 1)


@functools.lru_cache(maxsize=8)
def _line_starts(text: str) -> list[int]:
    return [0, *(m.end() for m in re.finditer("\n", text))]


def expr_position(text: str, tree: Any) -> int:
    """Where cel-go places an expression: a field selection at its dot, else its start."""
    node = tree
    while isinstance(node, lark.Tree) and len(node.children) == 1 and \
            isinstance(node.children[0], lark.Tree):
        node = node.children[0]
    if isinstance(node, lark.Tree) and node.data == "member_dot":
        return text.rfind(".", node.meta.start_pos, as_token(node.children[1]).start_pos or 0)
    return int(tree.meta.start_pos)


def element_positions(text: str, trees: list[Any], start: int) -> list[int]:
    """Where cel-go places each of a literal's elements (see _expr_pos), in order from the
    literal's ``start``: celpy keeps no position for a ``true`` or ``false`` token, which is
    then found in the text after the element before it."""
    out: list[int] = []
    cursor = start
    for tree in trees:
        if getattr(tree.meta, "start_pos", None) is None:
            keyword = next((str(t) for t in tree.scan_values(
                lambda v: isinstance(v, lark.Token))), "")
            found = text.find(keyword, cursor) if keyword else -1
            out.append(max(found, cursor))
            cursor = out[-1] + len(keyword)
        else:
            out.append(expr_position(text, tree))
            cursor = max(cursor, int(getattr(tree.meta, "end_pos", cursor) or cursor))
    return out

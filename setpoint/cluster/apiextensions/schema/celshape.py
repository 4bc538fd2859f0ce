"""A CEL parse tree shaped as cel-go's parser builds its AST (parser/parser.go, v0.22.0).

celpy's grammar nests every ``||``, ``&&`` and unary operator one level deeper than the
last, where cel-go's reads them as loops: a rule of thousands of ``||`` terms is a tree
thousands of levels deep here and a shallow one in Go. ``shape`` rewrites the celpy tree,
in place and without recursion, the way cel-go's visitor builds its AST:

- ``VisitConditionalOr``/``VisitConditionalAnd`` give their terms to a ``logicManager``
  (parser/helper.go) whose ``balancedTree`` nests them as a balanced tree: the middle
  operator at the root, each half below it. The checker then reports a mismatched operand
  at the operator Go's AST has (``1 && true && 2 && true``: at the first and third ``&&``),
  and the evaluation, left to right with short-circuits, reads the same operands;
- ``VisitLogicalNot``/``VisitNegate`` keep one operator of an odd run and none of an even
  one (``!!x`` is ``x``, never checked as a negation);

and it measures what cel-go's visitor counts: ``checkAndIncrementRecursionDepth`` on each
conditional, relation and arithmetic operator, field selection, member call and index on
the way from the root (parentheses and the other nodes are ``unnest``-ed or not counted);
past ``maxRecursionDepth`` (250) the parse fails with "max recursion depth exceeded" at no
location (``parseErrors.internalError``), as Kubernetes' own TestCELMaxRecursionDepth
(apiextensions-apiserver pkg/apiserver/schema/cel/validation_test.go) expects.
"""

from __future__ import annotations

from typing import Any

import lark
from lark.tree import Meta

MAX_RECURSION_DEPTH = 250  # parser/options.go: maxRecursionDepth's default


class VisitorDepthExceeded(Exception):
    """parser.go checkAndIncrementRecursionDepth's recursionError."""

    def __init__(self) -> None:
        super().__init__("max recursion depth exceeded")


# the nodes whose visit cel-go counts, with how many children they have when they stand for
# the counted context (a relation, addition or multiplication of one child, an expr without
# "?", is unnest-ed: parser.go ``unnest``); None: counted whatever their children
_COUNTED: dict[str, int | None] = {
    "expr": 3,  # ExprContext with op '?'
    "relation": 2, "addition": 2, "multiplication": 2,  # RelationContext, CalcContext
    "member_dot": None, "member_dot_opt": None,  # SelectContext
    "member_dot_arg": None,  # MemberCallContext
    "member_index": None, "member_index_opt": None,  # IndexContext
}
_LOGICAL = ("conditionalor", "conditionaland")


def shape(tree: lark.Tree[lark.Token]) -> int:
    """Rewrite ``tree`` in place as cel-go's AST nests it; its depth in nodes afterwards.
    VisitorDepthExceeded when cel-go's visitor would pass its recursion limit."""
    deepest = 0
    balanced: set[int] = set()  # the nodes a balancing built: their terms are final
    pending: list[tuple[lark.Tree[lark.Token], int, int]] = [(tree, 0, 1)]
    while pending:
        node, counted, depth = pending.pop()
        if node.data in _LOGICAL and len(node.children) == 2 and id(node) not in balanced:
            _balance(node, balanced)
        elif node.data == "unary":
            _drop_even_run(node)
        wanted = _COUNTED.get(node.data, 0)
        if wanted is None or (wanted and len(node.children) == wanted):
            counted += 1
            if counted > MAX_RECURSION_DEPTH:
                raise VisitorDepthExceeded
        deepest = max(deepest, depth)
        for child in node.children:
            if isinstance(child, lark.Tree):
                pending.append((child, counted, depth + 1))
    return deepest


def depth(tree: lark.Tree[lark.Token]) -> int:
    """How many nodes deep ``tree`` is, counted without recursion."""
    deepest = 0
    pending: list[tuple[Any, int]] = [(tree, 1)]
    while pending:
        node, level = pending.pop()
        deepest = max(deepest, level)
        pending.extend((c, level + 1) for c in node.children if isinstance(c, lark.Tree))
    return deepest


def _balance(node: lark.Tree[lark.Token], balanced: set[int]) -> None:
    """helper.go logicManager.balancedTree over the terms of the left-nested chain ``node``
    heads; ``node`` becomes the root."""
    rights: list[Any] = []
    spine: Any = node
    while isinstance(spine, lark.Tree) and spine.data == node.data and len(spine.children) == 2:
        rights.append(spine.children[1])
        spine = spine.children[0]
    terms = [spine, *reversed(rights)]
    if len(terms) <= 2:
        return
    root = _balanced(node.data, terms, 0, len(terms) - 2, balanced)
    node.children = root.children
    balanced.add(id(node))


def _balanced(data: str, terms: list[Any], lo: int, hi: int, balanced: set[int]
              ) -> lark.Tree[lark.Token]:
    """balancedTree(lo, hi): operators lo..hi, operator i between terms i and i + 1 (the
    recursion is as deep as the log of the terms)."""
    mid = (lo + hi + 1) // 2
    left = terms[mid] if mid == lo else _balanced(data, terms, lo, mid - 1, balanced)
    right = terms[mid + 1] if mid == hi else _balanced(data, terms, mid + 1, hi, balanced)
    built = lark.Tree(data, [left, right], meta=_spanning(left, right))
    balanced.add(id(built))
    return built


def _spanning(left: Any, right: Any) -> Meta:
    """The place of a node from ``left``'s start to ``right``'s end (the checker finds an
    operator between its operands)."""
    meta = Meta()  # type: ignore[no-untyped-call]
    first, last = left.meta, right.meta
    meta.empty = False
    meta.line, meta.column, meta.start_pos = first.line, first.column, first.start_pos
    meta.end_line, meta.end_column, meta.end_pos = last.end_line, last.end_column, last.end_pos
    return meta


def _drop_even_run(node: lark.Tree[lark.Token]) -> None:
    """parser.go VisitLogicalNot/VisitNegate: pairs of the same unary operator cancel. A
    pair of ``-`` before a number literal is kept (cel-go's grammar may read the inner one
    as the literal's sign)."""
    while len(node.children) == 2:
        operator, operand = node.children
        if not (isinstance(operator, lark.Tree) and isinstance(operand, lark.Tree)
                and operand.data == "unary" and len(operand.children) == 2):
            return
        inner_operator, inner_operand = operand.children
        if not (isinstance(inner_operator, lark.Tree) and inner_operator.data == operator.data
                and isinstance(inner_operand, lark.Tree)):
            return
        if operator.data == "unary_neg" and _is_literal(inner_operand):
            return
        node.children = list(inner_operand.children)


def _is_literal(node: Any) -> bool:
    while isinstance(node, lark.Tree) and len(node.children) == 1:
        if node.data == "literal":
            return True
        node = node.children[0]
    return isinstance(node, lark.Tree) and node.data == "literal"

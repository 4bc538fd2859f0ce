"""How deeply cel-go's ``recursionListener`` finds an expression's grammar rules nested,
counted in one pass over its tokens.

cel-go's parser (parser/parser.go, v0.22.0) counts, per rule of its ANTLR grammar
(parser/gen/CEL.g4), how many contexts of that rule are open; past 250 the parse ends
with "expression recursion limit exceeded: 250". celsyntax.py runs the generated parser
itself, but the ANTLR Python runtime takes milliseconds a hundred code points (ten times
that for any other than ASCII), so an expression of thousands of code points cannot be run
through it within a request. This scan gives the same count from the tokens, in linear
time, by how the grammar opens its rules:

- every bracket (``(``, ``[``, ``{``: a parenthesis, call, list, index, map or message)
  enters ``expr`` and every rule down to ``primary`` once more;
- the conditional's else branch is an ``expr`` inside the open ``expr``
  (``expr: conditionalOr ('?' conditionalOr ':' expr)?``): each ``:`` of a chain of
  conditionals one ``expr`` deeper;
- a relation's right operand is a ``relation`` inside the open one, and an arithmetic
  operator's right operand a ``calc`` inside the open one (the ``*``, ``/`` or ``%``
  operand of a ``+``/``-`` operand one more, its precedence climbing once again);
- a chain of operators does not nest: the generated code leaves each operand's context
  (``TriggerExitRuleEvent``) before the next operator pushes a new one; ``&&``, ``||``
  and the unary ``!``/``-`` are loops, not recursion.

Kept exact against the ANTLR pass by tests/cluster/fidelity/test_crd_cel_parse_limits.py;
on text the grammar does not take the two may differ, which is why the ANTLR pass still
decides for short expressions near the limit (celprogram.parse).
"""

from __future__ import annotations

import re

# the tokens of CEL.g4's lexer that matter here; anything else (an unknown character) is
# skipped, as the scan only counts
_TOKEN = re.compile(r"""
    (?P<space>\s+|//[^\n]*)
  | (?P<string>(?:[rR][bB]?|[bB][rR]?)?(?:\"\"\"(?:\\.|[^\\])*?\"\"\"|'''(?:\\.|[^\\])*?'''
        |"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'))
  | (?P<number>0[xX][0-9a-fA-F]+[uU]?|\d*\.\d+(?:[eE][+-]?\d+)?|\d+(?:[eE][+-]?\d+)?[uU]?)
  | (?P<name>[_a-zA-Z][_a-zA-Z0-9]*)
  | (?P<op>==|!=|<=|>=|&&|\|\||[<>+\-*/%!?:,.()\[\]{}])
  | (?P<other>.)
""", re.VERBOSE | re.DOTALL)

_RELATION = frozenset(("==", "!=", "<", "<=", ">=", ">", "in"))
_OPEN = frozenset("([{")
_CLOSE = frozenset(")]}")


class _Level:
    """One bracket's expression (or the whole text's): the rules' counts where it opened,
    and how much deeper than that its current operand stands."""

    __slots__ = ("calc", "conditionals", "expr", "in_sum", "relation", "then_pending",
                 "under_calc", "under_expr", "under_relation")

    def __init__(self, under: tuple[int, int, int]) -> None:
        self.under_expr, self.under_relation, self.under_calc = under
        self.conditionals = 0  # else branches entered (``expr`` inside ``expr``)
        self.then_pending = 0  # conditionals whose ``:`` is still to come
        self.relation = 0  # 1 in a relation's right operand
        self.calc = 0  # 1 or 2 in an arithmetic operator's right operand
        self.in_sum = False  # a ``+``/``-`` operand: its ``*`` operand climbs once more

    def depths(self) -> tuple[int, int, int]:
        """The counts of ``expr``, ``relation`` and ``calc`` contexts open here."""
        return (self.under_expr + 1 + self.conditionals, self.under_relation + 1 + self.relation,
                self.under_calc + 1 + self.calc)

    def operand_ends(self) -> None:
        """An operator of lower precedence than arithmetic and relations ends them."""
        self.relation = self.calc = 0
        self.in_sum = False


def listener_depth(text: str, limit: int) -> tuple[int, int]:
    """The deepest count cel-go's recursionListener reaches over ``text``'s rules, and the
    offset of the token at which it first passes ``limit`` (-1: it never does; the parse
    would end there)."""
    past = -1
    levels = [_Level((0, 0, 0))]
    level = levels[0]
    deepest = 0
    after_operand = False  # the last token ends an operand: a ``-`` or ``?`` after it is binary
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup
        if kind == "space":
            continue
        token = match.group()
        if kind == "name" and token in _RELATION:
            level.relation, level.calc, level.in_sum = 1, 0, False
            after_operand = False
        elif kind in ("name", "number", "string") or token in _OPEN:
            # (a bracket's rules are entered only with a first element in it)
            deepest = max(deepest, *level.depths())
            if deepest > limit and past < 0:
                past = match.start()
            if kind != "op":
                after_operand = True
                continue
            level = _Level(level.depths())
            levels.append(level)
            after_operand = False
        elif token in _CLOSE:
            if len(levels) > 1:
                levels.pop()
                level = levels[-1]
            after_operand = True
        elif token in _RELATION:
            level.relation, level.calc, level.in_sum = 1, 0, False
            after_operand = False
        elif token in ("+", "-") and after_operand:
            level.calc, level.in_sum = 1, True
            after_operand = False
        elif token in ("*", "/", "%"):
            level.calc = 2 if level.in_sum else 1
            after_operand = False
        elif token == "?" and after_operand:  # (``.?``, ``[?``, ``{?``, ``, ?``: optional)
            level.then_pending += 1
            level.operand_ends()
            after_operand = False
        elif token == ":" and level.then_pending:
            level.then_pending -= 1
            level.conditionals += 1
            level.operand_ends()
            after_operand = False
        elif token in (",", ":"):  # the next element, or a map entry's value
            level.conditionals = level.then_pending = 0
            level.operand_ends()
            after_operand = False
        elif token in ("&&", "||"):
            level.operand_ends()
            after_operand = False
        else:  # ``.`` and unary operators: a selection or member call stays in its chain
            after_operand = False
    return deepest, past

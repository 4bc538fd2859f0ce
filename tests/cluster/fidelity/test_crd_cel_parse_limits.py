"""The parse-time limits of cel-go on x-kubernetes-validations, as kube-apiserver 1.32 has them.

Kubernetes sets no parser option (apiserver v0.32.0 pkg/cel/environment/base.go; the CRD's
rule and messageExpression environments, apiextensions-apiserver
pkg/apiserver/schema/cel/compilation.go ``compileRule``), so cel-go v0.22.0's defaults hold
(parser/parser.go ``NewParser``):

- ``expressionSizeCodePointLimit`` 100,000: ``Parser.Parse`` refuses a longer expression,
  counted in code points (``runes.Buffer.Len``), before parsing it: "expression code point
  size exceeds limit: size: N, limit 100000" at no location;
- ``maxRecursionDepth`` 250, twice: the ``recursionListener`` counts, per grammar rule, how
  deeply the ANTLR parse has entered it; past 250 the parse ends with "expression recursion
  limit exceeded: 250" at no location (``parseErrors.internalError``). A left-recursive
  rule's operator does not nest: the generated code (parser/gen/cel_parser.go relation,
  calc, member) triggers the listener's exit before ``PushNewRecursionContext`` enters the
  rule again. Then the visitor that builds the AST counts, all rules together, the
  conditionals, relation and arithmetic operators, selections, member calls and indexes
  from the root (``checkAndIncrementRecursionDepth``): past 250, "max recursion depth
  exceeded" at no location, as apiextensions-apiserver's TestCELMaxRecursionDepth
  (pkg/apiserver/schema/cel/validation_test.go) has it for 249 and 250 ``==``.

An error at no location is displayed as ``ERROR: <input>:-1:0: ...`` (common/error.go
``ToDisplayString``: line -1, column -1 + 1) and, sorted by line, before any other.
Each becomes ``compilation failed: ...`` (``messageExpression compilation failed: ...``) on
the rule's (or messageExpression's) Invalid cause.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.cluster.conftest import API
from tests.cluster.fidelity.widgets import widget_crd

pytestmark = pytest.mark.asyncio(loop_scope="module")

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
RULES = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations"
RECURSION = "ERROR: <input>:-1:0: expression recursion limit exceeded: 250"


async def _create(api: API, group: str, rule: dict[str, Any]) -> tuple[int, Any]:
    spec = {"type": "object", "x-kubernetes-validations": [rule],
            "properties": {"n": {"type": "integer"}}}
    return await api.post(f"{CRDS}?dryRun=All", widget_crd(group, spec))


async def _failure(api: API, group: str, rule: dict[str, Any], field: str = "rule") -> str:
    status, body = await _create(api, group, rule)
    assert status == 422, body
    [cause] = body["details"]["causes"]
    assert cause["field"] == f"{RULES}[0].{field}"
    message: str = cause["message"]
    prefix = "compilation failed: " if field == "rule" else "messageExpression compilation failed: "
    return message.split(prefix, 1)[1]


def _ternaries(n: int) -> str:
    """``n`` conditionals nested in their else branch: the expr rule entered n + 1 deep."""
    return "true ? true : " * n + "true"


async def test_a_rule_of_more_code_points_than_the_limit(module_api: API) -> None:
    """Counted in code points: 100,001 of them (two bytes each in UTF-8) is over."""
    rule = "'" + "\u00e9" * 99_992 + "' != ''"
    assert len(rule) == 100_000
    status, body = await _create(module_api, "size-at.example.com", {"rule": rule})
    assert status == 201, body
    over = "'" + "\u00e9" * 99_993 + "' != ''"
    assert await _failure(module_api, "size-over.example.com", {"rule": over}) == (
        "ERROR: <input>:-1:0: expression code point size exceeds limit: size: 100001, "
        "limit 100000")


async def test_a_rule_nested_past_the_recursion_limit(module_api: API) -> None:
    """249 conditionals nest expr 250 deep, the limit, which cel-go's parser takes (and the
    embedded server with it); one more is over."""
    status, body = await _create(module_api, "depth-at.example.com", {"rule": _ternaries(249)})
    assert status == 201, body
    assert await _failure(module_api, "depth-over.example.com",
                          {"rule": _ternaries(250)}) == RECURSION


@pytest.mark.parametrize(("rule", "what"), [
    ("(" * 250 + "true" + ")" * 250, "parentheses"),
    ("size(" + "[" * 249 + "1" + "]" * 249 + ") == 1", "list literals in a call"),
    ("size(" + "{1: " * 249 + "1" + "}" * 249 + ") == 1", "map literals in a call"),
])
async def test_each_rule_counts_its_own_depth(module_api: API, rule: str, what: str) -> None:
    """The listener's depth is per grammar rule: expr entered once, and once more inside
    each parenthesis, literal and call argument."""
    assert await _failure(module_api, "depths.example.com", {"rule": rule}) == RECURSION, what


@pytest.mark.parametrize(("rule", "what"), [
    (" + ".join(["1"] * 250) + " > 0", "249 additions and a relation"),
    ("size([" + ", ".join(["1 + 1"] * 300) + "]) > 0", "300 additions side by side"),
    # TestCELMaxRecursionDepth's valid rule ("self.val1 == " * 249 + "self.val1") over an
    # integer: 249 relations and a selection
    ("self.n == 1" + " == true" * 248, "249 relations and a selection"),
])
async def test_chains_of_operators_do_not_nest_for_the_listener(
        module_api: API, rule: str, what: str) -> None:
    """A chain of operators stays at its first operand's depth for the listener, and the
    visitor counts each operator once: at most 250 on the way to any operand is taken
    (TestCELMaxRecursionDepth's valid rule among them)."""
    status, body = await _create(module_api, "chains.example.com", {"rule": rule})
    assert status == 201, (what, body)


@pytest.mark.parametrize(("rule", "what"), [
    ("self.n == 1" + " == true" * 249, "TestCELMaxRecursionDepth's, over an integer"),
    ("self" + ".n" * 250 + " > 0", "250 selections and a relation"),
    ("self.n" + "[0]" * 130 + " + 1" * 125 + " > 0", "indexes, additions, a relation"),
])
async def test_the_visitor_counts_every_rule_together(module_api: API, rule: str,
                                                      what: str) -> None:
    """Past 250 counted nodes on one way from the root: the visitor's own error."""
    assert await _failure(module_api, "visitor.example.com", {"rule": rule}) == (
        "ERROR: <input>:-1:0: max recursion depth exceeded"), what


async def test_the_errors_before_the_limit_are_kept(module_api: API) -> None:
    """A syntax error reported before the parse ends stays, after the error at no
    location (ToDisplayString sorts by line)."""
    rule = "1 +* " + _ternaries(250)
    assert await _failure(module_api, "kept.example.com", {"rule": rule}) == "\n".join([
        RECURSION,
        "ERROR: <input>:1:4: Syntax error: extraneous input '*' expecting {'[', '{', '(', "
        "'.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, "
        "BYTES, IDENTIFIER}",
        f" | {rule}",
        " | ...^"])


async def test_a_message_expression_has_the_same_limits(module_api: API) -> None:
    expression = "(" * 250 + "'a'" + ")" * 250
    assert await _failure(module_api, "message.example.com",
                          {"rule": "true", "messageExpression": expression},
                          field="messageExpression") == RECURSION


# each shape nests cel-go's rules one step deeper with ``k``: a parenthesis, a list, a map, a
# call's argument, an index, a conditional's else branch, a relation's and a product's right
# operand inside a parenthesis, a sum's product, a message field, optional elements
_SHAPES: dict[str, Callable[[int], str]] = {
    "parentheses": lambda k: "(" * k + "1" + ")" * k,
    "lists": lambda k: "[" * k + "1" + "]" * k,
    "maps": lambda k: "{1: " * k + "1" + "}" * k,
    "calls": lambda k: "f(" * k + "x" + ")" * k,
    "member calls and indexes": lambda k: "a.b(x[" * k + "1" + "])" * k,
    "conditionals": _ternaries,
    "relations": lambda k: "a == (" * k + "1" + ")" * k,
    "products in sums": lambda k: "1 + 2 * (" * k + "1" + ")" * k,
    "sums in products": lambda k: "2 * (3 + " * k + "1" + ")" * k,
    "conditional operands": lambda k: "a ? (b < " * k + "1" + ") : c" * k,
    "messages and optionals": lambda k: "M{f: [?x, {?k: " * k + "1" + "}]}" * k,
    "selection chains": lambda k: "(a.b.c[0].d() || " * k + "1" + ")" * k,
}


@pytest.mark.parametrize("shape", sorted(_SHAPES))
async def test_the_linear_scan_finds_the_limit_where_cel_go_s_parser_does(shape: str) -> None:
    """celnesting's token scan (which decides for rules too long for the ANTLR pass) and
    cel-go's own parser with its recursionListener (celsyntax.py) refuse the same first
    step of each shape, and take the one before it."""
    from setpoint.cluster.apiextensions.schema import celnesting, celsyntax

    build = _SHAPES[shape]
    first_over = next(k for k in range(1, 300)
                      if celnesting.listener_depth(build(k), 250)[0] > 250)
    for k, refused in ((first_over - 1, False), (first_over, True)):
        errors = celsyntax.syntax_errors(build(k))
        assert ((-1, 0, "expression recursion limit exceeded: 250") in errors) is refused, (
            shape, k, errors)
        assert (celnesting.listener_depth(build(k), 250)[1] >= 0) is refused


async def test_a_long_rule_past_the_limit_far_in_is_refused(module_api: API) -> None:
    """A rule past the recursion limit only after a string of 1,100 code points other than
    ASCII (the ANTLR lexer's slowest): the scan's count refuses it without running cel-go's
    parser that far, with cel-go's error; the same rule one level shallower compiles."""
    head = "'" + "\u00e9" * 1100 + "' != '' && "
    over = head + "(" * 250 + "self.n == 1" + ")" * 250
    assert await _failure(module_api, "far-over.example.com", {"rule": over}) == RECURSION
    status, body = await _create(module_api, "far-at.example.com",
                                 {"rule": head + "(" * 248 + "self.n == 1" + ")" * 248})
    assert status == 201, body

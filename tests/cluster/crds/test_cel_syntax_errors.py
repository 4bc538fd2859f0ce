"""celsyntax: the syntax errors of CEL expressions, as cel-go v0.22.0 reports them.

The cases and their texts are cel-go's own parser tests (parser/parser_test.go at v0.22.0:
``I`` the expression, ``E`` the errors' display), the lines of ``E`` as
common/errors.go ToDisplayString writes them (`` | `` before each source line and caret).
cel-go's parser runs the ANTLR recognizers of parser/gen with DefaultErrorStrategy
(parser.go ``parse``); celsyntax runs the same ATNs with the ANTLR Python runtime.
"""

from __future__ import annotations

import pytest

from setpoint.cluster.apiextensions.schema import celsyntax

# (I, E) of parser_test.go, with its default parser options
CASES = [
    ('a | b', [
        "ERROR: <input>:1:3: Syntax error: token recognition error at: '| '",
        ' | a | b',
        ' | ..^',
        "ERROR: <input>:1:5: Syntax error: extraneous input 'b' expecting <EOF>",
        ' | a | b',
        ' | ....^',
    ]),
    ('{', [
        "ERROR: <input>:1:2: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '}', "
        "'(', '.', ',', '-', '!', '?', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, "
        'STRING, BYTES, IDENTIFIER}',
        ' | {',
        ' | .^',
    ]),
    ('TestAllTypes{}()', [
        "ERROR: <input>:1:15: Syntax error: mismatched input '(' expecting <EOF>",
        ' | TestAllTypes{}()',
        ' | ..............^',
    ]),
    ('1 + $', [
        "ERROR: <input>:1:5: Syntax error: token recognition error at: '$'",
        ' | 1 + $',
        ' | ....^',
        "ERROR: <input>:1:6: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', "
        "'.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, "
        'IDENTIFIER}',
        ' | 1 + $',
        ' | .....^',
    ]),
    ('1 + +', [
        "ERROR: <input>:1:5: Syntax error: mismatched input '+' expecting {'[', '{', '(', '.', "
        "'-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, "
        'IDENTIFIER}',
        ' | 1 + +',
        ' | ....^',
        "ERROR: <input>:1:6: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', "
        "'.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, "
        'IDENTIFIER}',
        ' | 1 + +',
        ' | .....^',
    ]),
    ('{"a": 1}."a"', [
        'ERROR: <input>:1:10: Syntax error: no viable alternative at input \'."a"\'',
        ' | {"a": 1}."a"',
        ' | .........^',
    ]),
    ('func{{a}}', [
        "ERROR: <input>:1:6: Syntax error: extraneous input '{' expecting {'}', ',', '?', "
        'IDENTIFIER}',
        ' | func{{a}}',
        ' | .....^',
        "ERROR: <input>:1:8: Syntax error: mismatched input '}' expecting ':'",
        ' | func{{a}}',
        ' | .......^',
        "ERROR: <input>:1:9: Syntax error: extraneous input '}' expecting <EOF>",
        ' | func{{a}}',
        ' | ........^',
    ]),
    ('{:a}', [
        "ERROR: <input>:1:2: Syntax error: extraneous input ':' expecting {'[', '{', '}', '(', "
        "'.', ',', '-', '!', '?', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, "
        'STRING, BYTES, IDENTIFIER}',
        ' | {:a}',
        ' | .^',
        "ERROR: <input>:1:4: Syntax error: mismatched input '}' expecting ':'",
        ' | {:a}',
        ' | ...^',
    ]),
    ('ind[a{b}]', [
        "ERROR: <input>:1:8: Syntax error: mismatched input '}' expecting ':'",
        ' | ind[a{b}]',
        ' | .......^',
    ]),
    ('--', [
        "ERROR: <input>:1:3: Syntax error: no viable alternative at input '-'",
        ' | --',
        ' | ..^',
        "ERROR: <input>:1:3: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', "
        "'.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, "
        'IDENTIFIER}',
        ' | --',
        ' | ..^',
    ]),
    ('?', [
        "ERROR: <input>:1:1: Syntax error: mismatched input '?' expecting {'[', '{', '(', '.', "
        "'-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, "
        'IDENTIFIER}',
        ' | ?',
        ' | ^',
        "ERROR: <input>:1:2: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', "
        "'.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, "
        'IDENTIFIER}',
        ' | ?',
        ' | .^',
    ]),
    ('x{.', [
        "ERROR: <input>:1:3: Syntax error: mismatched input '.' expecting {'}', ',', '?', "
        'IDENTIFIER}',
        ' | x{.',
        ' | ..^',
    ]),
]


@pytest.mark.parametrize(("expression", "display"), CASES, ids=[c[0] for c in CASES])
def test_cel_gos_parser_tests(expression: str, display: list[str]) -> None:
    reported = celsyntax.syntax_errors(expression)
    assert celsyntax.display(expression, reported) == "\n".join(display)


def test_a_valid_expression_reports_nothing() -> None:
    assert celsyntax.syntax_errors("self.a.?b.orValue(1) > 0 && [1, 2].exists(x, x == 2)") == []


def test_past_one_hundred_reports_the_parse_ends() -> None:
    """parser.go SyntaxError: the 101st report says "More than 100 syntax errors" and ends
    the parse (the lexer reports each unknown character without a recovery)."""
    reported = celsyntax.syntax_errors("#" * 150)
    assert len(reported) == 101
    assert reported[-1] == (1, 101, "Syntax error: More than 100 syntax errors")
    assert reported[0] == (1, 1, "Syntax error: token recognition error at: '#'")

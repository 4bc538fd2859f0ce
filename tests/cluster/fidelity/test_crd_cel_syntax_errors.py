"""Every syntax error of an x-kubernetes-validations rule, as kube-apiserver 1.32 reports it.

Sources (k8s.io/apiextensions-apiserver v0.32.0 with github.com/google/cel-go v0.22.0):
- pkg/apiserver/schema/cel/compilation.go compileRule: ``ruleEnv.Compile(rule.Rule)``; its
  issues become ``"compilation failed: " + issues.String()``, one Invalid cause at
  ``x-kubernetes-validations[i].rule`` (validation.go validateSchemaCEL);
- cel-go parser/parser.go: the ANTLR parser generated from parser/gen/CEL.g4 reports and
  recovers (ANTLR's DefaultErrorStrategy: extraneous, missing and mismatched input, no
  viable alternative; the lexer's token recognition errors), so a rule reports every error
  it meets; ``SyntaxError`` words each ``Syntax error: ...`` and turns "no viable
  alternative at input '.true'" into "mismatched input 'true' expecting IDENTIFIER";
  ``recoveryLimitErrorStrategy`` ends the parse at the 31st recovery with "error recovery
  attempt limit exceeded: 30";
- cel-go common/errors.go ToDisplayString: sorted by line then column, each with its source
  line (tabs as spaces) and caret, wide marks under wide characters.

The expected texts are cel-go's own (parser/parser_test.go, v0.22.0), but for the first,
recorded from a real kube-apiserver 1.32 (shared conformance golden crd-cel-validation).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.cluster.conftest import API
from tests.cluster.fidelity.widgets import widget_crd

pytestmark = pytest.mark.asyncio(loop_scope="module")

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
RULES = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations"
EXPECTING_EXPR = ("{'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, "
                  "NUM_UINT, STRING, BYTES, IDENTIFIER}")


async def _message(api: API, group: str, rule: str) -> str:
    # (a message, which a rule with line breaks needs: validation.go validateSchemaCEL)
    spec = {"type": "object", "x-kubernetes-validations": [{"rule": rule, "message": "m"}],
            "properties": {"nosuchfield": {"type": "integer"}}}
    status, body = await api.post(f"{CRDS}?dryRun=All", widget_crd(group, spec))
    assert status == 422, body
    [cause] = body["details"]["causes"]
    assert cause["field"] == f"{RULES}[0].rule"
    message: str = cause["message"]
    return message.split("compilation failed: ", 1)[1]


def _lines(*lines: str) -> str:
    return "\n".join(lines)


async def test_the_recorded_syntax_error(module_api: API) -> None:
    """The real server's answer (golden crd-cel-validation): ANTLR's expected set."""
    assert await _message(module_api, "golden.example.com", "self.nosuchfield > 1 +") == _lines(
        f"ERROR: <input>:1:23: Syntax error: mismatched input '<EOF>' expecting {EXPECTING_EXPR}",
        " | self.nosuchfield > 1 +",
        " | ......................^")


async def test_every_error_is_reported_lexer_and_parser_in_position_order(
        module_api: API) -> None:
    """parser_test.go ``*@a | b``: the parser deletes '*' and 'b', the lexer reports what
    it cannot tokenize; four errors, by column."""
    assert await _message(module_api, "every.example.com", "*@a | b") == _lines(
        f"ERROR: <input>:1:1: Syntax error: extraneous input '*' expecting {EXPECTING_EXPR}",
        " | *@a | b",
        " | ^",
        "ERROR: <input>:1:2: Syntax error: token recognition error at: '@'",
        " | *@a | b",
        " | .^",
        "ERROR: <input>:1:5: Syntax error: token recognition error at: '| '",
        " | *@a | b",
        " | ....^",
        "ERROR: <input>:1:7: Syntax error: extraneous input 'b' expecting <EOF>",
        " | *@a | b",
        " | ......^")


async def test_an_error_on_a_later_line_shows_that_line(module_api: API) -> None:
    """parser_test.go ``1 + 2\\n3 +``."""
    assert await _message(module_api, "lines.example.com", "1 + 2\n3 +") == _lines(
        "ERROR: <input>:2:1: Syntax error: mismatched input '3' expecting <EOF>",
        " | 3 +",
        " | ^")


async def test_a_reserved_word_after_a_dot_expects_an_identifier(module_api: API) -> None:
    """parser_test.go ``self.true == 1``: parser.go's rewording of "no viable
    alternative"."""
    assert await _message(module_api, "reserved.example.com", "self.true == 1") == _lines(
        "ERROR: <input>:1:6: Syntax error: mismatched input 'true' expecting IDENTIFIER",
        " | self.true == 1",
        " | .....^")


async def test_a_message_initializer_recovers_and_goes_on(module_api: API) -> None:
    """parser_test.go ``msg{:a}``: the ':' deleted, then the missing ':' before '}'."""
    assert await _message(module_api, "message.example.com", "msg{:a}") == _lines(
        "ERROR: <input>:1:5: Syntax error: extraneous input ':' expecting "
        "{'}', ',', '?', IDENTIFIER}",
        " | msg{:a}",
        " | ....^",
        "ERROR: <input>:1:7: Syntax error: mismatched input '}' expecting ':'",
        " | msg{:a}",
        " | ......^")


async def test_wide_characters_and_tabs_in_the_shown_line(module_api: API) -> None:
    """parser_test.go: an emoji the lexer refuses gets the wide caret, the tabs of its line
    are shown as spaces."""
    rule = "      '😁' in ['😁', '😑', '😦']\n\t\t\t&& in.😁"
    assert await _message(module_api, "wide.example.com", rule) == _lines(
        f"ERROR: <input>:2:7: Syntax error: extraneous input 'in' expecting {EXPECTING_EXPR}",
        " |    && in.😁",
        " | ......^",
        "ERROR: <input>:2:10: Syntax error: token recognition error at: '😁'",
        " |    && in.😁",
        " | .........\uff3e",
        "ERROR: <input>:2:11: Syntax error: no viable alternative at input '.'",
        " |    && in.😁",
        " | .........\uff0e^")


async def test_the_thirty_first_recovery_ends_the_parse(module_api: API) -> None:
    """recoveryLimitErrorStrategy (errorRecoveryLimit 30, cel-go's default): forty open
    parentheses need a recovery each at the end; the 31st is reported, and nothing after."""
    message = await _message(module_api, "limit.example.com", "(" * 40)
    errors: list[Any] = [line for line in message.split("\n") if line.startswith("ERROR: ")]
    assert errors[-1] == ("ERROR: <input>:1:41: Syntax error: error recovery attempt limit "
                          "exceeded: 30")
    assert len(errors) <= 31

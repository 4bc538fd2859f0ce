"""Every compile error of an x-kubernetes-validations rule, in one message, as the apiserver
words it.

Sources (k8s.io/apiextensions-apiserver v0.32.0 with github.com/google/cel-go v0.22.0):
- pkg/apiserver/schema/cel/compilation.go compileRule: ``ruleEnv.Compile(rule.Rule)``; issues
  become ``"compilation failed: " + issues.String()``;
- pkg/apis/apiextensions/validation/validation.go validateSchemaCEL (ValidateCustomResource-
  DefinitionOpenAPISchema): one ``Invalid`` cause at ``x-kubernetes-validations[i].rule`` per
  rule whose compilation failed;
- cel-go checker/checker.go: an error gives the expression the error type, which is
  assignable to anything (checker/types.go isDynOrError), so checking goes on and reports
  every error (checker/errors.go typeErrors over common.Errors);
- cel-go common/errors.go ToDisplayString: the first 100 errors reported, sorted stably by
  line then column, one a line, then "N more errors were truncated"; common/error.go
  Error.ToDisplayString: ``ERROR: <input>:line:col: message``, the source line (tabs as
  spaces) and a caret, wide marks (U+FF0E, U+FF3E) under characters of more than one byte;
- cel-go cel/env.go Compile and Check: a parse error (a macro's wrong argument is one,
  parser/macro.go) stops before checking, and the AST validators (homogeneous literals,
  regex literals) run only when checking found nothing.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.cluster.conftest import API
from tests.cluster.fidelity.widgets import widget_crd

pytestmark = pytest.mark.asyncio(loop_scope="module")

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
RULES = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations"


def _crd(group: str, *rules: str) -> dict[str, Any]:
    # (a message, which a rule with line breaks needs: validation.go validateSchemaCEL)
    spec = {"type": "object",
            "x-kubernetes-validations": [{"rule": r, "message": "m"} for r in rules],
            "properties": {"name": {"type": "string", "maxLength": 10},
                           "n": {"type": "integer"}}}
    return widget_crd(group, spec)


def _error(line: int, col: int, message: str, source: str, marks: str = "") -> str:
    """One error as common/error.go displays it; ``marks`` overrides the dots and caret."""
    return (f"ERROR: <input>:{line}:{col}: {message}\n | {source}\n | "
            f"{marks or '.' * (col - 1) + '^'}")


async def _causes(api: API, group: str, *rules: str) -> list[dict[str, Any]]:
    status, body = await api.post(f"{CRDS}?dryRun=All", _crd(group, *rules))
    assert status == 422, body
    causes: list[dict[str, Any]] = body["details"]["causes"]
    return causes


ONE_LINE = "self.nope == 1 && self.name + 1 == 'x' && foo(self.n) && self.name.bar()"


async def test_a_rule_reports_every_type_error_in_position_order(module_api: API) -> None:
    """Rule: the checker goes on after an error; the message lists each, by position."""
    [cause] = await _causes(module_api, "every.example.com", ONE_LINE)
    assert cause["field"] == f"{RULES}[0].rule"
    want = "\n".join([
        _error(1, 5, "undefined field 'nope'", ONE_LINE),
        _error(1, 29, "found no matching overload for '_+_' applied to '(string, int)'",
               ONE_LINE),
        _error(1, 46, "undeclared reference to 'foo' (in container '')", ONE_LINE),
        _error(1, 71, "undeclared reference to 'bar' (in container '')", ONE_LINE),
    ])
    assert cause["message"].endswith(f"compilation failed: {want}"), cause["message"]
    assert cause["message"].count("ERROR: ") == 4


MULTI_LINE = "self.name.bar(\n\tself.nope) &&\nself.n.all(x, x > 0)"


async def test_errors_on_several_lines_are_sorted_by_line_then_column(module_api: API) -> None:
    """Rule: sorted by (line, column) whatever the order the checker met them (it checks a
    call's arguments before its target); each shows its own line, a tab as a space."""
    [cause] = await _causes(module_api, "lines.example.com", MULTI_LINE)
    want = "\n".join([
        _error(1, 14, "undeclared reference to 'bar' (in container '')", "self.name.bar("),
        _error(2, 6, "undefined field 'nope'", " self.nope) &&"),
        _error(3, 5, "expression of type 'int' cannot be range of a comprehension (must be "
               "list, map, or dynamic)", "self.n.all(x, x > 0)"),
    ])
    assert cause["message"].endswith(f"compilation failed: {want}"), cause["message"]


async def test_wide_characters_get_wide_marks(module_api: API) -> None:
    """Rule: common/error.go marks a character of more than one UTF-8 byte with U+FF0E."""
    rule = "'é' + self.nope == 'x' && self.y"
    [cause] = await _causes(module_api, "wide.example.com", rule)
    want = "\n".join([
        _error(1, 11, "undefined field 'nope'", rule, ".\uff0e" + "." * 8 + "^"),
        _error(1, 31, "undefined field 'y'", rule, ".\uff0e" + "." * 28 + "^"),
    ])
    assert cause["message"].endswith(f"compilation failed: {want}"), cause["message"]


async def test_several_invalid_rules_give_one_cause_each(module_api: API) -> None:
    """Rule: validateSchemaCEL adds one cause per rule that does not compile, at its index;
    a rule that compiles adds none."""
    rules = ("self.a == 1 && self.b == 2", "self.n > 0", "self.name.size() > 'x'")
    causes = await _causes(module_api, "several.example.com", *rules)
    assert [c["field"] for c in causes] == [f"{RULES}[0].rule", f"{RULES}[2].rule"]
    assert [c["reason"] for c in causes] == ["FieldValueInvalid"] * 2
    assert causes[0]["message"].endswith("compilation failed: " + "\n".join([
        _error(1, 5, "undefined field 'a'", rules[0]),
        _error(1, 20, "undefined field 'b'", rules[0])])), causes[0]["message"]
    assert causes[1]["message"].endswith("compilation failed: " + _error(
        1, 18, "found no matching overload for '_>_' applied to '(int, string)'", rules[2]))


async def test_a_macro_error_stops_before_type_checking(module_api: API) -> None:
    """Rule: a has() with no field selection is a parse error (parser/macro.go MakeHas);
    Compile returns the parse issues alone, so the undefined field is not reported."""
    rule = "has(self) && self.nope"
    [cause] = await _causes(module_api, "macro.example.com", rule)
    assert cause["message"].endswith(
        "compilation failed: " + _error(1, 4, "invalid argument to has() macro", rule))


async def test_validators_run_only_when_checking_found_nothing(module_api: API) -> None:
    """Rule: the homogeneous-literal validator's issue is not reported beside a type error
    (cel/env.go Check returns the checker's errors before running the validators)."""
    rule = "[1, 'a'].size() == 2 && self.nope"
    [cause] = await _causes(module_api, "validators.example.com", rule)
    assert cause["message"].endswith(
        "compilation failed: " + _error(1, 29, "undefined field 'nope'", rule))


async def test_past_one_hundred_errors_the_rest_are_counted(module_api: API) -> None:
    """Rule: common.Errors keeps the first 100 errors reported and counts the rest."""
    rule = " && ".join(f"self.f{i} == 1" for i in range(103))
    [cause] = await _causes(module_api, "many.example.com", rule)
    message = cause["message"]
    assert message.count("ERROR: <input>:1:") == 100
    assert "undefined field 'f99'" in message and "undefined field 'f100'" not in message
    assert message.endswith("\n3 more errors were truncated"), message[-200:]

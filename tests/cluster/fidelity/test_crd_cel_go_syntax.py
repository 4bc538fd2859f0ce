"""Rules celpy's parser takes and cel-go's refuses, refused at a CRD's write as kube-apiserver
1.32 refuses them.

apiextensions-apiserver v0.32.0 pkg/apiserver/schema/cel/compilation.go ``compileRule``:
``ruleEnv.Compile(rule.Rule)`` parses with cel-go v0.22.0's ANTLR parser (parser/gen/CEL.g4:
``in`` is a keyword, never a name; a float needs a digit after its dot; a string's escapes are
the lexer's ESC_SEQ), and its syntax issues are reported before anything is checked:
``"compilation failed: " + issues.String()`` on the rule's Invalid cause,
``"messageExpression compilation failed: ..."`` on the messageExpression's. cel-go's own
parser_test.go has ``in`` as a name refused with "mismatched input 'in' expecting ...".

The embedded server runs cel-go's parser (celsyntax.py) on a rule or messageExpression a
write adds or changes; what the old CRD already held (validation.go
``preexistingExpressions``) is not parsed again, nor is anything at an object's write.
"""

from __future__ import annotations

from typing import Any

import pytest

from setpoint.cluster.apiextensions.schema.cel import compile_rule
from tests.cluster.conftest import API
from tests.cluster.fidelity.widgets import widget_crd

pytestmark = pytest.mark.asyncio(loop_scope="module")

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
RULES = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations"
EXPECTING = ("{'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, "
             "NUM_UINT, STRING, BYTES, IDENTIFIER}")
SPEC: dict[str, Any] = {"type": "object", "properties": {
    "n": {"type": "integer"}, "items": {"type": "array", "items": {"type": "integer"}}}}


def _spec(*rules: dict[str, Any]) -> dict[str, Any]:
    return {**SPEC, "x-kubernetes-validations": list(rules)}


def _cause(body: Any, field: str = "rule") -> str:
    [cause] = body["details"]["causes"]
    assert cause["field"] == f"{RULES}[0].{field}"
    message: str = cause["message"]
    return message.split("compilation failed: ", 1)[1]


async def test_in_is_never_a_name(module_api: API) -> None:
    rule = "self.n > 0 && in"
    status, body = await module_api.post(f"{CRDS}?dryRun=All",
                                         widget_crd("in.example.com", _spec({"rule": rule})))
    assert status == 422, body
    assert _cause(body) == "\n".join([
        f"ERROR: <input>:1:15: Syntax error: mismatched input 'in' expecting {EXPECTING}",
        f" | {rule}",
        " | ..............^",
        f"ERROR: <input>:1:17: Syntax error: mismatched input '<EOF>' expecting {EXPECTING}",
        f" | {rule}",
        " | ................^"])


async def test_a_float_needs_a_digit_after_its_dot(module_api: API) -> None:
    rule = "self.n == 1."
    status, body = await module_api.post(f"{CRDS}?dryRun=All",
                                         widget_crd("dot.example.com", _spec({"rule": rule})))
    assert status == 422, body
    assert _cause(body) == "\n".join([
        "ERROR: <input>:1:13: Syntax error: no viable alternative at input '.'",
        f" | {rule}",
        " | ............^"])


async def test_a_message_expression_is_parsed_by_cel_go_too(module_api: API) -> None:
    expression = "'\\q'"
    status, body = await module_api.post(f"{CRDS}?dryRun=All", widget_crd(
        "message-syntax.example.com", _spec({"rule": "true", "messageExpression": expression})))
    assert status == 422, body
    assert _cause(body, "messageExpression") == "\n".join([
        "ERROR: <input>:1:1: Syntax error: token recognition error at: ''\\q'",
        f" | {expression}",
        " | ^",
        "ERROR: <input>:1:4: Syntax error: token recognition error at: '''",
        f" | {expression}",
        " | ...^",
        f"ERROR: <input>:1:5: Syntax error: mismatched input '<EOF>' expecting {EXPECTING}",
        f" | {expression}",
        " | ....^"])


async def test_an_update_that_changes_a_rule_is_parsed(module_api: API) -> None:
    crd = widget_crd("changed.example.com", _spec({"rule": "self.n >= 0"}))
    status, created = await module_api.post(CRDS, crd)
    assert status == 201, created
    path = f"{CRDS}/{created['metadata']['name']}"
    versions = created["spec"]["versions"]
    versions[0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
        "x-kubernetes-validations"] = [{"rule": "self.items.exists(in, in > 0)"}]
    status, body = await module_api.patch(path, {"spec": {"versions": versions}},
                                          "application/merge-patch+json")
    assert status == 422, body
    rule = "self.items.exists(in, in > 0)"
    assert _cause(body) == "\n".join([
        "ERROR: <input>:1:19: Syntax error: mismatched input 'in' expecting "
        + EXPECTING.replace("'(', ", "'(', ')', "),
        f" | {rule}",
        " | ..................^",
        f"ERROR: <input>:1:21: Syntax error: mismatched input ',' expecting {EXPECTING}",
        f" | {rule}",
        " | ....................^",
        f"ERROR: <input>:1:26: Syntax error: extraneous input '>' expecting {EXPECTING}",
        f" | {rule}",
        " | .........................^",
        "ERROR: <input>:1:29: Syntax error: extraneous input ')' expecting <EOF>",
        f" | {rule}",
        " | ............................^"])
    status, _ = await module_api.delete(path)
    assert status == 200


async def test_a_rule_the_old_crd_held_is_not_parsed_again() -> None:
    """compile_rule given the old CRD's expressions: a rule among them is compiled as it
    was (celpy's parser), the others by cel-go's parser first."""
    rule = {"rule": "'\\q' != ''"}
    assert compile_rule(rule, SPEC, preexisting=frozenset({rule["rule"]})).error == ""
    assert compile_rule(rule, SPEC, preexisting=frozenset()).error.startswith(
        "compilation failed: ERROR: <input>:1:1: Syntax error: token recognition error")

"""Rules as deep as cel-go takes them compile and evaluate, on real custom resources.

cel-go v0.22.0's parser takes every expression within its limits (parser/parser.go: the
``recursionListener``'s 250 per grammar rule, the visitor's 250 counted nodes from the
root; test_crd_cel_parse_limits.py) and its checker and interpreter walk the AST without a
limit of their own. Its visitor builds ``&&`` and ``||`` chains as balanced trees
(parser/helper.go ``logicManager.balancedTree``) and drops even runs of ``!`` and ``-``
(``VisitLogicalNot``, ``VisitNegate``). kube-apiserver 1.32 keeps those defaults (apiserver
pkg/cel/environment/base.go sets no parser option).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.cluster.conftest import API
from tests.cluster.fidelity.widgets import CRDS, create_served, widget, widget_crd

pytestmark = pytest.mark.asyncio(loop_scope="module")

RULES = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations"


def _crd(group: str, rule: str) -> dict[str, Any]:
    spec = {"type": "object", "properties": {"n": {"type": "integer"}},
            "x-kubernetes-validations": [{"rule": rule, "message": "n is not taken"}]}
    return widget_crd(group, spec)


async def _admits(api: API, group: str, rule: str, taken: list[int], refused: list[int]) -> None:
    """The CRD of ``rule`` is created, and its widgets of each ``taken`` n are, those of each
    ``refused`` one are not, with the rule's message."""
    crd = _crd(group, rule)
    path = await create_served(api, crd)
    for n in taken:
        status, body = await api.post(f"{path}?dryRun=All", widget(crd, f"w{n}", {"n": n}))
        assert status == 201, (n, body)
    for n in refused:
        status, body = await api.post(f"{path}?dryRun=All", widget(crd, f"w{n}", {"n": n}))
        assert status == 422, (n, body)
        assert [c["message"] for c in body["details"]["causes"]] == [
            "Invalid value: \"object\": n is not taken"], body


async def test_parentheses_at_the_limit_compile_and_evaluate(module_api: API) -> None:
    """248 parentheses around a relation: relation entered 250 times (once at the root, once
    in each parenthesis, once for the right operand of ``==``), the listener's limit; one
    more parenthesis is over."""
    rule = "(" * 248 + "self.n == 1" + ")" * 248
    await _admits(module_api, "parens.deep.example.com", rule, taken=[1], refused=[2])
    status, body = await module_api.post(
        f"{CRDS}?dryRun=All", _crd("parens-over.deep.example.com", f"({rule})"))
    assert status == 422, body
    assert body["details"]["causes"][0]["message"].endswith(
        "compilation failed: ERROR: <input>:-1:0: expression recursion limit exceeded: 250")


async def test_nested_list_literals_evaluate(module_api: API) -> None:
    """200 lists, then 200 indexes back to the value: 202 counted nodes on the way to
    ``self.n`` (the relation, the indexes, the selection)."""
    rule = "[" * 200 + "self.n" + "]" * 200 + "[0]" * 200 + " == 1"
    await _admits(module_api, "lists.deep.example.com", rule, taken=[1], refused=[3])


async def test_the_deepest_rule_the_limits_let_through(module_api: API) -> None:
    """248 map literals (expr entered 249 times) and 248 indexes, a relation and a selection:
    250 counted nodes, both limits reached; the deepest tree the parser lets through is
    checked and evaluated on every write, and the server goes on serving."""
    rule = "{1: " * 248 + "self.n" + "}" * 248 + "[1]" * 248 + " == 1"
    await _admits(module_api, "maps.deep.example.com", rule, taken=[1], refused=[2])
    assert (await module_api.get("/readyz"))[0] == 200


@pytest.mark.parametrize(("operator", "rule", "taken", "refused"), [
    ("||", " || ".join(f"self.n == {k}" for k in range(400)), [0, 399], [400, -1]),
    ("&&", " && ".join(f"self.n != {k}" for k in range(400)), [400, -1], [0, 399]),
])
async def test_hundreds_of_terms_of_a_logical_operator(
        module_api: API, operator: str, rule: str, taken: list[int], refused: list[int]
) -> None:
    """A chain cel-go's grammar reads as a loop and its visitor balances: 400 terms, a tree
    400 levels deep in celpy's grammar."""
    group = f"{'or' if operator == '||' else 'and'}.deep.example.com"
    await _admits(module_api, group, rule, taken=taken, refused=refused)


async def test_an_even_run_of_negations_is_dropped(module_api: API) -> None:
    """``!!self.n`` is ``self.n`` to cel-go: never checked as a negation of an int."""
    await _admits(module_api, "nots.deep.example.com", "!!self.n == 1 && --self.n == 1",
                  taken=[1], refused=[2])


async def test_an_odd_run_keeps_one_negation_at_its_first_operator(module_api: API) -> None:
    """VisitLogicalNot: one ``!_`` call, placed at the run's first ``!`` (its ops[0]); the
    call in error takes the error type, so the enclosing ``==`` reports nothing more."""
    rule = "!!!self.n == 1"
    status, body = await module_api.post(f"{CRDS}?dryRun=All", _crd("odd.deep.example.com", rule))
    assert status == 422, body
    [cause] = body["details"]["causes"]
    assert cause["field"] == f"{RULES}[0].rule"
    assert cause["message"].endswith(
        "compilation failed: ERROR: <input>:1:1: found no matching overload for '!_' applied "
        "to '(int)'\n | !!!self.n == 1\n | ^"), cause


async def test_logical_operand_errors_are_placed_as_the_balanced_tree_has_them(
        module_api: API) -> None:
    """``1 && true && 2 && true`` is ``(1 && true) && (2 && true)`` to cel-go: the first and
    the third ``&&`` each find an (int, bool); the middle one, two operands in error."""
    rule = "1 && true && 2 && true"
    status, body = await module_api.post(
        f"{CRDS}?dryRun=All", _crd("balanced.deep.example.com", rule))
    assert status == 422, body
    [cause] = body["details"]["causes"]
    assert cause["message"].endswith("compilation failed: " + "\n".join([
        "ERROR: <input>:1:3: found no matching overload for '_&&_' applied to '(int, bool)'",
        f" | {rule}",
        " | ..^",
        "ERROR: <input>:1:16: found no matching overload for '_&&_' applied to '(int, bool)'",
        f" | {rule}",
        " | ...............^"])), cause


async def test_a_chain_of_thousands_of_terms(module_api: API) -> None:
    """2,000 ``&&`` terms (some 30,000 code points): compiled and evaluated to the last
    term; cel-go's balanced tree is 11 levels deep, celpy's grammar nests 2,000."""
    rule = " && ".join(f"self.n != {k}" for k in range(2000))
    await _admits(module_api, "long.deep.example.com", rule, taken=[2000], refused=[1999])

"""Mixed-type list and map literals in x-kubernetes-validations rules.

The apiserver's base CEL environment enables ``cel.HomogeneousAggregateLiterals()``
(k8s.io/apiserver v0.32 pkg/cel/environment/base.go, and ``ValidateHomogeneousAggregateLiterals``
again in the 1.29 validators), which cel-go v0.22.0 implements as an AST validator run after
type-checking (cel/options.go, cel/validator.go homogeneousAggregateLiteralValidator): a list
literal whose elements, or a map literal whose keys or values, are not all of one type does not
compile, except inside a call named ``format`` (ext/formatting.go
stringFormatValidator.Configure exempts it). The CRD is refused with cel-go's issues, sorted by
position (common/errors.go ToDisplayString).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.cluster.conftest import API
from tests.cluster.fidelity.widgets import widget_crd

pytestmark = pytest.mark.asyncio(loop_scope="module")

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
FIELD = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"


def _crd(group: str, rule: str) -> dict[str, Any]:
    spec = {"type": "object", "x-kubernetes-validations": [{"rule": rule}], "properties": {
        "name": {"type": "string", "maxLength": 10}, "n": {"type": "integer"},
        "tags": {"type": "array", "maxItems": 4,
                 "items": {"type": "string", "maxLength": 5}}}}
    return widget_crd(group, spec)


MIXED = [
    ("[1, 'a'].size() == 2", [(5, "expected type 'int' but found 'string'")]),
    ("[1, 2.0, 'a'].size() == 3", [(5, "expected type 'int' but found 'double'")]),
    ("[self.name, self.n].size() == 2", [(17, "expected type 'string' but found 'int'")]),
    ("[[1], ['a']].size() == 2", [(7, "expected type 'list(int)' but found 'list(string)'")]),
    ("[1, null].size() == 2", [(5, "expected type 'int' but found 'null_type'")]),
    ("[dyn(1), 2].size() == 2", [(10, "expected type 'dyn' but found 'int'")]),
    ("{'a': 1, 'b': 'x'}.size() == 2", [(15, "expected type 'int' but found 'string'")]),
    # a map reports every disagreeing key and value
    ("{'a': 1, 2: 'x', 'c': true}.size() == 3",
     [(10, "expected type 'string' but found 'int'"),
      (13, "expected type 'int' but found 'string'"),
      (23, "expected type 'int' but found 'bool'")]),
]


@pytest.mark.parametrize(("rule", "issues"), MIXED, ids=[r for r, _ in MIXED])
async def test_a_mixed_type_literal_does_not_compile(
        module_api: API, rule: str, issues: list[tuple[int, str]]) -> None:
    """Rule: a list literal's first element of another type than the first, and each map key
    or value of another type than the first entry's, is a compile error at that element."""
    group = f"mixed{[r for r, _ in MIXED].index(rule)}.example.com"
    status, body = await module_api.post(CRDS, _crd(group, rule))
    assert status == 422, body
    [cause] = body["details"]["causes"]
    assert cause["field"] == FIELD
    pointer = "\n".join(f"ERROR: <input>:1:{col}: {message}\n | {rule}\n | {'.' * (col - 1)}^"
                        for col, message in issues)
    assert cause["message"].endswith(f"compilation failed: {pointer}"), cause["message"]


HOMOGENEOUS = [
    "[1, 2, 3].size() == 3",
    "[[], [1]].size() == 2 && [{}, {'a': 'b'}].size() == 2",  # an empty literal joins
    "[self.name, 'x', ?self.?name].size() >= 2",
    "[?self.?name, ?optional.none()].size() <= 2",
    "'%s %d %s'.format(['a', 1, [1, 'b']]) != ''",  # format's arguments are exempt
    "self.tags.all(t, [t, 'x'].size() == 2)",
]


@pytest.mark.parametrize("rule", HOMOGENEOUS)
async def test_a_homogeneous_or_exempt_literal_compiles(module_api: API, rule: str) -> None:
    """Rule: literals of one element type (an empty literal or optional.none() takes the type
    it is joined with, cel-go checker.go joinTypes) and any literal under a format call
    compile."""
    group = f"homogeneous{HOMOGENEOUS.index(rule)}.example.com"
    status, body = await module_api.post(f"{CRDS}?dryRun=All", _crd(group, rule))
    assert status == 201, body

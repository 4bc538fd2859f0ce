"""CEL in x-kubernetes-validations beyond the core language: the optional types library the
Kubernetes base environment enables (apiserver v0.32 pkg/cel/environment/base.go,
``cel.OptionalTypes()`` since 1.28) and the per-call runtime cost limit every rule program is
built with (pkg/cel/limits.go ``PerCallLimit``; apiextensions v0.32
pkg/apiserver/schema/cel/validation.go reports the cancelled evaluation).

Each test creates a CRD of its own group on the module's server and writes custom resources of
it over HTTP.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.cluster.conftest import API
from tests.waiting import wait_for

pytestmark = pytest.mark.asyncio(loop_scope="module")

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def _crd(group: str, spec: dict[str, Any]) -> dict[str, Any]:
    schema = {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"widgets.{group}"},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": schema}]}}


async def _serve(api: API, group: str, spec: dict[str, Any]) -> str:
    """Create the CRD and wait until its resource is served; the collection path."""
    status, body = await api.post(CRDS, _crd(group, spec))
    assert status == 201, body
    path = f"/apis/{group}/v1/namespaces/default/widgets"

    async def served() -> bool:
        return (await api.get(path))[0] == 200

    await wait_for(served)
    return path


def _widget(group: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": name},
            "spec": spec}


OPTIONAL_RULES = [
    {"rule": "self.?replicas.orValue(1) >= 1", "message": "replicas must be positive"},
    {"rule": "self.?labels[?'tier'].orValue('web') != 'bad'", "message": "bad tier"},
    {"rule": "[?self.?name, ?optional.none()].all(n, n.size() < 6)"},
    {"rule": "optional.ofNonZeroValue(self.?name.orValue('')).optMap(n, n.startsWith('w'))"
             ".orValue(true)"},
    {"rule": "{?'r': self.?replicas}.size() + [1, 2,].size() >= 2",
     "messageExpression": "'replicas is ' + string(self.?replicas.orValue(0))"},
]


async def test_optional_syntax_rules_compile_and_evaluate(module_api: API) -> None:
    """Rule: rules written with the optional library (``x.?f``, ``m[?k]``, ``[?e]``,
    ``{?k: v}``, ``optional.none/ofNonZeroValue``, ``orValue``, ``optMap``, trailing commas
    in literals) are accepted at CRD create and evaluated on writes: an absent field selected
    with ``.?`` is ``optional.none()``, ``[?e]``/``{?k: e}`` drop it. base.go
    (cel.OptionalTypes() in the 1.28 environment), cel-go parser/gen/CEL.g4 and
    cel/library.go (optional functions and the optMap macro)."""
    group = "optional.example.com"
    spec = {"type": "object", "x-kubernetes-validations": OPTIONAL_RULES, "properties": {
        "replicas": {"type": "integer"}, "name": {"type": "string", "maxLength": 20},
        "labels": {"type": "object", "maxProperties": 4,
                   "additionalProperties": {"type": "string", "maxLength": 10}}}}
    path = await _serve(module_api, group, spec)
    status, body = await module_api.post(path, _widget(group, "empty", {}))
    assert status == 201, body
    status, body = await module_api.post(path, _widget(group, "good", {
        "replicas": 2, "name": "wide", "labels": {"tier": "db"}}))
    assert status == 201, body
    status, body = await module_api.post(path, _widget(group, "bad", {
        "replicas": 0, "name": "xylophone", "labels": {"tier": "bad"}}))
    assert status == 422, body
    assert body["details"]["causes"] == [
        {"reason": "FieldValueInvalid", "field": "spec",
         "message": 'Invalid value: "object": replicas must be positive'},
        {"reason": "FieldValueInvalid", "field": "spec",
         "message": 'Invalid value: "object": bad tier'},
        {"reason": "FieldValueInvalid", "field": "spec",
         "message": 'Invalid value: "object": failed rule: '
                    "[?self.?name, ?optional.none()].all(n, n.size() < 6)"},
        {"reason": "FieldValueInvalid", "field": "spec",
         "message": 'Invalid value: "object": failed rule: ' + OPTIONAL_RULES[3]["rule"]}]


async def test_optional_element_of_a_non_optional_value_is_refused(module_api: API) -> None:
    """Rule: ``?e`` in a list literal needs an optional value; cel-go's checker refuses a
    plain one (checker.go checkCreateList: typeMismatch), so the CRD is refused."""
    group = "badoptional.example.com"
    spec = {"type": "object", "properties": {"replicas": {"type": "integer"}},
            "x-kubernetes-validations": [{"rule": "[?self.replicas].size() == 1"}]}
    status, body = await module_api.post(CRDS, _crd(group, spec))
    assert status == 422, body
    [cause] = body["details"]["causes"]
    assert cause["field"] == ("spec.validation.openAPIV3Schema.properties[spec]"
                              ".x-kubernetes-validations[0].rule")
    assert "compilation failed: ERROR: <input>:1:" in cause["message"]
    assert "expected type 'optional_type(int)' but found 'int'" in cause["message"]


async def test_rule_over_the_per_call_cost_limit_is_cancelled(module_api: API) -> None:
    """Rule: a rule within the static budget (about 2M estimated for 20 x 20 comparisons of
    strings of up to 50000 characters, under StaticEstimatedCostLimit 10M) whose actual cost
    passes PerCallLimit (1M) at run time is cancelled; the write is refused with
    "'operation cancelled: actual cost limit exceeded': no further validation rules will be
    run due to call cost exceeds limit for rule: ...", and no later rule runs. Smaller values,
    or a first element that decides ``all``, cost less and get the rules' own answers.
    apiserver pkg/cel/limits.go (PerCallLimit), apiextensions
    pkg/apiserver/schema/cel/validation.go (validateExpressions), cel-go
    interpreter/runtimecost.go (string equality costs a tenth of the shorter length)."""
    group = "costly.example.com"
    rule = "self.items.all(x, self.items.all(y, x == y))"
    spec = {"type": "object", "properties": {"items": {
        "type": "array", "maxItems": 20, "items": {"type": "string", "maxLength": 50000}}},
        "x-kubernetes-validations": [{"rule": rule}, {"rule": "size(self.items) < 0"}]}
    path = await _serve(module_api, group, spec)
    status, body = await module_api.post(path, _widget(group, "big", {
        "items": ["a" * 50000] * 20}))
    assert status == 422, body
    assert body["details"]["causes"] == [
        {"reason": "FieldValueInvalid", "field": "spec",
         "message": "Invalid value: \"object\": 'operation cancelled: actual cost limit "
                    "exceeded': no further validation rules will be run due to call cost "
                    f"exceeds limit for rule: {rule}"}]
    status, body = await module_api.post(path, _widget(group, "small", {
        "items": ["a" * 500] * 20}))
    assert status == 422, body
    assert [c["message"] for c in body["details"]["causes"]] == [
        'Invalid value: "object": failed rule: size(self.items) < 0']
    # all() stops at its first false element (cel-go's loop condition
    # @not_strictly_false(__result__), parser/macro.go): the same big values with a
    # differing second item cost a few comparisons and simply fail the rule
    status, body = await module_api.post(path, _widget(group, "early", {
        "items": ["a" * 50000, "b" * 50000] + ["a" * 50000] * 18}))
    assert status == 422, body
    assert [c["message"] for c in body["details"]["causes"]] == [
        f'Invalid value: "object": failed rule: {rule}',
        'Invalid value: "object": failed rule: size(self.items) < 0']


async def test_estimated_cost_counts_like_cel_go(module_api: API) -> None:
    """Rule: a rule's estimated cost is cel-go's: every identifier and field selection
    costs 1, ``all`` costs its range's bound times (3 + its body) - the macro's loop
    condition and step (cel-go parser/macro.go, checker/cost.go costComprehension) - and a
    list of integers without maxItems is bounded by the 3 MiB request (1572863 items,
    apiserver pkg/cel/common/schemas.go estimateMaxArrayItemsFromMinSize). So
    ``self.nums.all(x, x > 0 && x < 100)`` estimates 2 + 1 + 1572863 * 7 = 11010044, over
    StaticEstimatedCostLimit by 1.101004x, and is Forbidden; with maxItems 1000000 it
    fits. apiextensions validation.go (getCostErrorMessage)."""
    rule = "self.nums.all(x, x > 0 && x < 100)"
    spec: dict[str, Any] = {"type": "object", "properties": {"nums": {"type": "array",
                                                      "items": {"type": "integer"}}},
            "x-kubernetes-validations": [{"rule": rule}]}
    status, body = await module_api.post(CRDS, _crd("estimate.example.com", spec))
    assert status == 422, body
    assert body["details"]["causes"] == [{
        "reason": "FieldValueForbidden",
        "field": "spec.validation.openAPIV3Schema.properties[spec]"
                 ".x-kubernetes-validations[0].rule",
        "message": "Forbidden: estimated rule cost exceeds budget by factor of 1.101004x "
                   "(try simplifying the rule, or adding maxItems, maxProperties, and "
                   "maxLength where arrays, maps, and strings are declared)"}]
    spec["properties"]["nums"]["maxItems"] = 1_000_000
    status, body = await module_api.post(CRDS, _crd("estimate.example.com", spec))
    assert status == 201, body


async def test_rules_of_one_object_share_the_runtime_cost_budget(module_api: API) -> None:
    """Rule: the actual costs of all rule evaluations on one object are drawn from
    RuntimeCELCostBudget (10M); the evaluation that would overdraw it is refused with
    "validation failed due to running out of cost budget, no further validation rules will
    be run" on its node and nothing after it runs. Three item rules of about 350k each
    (a 50000-character string containing a 700-character one costs 5000 * 70, cel-go
    interpreter/runtimecost.go ContainsString) exhaust it at the second rule of the tenth
    item. apiserver pkg/apis/cel/config.go, apiextensions
    pkg/apiserver/schema/cel/validation.go (validateExpressions)."""
    group = "budget.example.com"
    item = {"type": "object", "properties": {
        "s": {"type": "string", "maxLength": 50000}, "t": {"type": "string", "maxLength": 700}},
        "x-kubernetes-validations": [
            {"rule": "self.s.contains(self.t)"},
            {"rule": "self.s.contains(self.t) == true"},
            {"rule": "!self.s.contains(self.t) == false"}]}
    spec = {"type": "object", "properties": {"items": {
        "type": "array", "maxItems": 20, "items": item}}}
    path = await _serve(module_api, group, spec)
    items = [{"s": "a" * 50000, "t": "a" * 700}] * 20
    status, body = await module_api.post(path, _widget(group, "spendy", {"items": items}))
    assert status == 422, body
    assert body["details"]["causes"] == [
        {"reason": "FieldValueInvalid", "field": "spec.items[9]",
         "message": 'Invalid value: "object": validation failed due to running out of cost '
                    "budget, no further validation rules will be run"}]
    status, body = await module_api.post(path, _widget(group, "thrifty", {
        "items": items[:9]}))
    assert status == 201, body


async def test_message_expression_is_trimmed_before_its_checks(module_api: API) -> None:
    """Rule: a messageExpression's string is trimmed of surrounding space before the
    line-break check, so a trailing newline is dropped rather than the message discarded;
    one with an inner line break falls back to ``message``. apiextensions
    pkg/apiserver/schema/cel/validation.go evalMessageExpression (strings.TrimSpace, then
    hasNewlines, then the 5 KiB bound)."""
    group = "messages.example.com"
    spec = {"type": "object", "properties": {"replicas": {"type": "integer"}},
            "x-kubernetes-validations": [
                {"rule": "self.replicas > 0", "message": "static",
                 "messageExpression": "'only ' + string(self.replicas) + '\\n'"},
                {"rule": "self.replicas > 1", "message": "kept",
                 "messageExpression": "'two\\nlines'"}]}
    path = await _serve(module_api, group, spec)
    status, body = await module_api.post(path, _widget(group, "zero", {"replicas": 0}))
    assert status == 422, body
    assert [c["message"] for c in body["details"]["causes"]] == [
        'Invalid value: "object": only 0', 'Invalid value: "object": kept']


async def test_sets_library_functions(module_api: API) -> None:
    """Rule: the ext.Sets() library of the 1.29 environment (base.go) is available:
    ``sets.contains(a, b)`` (every element of b in a), ``sets.intersects``, and
    ``sets.equivalent`` compare elements with CEL equality; a non-list argument is refused
    at create like cel-go's checker does. cel-go ext/sets.go. (Its documented
    ``sets.equivalent([1, 2.0], [2u, 1])`` does not compile here: the apiserver's environment
    refuses mixed-type list literals, see test_crd_cel_literals.py.)"""
    group = "sets.example.com"
    tags = {"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 10}}
    spec = {"type": "object", "properties": {"allowed": tags, "used": tags},
            "x-kubernetes-validations": [
                {"rule": "sets.contains(self.allowed, self.used)", "message": "unknown tag"},
                {"rule": "!sets.intersects(self.used, ['forbidden'])",
                 "message": "forbidden tag"},
                {"rule": "sets.equivalent([1, 2, 2], [2, 1])"}]}
    bad = {**spec, "x-kubernetes-validations": [{"rule": "sets.contains(self.used, 1)"}]}
    status, body = await module_api.post(CRDS, _crd("badsets.example.com", bad))
    assert status == 422, body
    assert ("found no matching overload for 'sets.contains' applied to "
            "'(list(string), int)'") in body["details"]["causes"][0]["message"]
    path = await _serve(module_api, group, spec)
    status, body = await module_api.post(path, _widget(group, "fine", {
        "allowed": ["a", "b"], "used": ["b"]}))
    assert status == 201, body
    status, body = await module_api.post(path, _widget(group, "odd", {
        "allowed": ["a"], "used": ["forbidden"]}))
    assert status == 422, body
    assert [c["message"] for c in body["details"]["causes"]] == [
        'Invalid value: "object": unknown tag', 'Invalid value: "object": forbidden tag']


async def test_two_variable_comprehensions(module_api: API) -> None:
    """Rule: the 1.32 environment adds ext.TwoVarComprehensions (base.go): ``all``,
    ``exists``, ``existsOne`` with (index, element) on lists and (key, value) on maps, and
    ``transformList``/``transformMap``/``transformMapEntry``; the three-argument
    ``map(x, p, e)`` filters before it transforms. cel-go ext/comprehensions.go,
    parser/macro.go (MakeMap)."""
    group = "twovar.example.com"
    spec = {"type": "object", "properties": {
        "ports": {"type": "array", "maxItems": 8, "items": {"type": "integer"}},
        "env": {"type": "object", "maxProperties": 8,
                "additionalProperties": {"type": "string", "maxLength": 20}}},
        "x-kubernetes-validations": [
            {"rule": "self.ports.all(i, p, i == 0 || p > self.ports[i - 1])",
             "message": "ports must ascend"},
            {"rule": "self.env.all(k, v, !v.startsWith(k))", "message": "value repeats key"},
            {"rule": "self.env.transformList(k, v, k.size() > 1, k).size() <= 1",
             "message": "at most one long name"},
            {"rule": "self.ports.map(p, p < 1024, p).size() == 0",
             "message": "privileged port"}]}
    path = await _serve(module_api, group, spec)
    status, body = await module_api.post(path, _widget(group, "fine", {
        "ports": [8080, 8443], "env": {"A": "1", "LONG": "x"}}))
    assert status == 201, body
    status, body = await module_api.post(path, _widget(group, "bad", {
        "ports": [443, 80], "env": {"AB": "ABC", "CD": "x"}}))
    assert status == 422, body
    assert [c["message"] for c in body["details"]["causes"]] == [
        f'Invalid value: "object": {m}' for m in (
            "ports must ascend", "value repeats key", "at most one long name",
            "privileged port")]


async def test_format_library_validates_named_formats(module_api: API) -> None:
    """Rule: the format library of the 1.31 environment (base.go) is available:
    ``format.dns1123Label().validate(s)`` is ``optional.none()`` for a valid value and
    otherwise carries apimachinery's own messages (here IsDNS1123Label's), and
    ``format.named(name)`` is an optional format. apiserver pkg/cel/library/format.go."""
    group = "formats.example.com"
    spec = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 64}},
            "x-kubernetes-validations": [
                {"rule": "!format.dns1123Label().validate(self.name).hasValue()",
                 "messageExpression":
                     "format.dns1123Label().validate(self.name).value().join(', ')"},
                {"rule": "format.named('labelValue').hasValue() && "
                         "!format.named('noSuchFormat').hasValue()"}]}
    path = await _serve(module_api, group, spec)
    status, body = await module_api.post(path, _widget(group, "fine", {"name": "web-1"}))
    assert status == 201, body
    status, body = await module_api.post(path, _widget(group, "bad", {"name": "Bad_Name"}))
    assert status == 422, body
    assert [c["message"] for c in body["details"]["causes"]] == [
        'Invalid value: "object": a lowercase RFC 1123 label must consist of lower case '
        "alphanumeric characters or '-', and must start and end with an alphanumeric "
        "character (e.g. 'my-name',  or '123-abc', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"]


async def test_ip_library_predicates(module_api: API) -> None:
    """Rule: ``isGlobalUnicast`` is netip's (private IPv4 and ULA IPv6 addresses are global
    unicast; loopback, link-local, multicast are not), and the IP library's
    ``isLinkLocalUnicast``, ``isLinkLocalMulticast`` and ``ip.isCanonical`` are available.
    apiserver pkg/cel/library/ip.go (the 1.30 environment of base.go)."""
    group = "ips.example.com"
    spec = {"type": "object", "properties": {"addr": {"type": "string", "maxLength": 45}},
            "x-kubernetes-validations": [
                {"rule": "ip(self.addr).isGlobalUnicast()", "message": "not global unicast"},
                {"rule": "ip.isCanonical(self.addr)", "message": "not canonical"},
                {"rule": "!ip(self.addr).isLinkLocalUnicast() && "
                         "!ip(self.addr).isLinkLocalMulticast()", "message": "link-local"}]}
    path = await _serve(module_api, group, spec)
    for name, addr in (("private", "10.0.0.1"), ("ula", "fd00::1")):
        status, body = await module_api.post(path, _widget(group, name, {"addr": addr}))
        assert status == 201, body
    status, body = await module_api.post(path, _widget(group, "odd", {
        "addr": "fe80:0::1"}))
    assert status == 422, body
    assert [c["message"] for c in body["details"]["causes"]] == [
        f'Invalid value: "object": {m}' for m in (
            "not global unicast", "not canonical", "link-local")]

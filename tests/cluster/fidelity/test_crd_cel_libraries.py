"""The Kubernetes CEL libraries as x-kubernetes-validations rules see them in 1.32, over HTTP.

Specification: apiserver v0.32.0 pkg/cel/environment/base.go (which libraries, which strings
extension version: ``ext.Strings(ext.StringsVersion(2))`` since 1.29, so ``reverse``, version
3, is undeclared), pkg/cel/library/{cidr,ip,urls,lists,quantity}.go, pkg/cel/cidr.go
(netip.Prefix keeps host bits), and cel-go v0.22.0 ext/strings.go and ext/formatting.go
(``format`` clauses and error texts, ``strings.quote``, rune offsets of
``indexOf``/``lastIndexOf``/``substring``). A rule that errors is reported as the field's
message "<error> evaluating rule: <rule>" (apiextensions pkg/apiserver/schema/cel/validation.go).

One CRD holds every rule of the table; one custom resource write evaluates them all.
"""

from __future__ import annotations

from typing import Any

import pytest
import pytest_asyncio

from tests.cluster.conftest import API
from tests.waiting import wait_for

pytestmark = pytest.mark.asyncio(loop_scope="module")

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
GROUP = "cellibs.example.com"

# (rule, the error it gives, or None when it holds). ``self.fmt`` is '%d' and ``self.s`` 'x':
# a format string that is not a literal is checked at run time, not by the format validator.
TABLE: list[tuple[str, str | None]] = [
    # pkg/cel/cidr.go, library/cidr.go
    ("string(cidr('10.0.0.1/8')) == '10.0.0.1/8'", None),
    ("cidr('10.0.0.1/8').ip() == ip('10.0.0.1')", None),
    ("cidr('10.0.0.1/8').masked() == cidr('10.0.0.0/8')", None),
    ("cidr('10.0.0.1/8') != cidr('10.0.0.0/8')", None),
    ("cidr('10.0.0.1/8').prefixLength() == 8", None),
    ("cidr('10.0.0.0/8').containsIP('10.1.2.3') && !cidr('10.0.0.0/8').containsIP('::1')",
     None),
    ("cidr('10.0.0.0/8').containsCIDR(cidr('10.1.0.0/16'))"
     " && !cidr('10.1.0.0/16').containsCIDR('10.0.0.0/8')", None),
    # library/ip.go parseIPAddr
    ("ip('::ffff:1.2.3.4') == ip('1.2.3.4')",
     'IPv4-mapped IPv6 address "::ffff:1.2.3.4" is not allowed'),
    # library/urls.go
    ("url('https://a.com/p?x=1&x=2&y=3').getQuery() == {'x': ['1', '2'], 'y': ['3']}", None),
    ("url('https://u@a.com:80/p%20q').getEscapedPath() == '/p%20q'"
     " && url('https://u@a.com:80/').getHost() == 'a.com:80'"
     " && url('https://[::1]:80/').getHostname() == '::1'"
     " && url('https://a.com:80/').getPort() == '80'"
     " && url('https://a.com/').getScheme() == 'https'", None),
    ("url('https://u@Example.COM:8080/').getHostname() == 'Example.COM'"
     " && url('https://u@Example.COM:8080/').getPort() == '8080'"
     " && url('https://[::1]/').getHost() == '[::1]' && url('https://[::1]/').getPort() == ''"
     " && !isURL('https://a.com:abc/') && isURL('/path')", None),
    ("url('https://a.com:abc/').getPort() == ''", "URL parse error during conversion from "
     "string: parse \"https://a.com:abc/\": invalid port \":abc\" after host"),
    ("url('a/b').getScheme() == ''",
     'URL parse error during conversion from string: parse "a/b": invalid URI for request'),
    # cel-go ext/strings.go (version 2)
    ("'%d items, %s, %.2f, %b, %o, %x, %X'.format([3, [1, 'a', 2.5], 1234.5, 5, 8, 255, 'hi'])"
     " == '3 items, [1, \"a\", 2.500000], 1,234.50, 101, 10, ff, 6869'", None),
    ("'%s %s %s'.format([1.5, 1000000.0, {'b': true, 'a': null}])"
     " == '1.5 1e+06 {\"a\":null, \"b\":true}'", None),
    ("self.fmt.format([self.s]) == ''", "error during formatting: decimal clause can only be "
     "used on integers, was given string"),
    ("(self.fmt + ' %d').format([1]) == ''", "index 1 out of range"),
    ("strings.quote('a\"b\\n') == '\"a\\\\\"b\\\\n\"'", None),
    ("'hello'.lastIndexOf('l', 2) == 2 && 'hello'.lastIndexOf('l', 9) == -1"
     " && 'hello'.indexOf('l', 9) == -1 && 'h\u00e9llo'.indexOf('l', 2) == 2", None),
    ("'hello'.indexOf('l', -1) == 0", "index out of range: -1"),
    ("'a,b,c'.split('', 2) == ['a', ',b,c'] && 'a,b,c'.split(',', 0) == []"
     " && 'a,b,a'.replace('a', 'x', 1) == 'x,b,a'", None),
    ("'\u00c0B'.lowerAscii() == '\u00c0b' && '\u00e0b'.upperAscii() == '\u00e0B'"
     " && ' a\\t'.trim() == 'a' && ['a', 'b'].join('-') == 'a-b'", None),
    ("'abc'.substring(2, 1) == ''", "invalid substring range. start: 2, end: 1"),
    ("'abc'.substring(4) == ''", "index out of range: 4"),
    # library/quantity.go
    ("quantity('1.5Gi').isInteger() && quantity('1k').add(quantity('1')).compareTo("
     "quantity('1001')) == 0 && quantity('-1m').sign() == -1"
     " && quantity('1500m').asApproximateFloat() == 1.5 && isQuantity('1e3')"
     " && !isQuantity('1.5.0') && quantity('2').sub(1).asInteger() == 1", None),
    ("quantity('9223372036854775807').add(1).asInteger() == 0",
     "cannot convert value to integer"),
    ("quantity('1.5.0') == quantity('1')", "quantities must match the regular expression "
     "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
    # library/lists.go
    ("[1, 2, 2].isSorted() && [1, 2, 3].sum() == 6 && [3, 1].min() == 1 && [1, 3].max() == 3"
     " && [1, 2, 1].indexOf(1) == 0 && [1, 2, 1].lastIndexOf(1) == 2", None),
    ("self.empty.min() == 0",
     "min called on empty list"),
]


def _crd() -> dict[str, Any]:
    spec = {"type": "object", "x-kubernetes-validations": [{"rule": r} for r, _ in TABLE],
            "properties": {"fmt": {"type": "string", "maxLength": 8},
                           "s": {"type": "string", "maxLength": 8},
                           "empty": {"type": "array", "maxItems": 4,
                                     "items": {"type": "integer"}}}}
    schema = {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"widgets.{GROUP}"},
            "spec": {"group": GROUP, "scope": "Namespaced",
                     "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": schema}]}}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def causes(module_api: API) -> dict[str, str]:
    """The message of each failing rule of one write, keyed by rule."""
    status, body = await module_api.post(CRDS, _crd())
    assert status == 201, body["details"]["causes"]
    path = f"/apis/{GROUP}/v1/namespaces/default/widgets"

    async def served() -> bool:
        return (await module_api.get(path))[0] == 200

    await wait_for(served)
    status, body = await module_api.post(path, {
        "apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": "w"},
        "spec": {"fmt": "%d", "s": "x", "empty": []}})
    assert status == 422, body
    suffix = " evaluating rule: "
    found: dict[str, str] = {}
    for cause in body["details"]["causes"]:
        assert cause["field"] == "spec", cause
        message = cause["message"].removeprefix('Invalid value: "object": ')
        if message.startswith("failed rule: "):  # a rule that evaluated to false
            found[message.removeprefix("failed rule: ")] = "false"
            continue
        error, _, rule = message.partition(suffix)
        found[rule or message] = error
    assert found, body
    return found


@pytest.mark.parametrize(("rule", "error"), TABLE, ids=[r[:40] for r, _ in TABLE])
async def test_library_function_result_and_error(causes: dict[str, str], rule: str,
                                                 error: str | None) -> None:
    """Rule: each library call gives Go's result (the rule holds) or Go's error text as the
    field message (see the module docstring for the Go files)."""
    assert causes.get(rule) == error


async def test_strings_reverse_is_not_declared_in_1_32(module_api: API) -> None:
    """Rule: ``reverse`` is strings extension version 3; 1.32's base.go declares version 2,
    so a CRD using it is refused at compile time."""
    crd = _crd()
    crd["metadata"]["name"] = "widgets.reverse.example.com"
    crd["spec"]["group"] = "reverse.example.com"
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["x-kubernetes-validations"] = [{"rule": "'abc'.reverse() == 'cba'"}]
    status, body = await module_api.post(CRDS, crd)
    assert status == 422, body
    [cause] = body["details"]["causes"]
    assert "undeclared reference to 'reverse'" in cause["message"]


# (rule, the compile error cel-go reports, caret column)
COMPILE_CHECKS = [
    ("'%d'.format(['a']) == ''", "error during formatting: decimal clause can only be used "
     "on integers, was given string", 14),
    ("'%d %d'.format([1]) == ''", "index 1 out of range", 15),
    ("'%d'.format([1, 2]) == ''",
     "too many arguments supplied to string.format (expected 1, got 2)", 12),
    ("'%q'.format([1]) == ''",
     'could not parse formatting clause: unrecognized formatting clause "q"', 12),
    ("'%s'.format([quantity('1')]) == ''", "error during formatting: string clause can only "
     "be used on strings, bools, bytes, ints, doubles, maps, lists, types, durations, and "
     "timestamps, was given kubernetes.Quantity", 14),
    # library/quantity.go: compareTo/isLessThan/isGreaterThan take only a Quantity, and the
    # Quantity type has no ordering operators
    ("quantity('1').compareTo(1) == 0",
     "found no matching overload for 'compareTo' applied to 'kubernetes.Quantity.(int)'", 24),
    ("quantity('1') < quantity('2')", "found no matching overload for '_<_' applied to "
     "'(kubernetes.Quantity, kubernetes.Quantity)'", 15),
    # library/lists.go: sum over summableTypes, isSorted/min/max over comparableTypes
    ("['a'].sum() == 'a'", "found no matching overload for 'sum' applied to "
     "'list(string).()'", 10),
    ("[[1], [2]].isSorted()", "found no matching overload for 'isSorted' applied to "
     "'list(list(int)).()'", 20),
]


@pytest.mark.parametrize(("rule", "error", "column"), COMPILE_CHECKS,
                         ids=[r for r, _, _ in COMPILE_CHECKS])
async def test_library_call_is_checked_at_compile_time(
        module_api: API, rule: str, error: str, column: int) -> None:
    """Rule: library calls are type-checked when the CRD is written (the quantity and list
    cases: see COMPILE_CHECKS). ``'<literal>'.format([<list literal>])`` is checked
    (cel-go v0.22.0 ext/formatting.go stringFormatValidator, which ext.Strings adds for
    version >= 1): the clause against its argument's type (at the argument), the argument
    count and the clause syntax (at the call); the CRD is refused with cel-go's message. The
    list literal may mix types (format is exempt from the homogeneous literal check)."""
    group = f"fmt{[r for r, _, _ in COMPILE_CHECKS].index(rule)}.example.com"
    crd = _crd()
    crd["metadata"]["name"] = f"widgets.{group}"
    crd["spec"]["group"] = group
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["x-kubernetes-validations"] = [{"rule": rule},
                                        {"rule": "'%s %d'.format(['a', 1]) == 'a 1'"}]
    status, body = await module_api.post(CRDS, crd)
    assert status == 422, body
    [cause] = body["details"]["causes"]
    assert cause["field"] == ("spec.validation.openAPIV3Schema.properties[spec]"
                              ".x-kubernetes-validations[0].rule")
    assert f"compilation failed: ERROR: <input>:1:{column}: {error}\n" in cause["message"]

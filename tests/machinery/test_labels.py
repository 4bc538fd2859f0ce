"""Label selector parsing, matching and LabelSelector conversion, against the apiserver."""

from __future__ import annotations

import pytest

from setpoint.machinery import labels
from setpoint.machinery.errors import StatusError

OBJECTS = {
    "a": {"env": "prod", "tier": "web"},
    "b": {"env": "dev", "tier": "web"},
    "c": {"env": "prod"},
    "d": {"env": "qa", "tier": "db"},
    "kube-root-ca.crt": {},
}


def selected(text: str) -> list[str]:
    sel = labels.parse(text)
    return sorted(name for name, ls in OBJECTS.items() if sel.matches(ls))


@pytest.mark.parametrize(("text", "expected"), [
    ("env=prod", ["a", "c"]),
    ("env==prod", ["a", "c"]),
    ("env!=prod", ["b", "d", "kube-root-ca.crt"]),
    ("env in (prod,dev)", ["a", "b", "c"]),
    ("env notin (prod,qa)", ["b", "kube-root-ca.crt"]),
    ("tier", ["a", "b", "d"]),
    ("!tier", ["c", "kube-root-ca.crt"]),
    ("env=prod,tier=web", ["a"]),
    ("tier in (web),!nope", ["a", "b"]),
    ("env=staging", []),
    ("  env = prod ,  tier  ", ["a"]),
    ("", sorted(OBJECTS)),
])
def test_selector_selects_what_the_apiserver_selects(text: str, expected: list[str]) -> None:
    assert selected(text) == expected


@pytest.mark.parametrize(("text", "message"), [
    ("env in prod", "unable to parse requirement: found 'prod' expected: '('"),
    ("=prod", "found '=', expected: !, identifier, or 'end of string'"),
    ("env=%bad%", "unable to parse requirement: values[0][env]: Invalid value: \"%bad%\": a valid "
     "label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and "
     "must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
     "'12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"),
    ("a,", "found '', expected: identifier after ','"),
    ("a=b c", "found 'c', expected: ',' or 'end of string'"),
    ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"),
    ("a in (x y)", "unable to parse requirement: found 'y', expected: ',' or ')'"),
    ("a gt 1", "unable to parse requirement: found 'gt', expected: in, notin, =, ==, !=, gt, lt"),
])
def test_bad_selectors_are_400s_worded_as_kubernetes(text: str, message: str) -> None:
    with pytest.raises(StatusError) as info:
        labels.parse(text)
    assert info.value.code == 400
    assert info.value.reason == "BadRequest"
    assert info.value.message == message


def test_bad_key_reports_the_nil_path_as_go_prints_it() -> None:
    with pytest.raises(StatusError) as info:
        labels.parse("-x=a")
    assert info.value.message.startswith('unable to parse requirement: <nil>: Invalid value: "-x"')


def test_string_form_is_sorted_and_normalized() -> None:
    assert str(labels.parse("z=1,a in (c,b),!m")) == "a in (b,c),!m,z=1"
    assert str(labels.parse("x in (a,,b)")) == "x in (,a,b)"
    assert str(labels.parse("x==y")) == "x==y"


def test_in_and_notin_treat_keywords_as_values() -> None:
    sel = labels.parse("a in (in,notin)")
    assert sel.matches({"a": "notin"})
    assert not sel.matches({"a": "x"})


def test_greater_and_less_than_compare_integers() -> None:
    assert labels.parse("n>3").matches({"n": "4"})
    assert not labels.parse("n>3").matches({"n": "3"})
    assert labels.parse("n<3").matches({"n": "-1"})
    assert not labels.parse("n<3").matches({"n": "x"})


def test_label_selector_conversion_none_empty_and_full() -> None:
    assert not labels.from_label_selector(None).matches({})
    assert labels.from_label_selector({}).matches({"anything": "x"})
    sel = labels.from_label_selector({
        "matchLabels": {"app": "web"},
        "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]},
                             {"key": "gone", "operator": "DoesNotExist"}],
    })
    assert str(sel) == "app=web,!gone,tier notin (db)"
    assert sel.matches({"app": "web", "tier": "fe"})
    assert not sel.matches({"app": "web", "gone": ""})


def test_label_selector_with_unknown_operator_is_rejected() -> None:
    with pytest.raises(labels.SelectorError, match='"Bogus" is not a valid label selector'):
        labels.from_label_selector({"matchExpressions": [{"key": "a", "operator": "Bogus"}]})


def test_validate_label_selector_reports_fields() -> None:
    causes = labels.validate_label_selector({
        "matchLabels": {"a": "x y"},
        "matchExpressions": [{"key": "k", "operator": "In"},
                             {"key": "k", "operator": "Exists", "values": ["v"]}],
    }, "spec.selector")
    assert [(c.field, c.reason) for c in causes] == [
        ("spec.selector.matchLabels", "FieldValueInvalid"),
        ("spec.selector.matchExpressions[0].values", "FieldValueRequired"),
        ("spec.selector.matchExpressions[1].values", "FieldValueForbidden"),
    ]


def test_requires_exact_match_finds_pinned_values() -> None:
    sel = labels.parse("app=web,tier in (a,b)")
    assert sel.requires_exact_match("app") == "web"
    assert sel.requires_exact_match("tier") is None
    assert sel.requires_exact_match("other") is None

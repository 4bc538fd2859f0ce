"""Field selectors: parsing, escaping, matching and the unsupported-field error."""

from __future__ import annotations

import pytest

from setpoint.machinery import fields
from setpoint.machinery.errors import StatusError

POD = {"metadata.name": "p1", "status.phase": "Pending", "spec.nodeName": ""}


@pytest.mark.parametrize(("text", "matches"), [
    ("status.phase=Pending", True),
    ("status.phase==Pending", True),
    ("status.phase!=Running", True),
    ("status.phase=Running", False),
    ("spec.nodeName=", True),
    ("metadata.name!=p1,status.phase=Pending", False),
    ("metadata.name=p1,status.phase=Pending", True),
    ("", True),
])
def test_field_selector_matches_field_labels(text: str, matches: bool) -> None:
    assert fields.parse(text).matches(POD) is matches


def test_set_based_syntax_is_a_bad_request() -> None:
    with pytest.raises(StatusError) as info:
        fields.parse("metadata.name in (p1)")
    assert info.value.code == 400
    assert info.value.message == (
        "invalid selector: 'metadata.name in (p1)'; can't understand 'metadata.name in (p1)'")


def test_unsupported_field_is_reported_as_kubernetes_words_it() -> None:
    sel = fields.parse("spec.foo=bar,metadata.name=x")
    with pytest.raises(StatusError) as info:
        fields.check_supported(sel, {"metadata.name", "metadata.namespace"})
    assert info.value.code == 400
    assert info.value.reason == "BadRequest"
    assert info.value.message == "field label not supported: spec.foo"


def test_supported_fields_pass() -> None:
    fields.check_supported(fields.parse("metadata.name=x"), {"metadata.name"})


def test_escaped_values_round_trip() -> None:
    sel = fields.parse(r"a=x\,y\=z\\w")
    assert sel.requirements[0].value == "x,y=z\\w"
    assert str(sel) == r"a=x\,y\=z\\w"


@pytest.mark.parametrize(("text", "message"), [
    (r"a=x\y", "invalid field selector: invalid escape sequence: \\y"),
    ("a=b=c", "invalid field selector: unescaped character in value: 61"),
    ("a=b\\", "invalid field selector: invalid escape sequence: \\"),
])
def test_bad_escapes_are_rejected(text: str, message: str) -> None:
    with pytest.raises(StatusError) as info:
        fields.parse(text)
    assert info.value.message == message


def test_terms_are_sorted_and_exact_match_is_found() -> None:
    sel = fields.parse("status.phase=Pending,metadata.name=p1")
    assert sel.fields == ["metadata.name", "status.phase"]
    assert sel.requires_exact_match("metadata.name") == "p1"

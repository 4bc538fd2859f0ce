"""gojson's numbers against encode.go ``floatEncoder.encode`` (strconv 'f' format for
1e-6 <= |f| < 1e21, 'e' format cleaned of ``e-0X`` otherwise, shortest digits)."""

from __future__ import annotations

import pytest

from setpoint.machinery import gojson


@pytest.mark.parametrize(("value", "go"), [
    (1.0, "1"), (1500.0, "1500"), (1e16, "10000000000000000"), (1e20, "100000000000000000000"),
    (1e21, "1e+21"), (1.5e21, "1.5e+21"), (1e-5, "0.00001"), (1e-6, "0.000001"),
    (1.5e-6, "0.0000015"), (1e-7, "1e-7"), (1.5e-7, "1.5e-7"), (-1e-7, "-1e-7"),
    (1e-100, "1e-100"), (5e-324, "5e-324"), (1e300, "1e+300"), (-0.0, "-0"), (0.1, "0.1"),
    (2.0**63, "9223372036854776000"),
])
def test_go_float(value: float, go: str) -> None:
    assert gojson.go_float(value) == go


def test_numbers_rewritten_outside_strings_only_and_idempotent() -> None:
    text = gojson.dumps({"s": 'x.0,1e+16 "1.0]"', "n": [1.0, 1e16, 1e-6, 2, 2.5], "m": 3.0})
    assert text == b'{"s":"x.0,1e+16 \\"1.0]\\"","n":[1,10000000000000000,0.000001,2,2.5],"m":3}'
    assert gojson.go_text(text) == text


def test_a_needle_inside_a_string_is_not_taken_for_a_number() -> None:
    """A uid or a name that holds ``e-6``, ``e+1`` or ``.0,`` is a string: the text is handed
    back as it is (the same object, not rewritten); a float elsewhere in the same text is
    still written as encode.go writes it, and one at the text's start or end too."""
    plain = b'{"uid":"bafc1ccc-16a4-402b-800e-6d08b0bc","n":"a1e+16b","s":"x.0,y","i":[1,2]}'
    assert gojson.go_floats(plain) is plain
    mixed = b'{"uid":"bafc1ccc-16a4-402b-800e-6d08b0bc","f":[1.5e-6,-2.0],"g":{"h":1e+16}}'
    assert gojson.go_floats(mixed) == (
        b'{"uid":"bafc1ccc-16a4-402b-800e-6d08b0bc","f":[0.0000015,-2],"g":{"h":10000000000000000}}')
    assert gojson.go_floats(b"1.0") == b"1"
    assert gojson.go_floats(b"[3.0]") == b"[3]"
    assert gojson.go_floats(b'"1.0"') == b'"1.0"'

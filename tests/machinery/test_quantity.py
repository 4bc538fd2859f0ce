"""resource.Quantity: ported from apimachinery's quantity_test.go tables."""

from __future__ import annotations

from typing import Any

import pytest

from setpoint.machinery.quantity import (
    BINARY_SI,
    DECIMAL_EXPONENT,
    DECIMAL_SI,
    Quantity,
    QuantityError,
    canonical,
)


@pytest.mark.parametrize(("text", "nanos", "fmt"), [
    ("0", 0, DECIMAL_SI), ("0Ki", 0, BINARY_SI), ("0m", 0, DECIMAL_SI),
    ("1", 10**9, DECIMAL_SI), ("1Ki", 1024 * 10**9, BINARY_SI),
    ("3Ei", 3 * 2**60 * 10**9, BINARY_SI), ("5n", 5, DECIMAL_SI), ("4u", 4000, DECIMAL_SI),
    ("50k", 50000 * 10**9, DECIMAL_SI), ("1E", 10**27, DECIMAL_SI),
    ("1E-3", 10**6, DECIMAL_EXPONENT), ("1e3", 10**12, DECIMAL_EXPONENT),
    ("100.035k", 100035 * 10**9, DECIMAL_SI), ("0.0005k", 5 * 10**8, DECIMAL_SI),
    ("1.3E+6", 13 * 10**14, DECIMAL_EXPONENT), ("3.001n", 4, DECIMAL_SI),
    ("1.1E-9", 2, DECIMAL_EXPONENT), ("0.0000000005", 1, DECIMAL_SI),
    ("0.00000012345", 124, DECIMAL_SI), ("9Ei", (2**63 - 1) * 10**9, BINARY_SI),
    ("100.035Ki", 102435840 * 10**6, BINARY_SI), ("0.5Mi", 524288 * 10**9, BINARY_SI),
    ("0.000000000001Ki", 2, DECIMAL_SI), (".001", 10**6, DECIMAL_SI), ("1.", 10**9, DECIMAL_SI),
    ("1.G", 10**18, DECIMAL_SI),
])
def test_parse(text: str, nanos: int, fmt: str) -> None:
    for sign, prefix in ((1, ""), (1, "+"), (-1, "-")):
        q = Quantity.parse(prefix + text)
        assert q.nanos == sign * nanos
        assert q.format == fmt


@pytest.mark.parametrize("text", [
    "", "1.1.M", "1+1.0M", "0.1mi", "0.1am", "aoeu", ".5i", "1i", "-3.01i", "-3.01e-", " 1", "1 ",
])
def test_invalid_quantities_are_rejected(text: str) -> None:
    with pytest.raises(QuantityError):
        Quantity.parse(text)


def test_error_messages_are_apimachinerys() -> None:
    with pytest.raises(QuantityError, match=r"quantities must match the regular expression"):
        Quantity.parse("abc")
    with pytest.raises(QuantityError, match="unable to parse quantity's suffix"):
        Quantity.parse("1KK")


@pytest.mark.parametrize(("text", "expected"), [
    ("1Ki", "1Ki"), ("1024Mi", "1Gi"), ("1000M", "1G"), (".001Ki", "1024m"),
    (".000001Ki", "1024u"), (".000000001Ki", "1024n"), (".000000000001Ki", "2n"),
    ("307200Ki", "300Mi"), ("1025024Mi", "1001Gi"), ("5000m", "5"), ("0.5", "500m"),
    ("0.001T", "1G"), ("1000u", "1m"), ("1.08", "1080m"), ("1080000000n", "1080m"),
    (".001e12", "1e9"), ("0.001e0", "1e-3"), ("1000e-12", "1e-9"), ("00", "0"),
    ("1.5Gi", "1536Mi"), ("1.5Ki", "1536"), ("1025", "1025"), ("1.5e3", "1500"),
    ("12e6", "12e6"), ("8Ei", "9223372036854775807"),
])
def test_canonical_form(text: str, expected: str) -> None:
    assert str(Quantity.parse(text)) == expected
    if Quantity.parse(text).nanos:
        assert str(Quantity.parse("-" + text)) == "-" + expected


def test_json_numbers_and_whitespace() -> None:
    assert canonical(1) == "1"
    assert canonical(" 1 ") == "1"
    assert canonical(-1) == "-1"
    assert canonical(1.5) == "1500m"


def test_milli_and_scaled_constructors() -> None:
    assert str(Quantity.from_milli(1)) == "1m"
    assert str(Quantity.from_milli(1234000)) == "1234"
    assert str(Quantity.from_milli(1024, BINARY_SI)) == "1024m"
    assert str(Quantity.from_milli(1000000, "invalid")) == "1e3"
    assert str(Quantity.from_int(1024, BINARY_SI)) == "1Ki"
    assert str(Quantity.from_int(1234000)) == "1234k"
    assert str(Quantity.from_scaled(1000, -9)) == "1u"


def test_values_round_away_from_zero() -> None:
    assert Quantity.parse("1.5").value() == 2
    assert Quantity.parse("-1.5").value() == -2
    assert Quantity.parse("1.0001m").milli_value() == 2
    assert Quantity.parse("1").scaled_value(-2) == 100


@pytest.mark.parametrize(("text", "scale", "expected"), [
    ("9.01", -3, "9010m"), ("9.01", -1, "9100m"), ("9.01", 0, "10"), ("9.01", 2, "100"),
    ("-9.01", -1, "-9100m"), ("-9.01", 0, "-10"),
])
def test_round_up(text: str, scale: int, expected: str) -> None:
    assert str(Quantity.parse(text).round_up(scale)) == expected


def test_arithmetic_and_comparison() -> None:
    zero = Quantity.parse("0")
    for text in ("100m", "1Gi"):
        value = Quantity.parse(text)
        assert str(value + zero) == text
        assert str(zero + value) == text
        assert str(zero - value) == str(-value)
    assert Quantity.parse("10000T") > Quantity.parse("100Gi")
    assert Quantity.parse("100m").cmp(Quantity.parse("50m")) == 1
    assert Quantity.parse("1") == Quantity.parse("1000m")
    assert str(Quantity.parse("10") - Quantity.parse("1Ki")) == "-1014"
    assert str(Quantity.parse("10") * 10) == "100"
    assert Quantity.parse("250m").as_float() == 0.25


def test_a_text_is_parsed_once_and_a_bad_one_every_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """A quantity's text is split once however often it is read (a pod's requests are read
    at its create, defaulting, QoS class and validation); one that does not parse raises at
    every reading, with apimachinery's message."""
    from setpoint.machinery import quantity

    calls: list[str] = []
    split = quantity._split

    def counted(text: str) -> Any:
        calls.append(text)
        return split(text)

    monkeypatch.setattr(quantity, "_split", counted)
    quantity._parse.cache_clear()
    assert [str(Quantity.parse("16Mi")) for _ in range(3)] == ["16Mi"] * 3
    assert Quantity.from_json("16Mi") == Quantity.parse("16Mi")
    assert calls == ["16Mi"]
    for _ in range(2):
        with pytest.raises(QuantityError, match="quantities must match the regular expression"):
            Quantity.parse("16 Mi")
    assert calls.count("16 Mi") == 2

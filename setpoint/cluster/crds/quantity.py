"""Just enough of ``resource.Quantity`` for the CEL quantity library."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

_SUFFIXES = {
    "": Decimal(1), "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"),
    "k": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9"), "T": Decimal("1e12"),
    "P": Decimal("1e15"), "E": Decimal("1e18"),
    "Ki": Decimal(2**10), "Mi": Decimal(2**20), "Gi": Decimal(2**30), "Ti": Decimal(2**40),
    "Pi": Decimal(2**50), "Ei": Decimal(2**60),
}
_QUANTITY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))((?:[eE][+-]?\d+)|[a-zA-Z]*)$")


class QuantityError(ValueError):
    """The text is not a quantity."""


class Quantity:
    """A decimal amount with the suffix family it was written in."""

    def __init__(self, value: Decimal, fmt: str) -> None:
        self.value = value
        self.format = fmt

    def __repr__(self) -> str:
        return f"Quantity({self.value}, {self.format})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and other.value == self.value

    def __hash__(self) -> int:
        return hash(self.value)

    def add(self, other: Quantity) -> Quantity:
        return Quantity(self.value + other.value, self.format)

    def negate(self) -> Quantity:
        return Quantity(-self.value, self.format)


def parse_quantity(text: str) -> Quantity:
    """Parse ``"500m"``, ``"1Gi"``, ``"1e3"``; raise QuantityError otherwise."""
    m = _QUANTITY.match(text.strip()) if text else None
    if m is None:
        raise QuantityError("quantities must match the regular expression "
                            "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
    number, suffix = m.groups()
    try:
        value = Decimal(number)
    except InvalidOperation as exc:
        raise QuantityError(str(exc)) from exc
    if suffix[:1] in ("e", "E") and len(suffix) > 1:
        return Quantity(value * Decimal(10) ** int(suffix[1:]), "DecimalExponent")
    if suffix not in _SUFFIXES:
        raise QuantityError("unable to parse quantity's suffix")
    fmt = "BinarySI" if suffix.endswith("i") else "DecimalSI"
    return Quantity(value * _SUFFIXES[suffix], fmt)

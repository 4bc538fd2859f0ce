"""``resource.Quantity``: parsing, canonical formatting, comparison and arithmetic.

A port of ``k8s.io/apimachinery/pkg/api/resource``. A quantity is a number with one of
three suffix styles (BinarySI ``Ki``/``Mi``..., DecimalSI ``m``/``k``/``M``..., or
DecimalExponent ``e3``); the server stores and answers its canonical form (``"1000m"`` is
``"1"``, ``"1536Mi"`` stays, ``"0.5Gi"`` is ``"512Mi"``). Values are kept exactly as an integer
count of nano-units, which is the finest precision Kubernetes keeps: anything finer is
rounded away from zero, so asking for a tiny amount still asks for something.
"""

from __future__ import annotations

import functools
import re
from typing import Any

DECIMAL_SI = "DecimalSI"
BINARY_SI = "BinarySI"
DECIMAL_EXPONENT = "DecimalExponent"

SPLIT_RE = r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
ERR_FORMAT_WRONG = f"quantities must match the regular expression '{SPLIT_RE}'"
ERR_NUMERIC = "unable to parse numeric part of quantity"
ERR_SUFFIX = "unable to parse quantity's suffix"

_NANO = 10**9
_MAX_INT64 = 2**63 - 1

_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12,
                     "P": 15, "E": 18}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_BY_EXPONENT = {v: k for k, v in _DECIMAL_SUFFIXES.items()}
_BINARY_BY_EXPONENT = {v: k for k, v in _BINARY_SUFFIXES.items()} | {0: ""}
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
_DIGITS = frozenset("0123456789")
_INT_RE = re.compile(r"[+-]?[0-9]+")


class QuantityError(ValueError):
    """A string that is not a quantity; ``str()`` is apimachinery's error text."""


def _div_away(n: int, d: int) -> int:
    """n / d rounded away from zero (d > 0)."""
    q, r = divmod(abs(n), d)
    if r:
        q += 1
    return q if n >= 0 else -q


@functools.total_ordering
class Quantity:
    """An immutable quantity; ``str()`` is its canonical serialized form."""

    __slots__ = ("_nanos", "format")

    def __init__(self, nanos: int = 0, format: str = DECIMAL_SI) -> None:
        self._nanos = nanos
        self.format = format

    # -- construction --------------------------------------------------------------------
    @classmethod
    def parse(cls, text: str) -> Quantity:
        """``resource.ParseQuantity``; raises :class:`QuantityError`."""
        return _parse(text)

    @classmethod
    def from_json(cls, value: Any) -> Quantity:
        """A quantity as JSON carries it: a string, or a bare number."""
        if isinstance(value, bool) or value is None:
            raise QuantityError(ERR_FORMAT_WRONG)
        if isinstance(value, int):
            return _parse(str(value))
        if isinstance(value, float):
            return _parse(repr(value).replace("e+", "e"))
        return _parse(str(value).strip())

    @classmethod
    def from_int(cls, value: int, format: str = DECIMAL_SI) -> Quantity:
        """``resource.NewQuantity``."""
        return cls(value * _NANO, format)

    @classmethod
    def from_milli(cls, milli: int, format: str = DECIMAL_SI) -> Quantity:
        """``resource.NewMilliQuantity``."""
        return cls(milli * 10**6, format)

    @classmethod
    def from_scaled(cls, value: int, scale: int, format: str = DECIMAL_SI) -> Quantity:
        """``resource.NewScaledQuantity``: value * 10^scale (rounded to nano-units)."""
        if scale >= -9:
            return cls(value * 10 ** (scale + 9), format)
        return cls(_div_away(value, 10 ** (-9 - scale)), format)

    # -- reading -------------------------------------------------------------------------
    @property
    def nanos(self) -> int:
        """The exact value in units of 10^-9."""
        return self._nanos

    def value(self) -> int:
        """The value rounded away from zero to an integer (``Quantity.Value``)."""
        return _div_away(self._nanos, _NANO)

    def milli_value(self) -> int:
        """The value in thousandths, rounded away from zero (``Quantity.MilliValue``)."""
        return _div_away(self._nanos, 10**6)

    def scaled_value(self, scale: int) -> int:
        """ceil(q / 10^scale), away from zero (``Quantity.ScaledValue``)."""
        if scale <= -9:
            # a non-negative exponent: int ** int is an int here, though not in general
            return self._nanos * int(10 ** (-9 - scale))
        return _div_away(self._nanos, 10 ** (scale + 9))

    def as_float(self) -> float:
        """An approximate float (``AsApproximateFloat64``)."""
        return self._nanos / _NANO

    def is_zero(self) -> bool:
        return self._nanos == 0

    def sign(self) -> int:
        return (self._nanos > 0) - (self._nanos < 0)

    def round_up(self, scale: int) -> Quantity:
        """The quantity rounded away from zero to a multiple of 10^scale (``RoundUp``)."""
        if scale <= -9:
            return self
        step = 10 ** (scale + 9)
        return Quantity(_div_away(self._nanos, step) * step, self.format)

    # -- arithmetic ----------------------------------------------------------------------
    def _combine(self, nanos: int, other: Quantity) -> Quantity:
        # A zero receiver takes the other operand's format, as Quantity.Add does.
        return Quantity(nanos, other.format if self._nanos == 0 else self.format)

    def __add__(self, other: Quantity) -> Quantity:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self._combine(self._nanos + other._nanos, other)

    def __sub__(self, other: Quantity) -> Quantity:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self._combine(self._nanos - other._nanos, other)

    def __neg__(self) -> Quantity:
        return Quantity(-self._nanos, self.format)

    def __mul__(self, factor: int) -> Quantity:
        if not isinstance(factor, int):
            return NotImplemented
        return Quantity(self._nanos * factor, self.format)

    __rmul__ = __mul__

    def cmp(self, other: Quantity) -> int:
        """-1, 0 or 1 (``Quantity.Cmp``)."""
        return (self._nanos > other._nanos) - (self._nanos < other._nanos)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self._nanos == other._nanos

    def __lt__(self, other: Quantity) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self._nanos < other._nanos

    def __hash__(self) -> int:
        return hash(self._nanos)

    def __bool__(self) -> bool:
        return self._nanos != 0

    # -- formatting ----------------------------------------------------------------------
    def __str__(self) -> str:
        return _canonical(self._nanos, self.format)

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r})"

    def to_json(self) -> str:
        return str(self)


def parse_quantity(text: str) -> Quantity:
    """``resource.ParseQuantity``; raises :class:`QuantityError`."""
    return _parse(text)


def try_from_json(value: Any) -> Quantity | None:
    """:meth:`Quantity.from_json`, or None for a value decoding refuses: validators only meet
    decoded quantities, so they skip what the decoder's own error already reports."""
    try:
        return Quantity.from_json(value)
    except (QuantityError, TypeError, ValueError):
        return None


def must_parse(text: str) -> Quantity:
    """``resource.MustParse``: for constants in code; raises ValueError."""
    return _parse(text)


def canonical(value: Any) -> str:
    """The canonical string of a quantity written as JSON (string or number)."""
    return str(Quantity.from_json(value))


# -- parsing -------------------------------------------------------------------------------

def _split(text: str) -> tuple[bool, str, str, str]:
    """(positive, numerator, denominator, suffix), as ``parseQuantityString`` splits."""
    positive, pos, end = True, 0, len(text)
    if text[:1] == "-":
        positive, pos = False, 1
    elif text[:1] == "+":
        pos = 1
    while pos < end and text[pos] == "0":
        pos += 1
    if pos >= end:
        return positive, "0", "", ""
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    num = text[start:pos] or "0"
    denom = ""
    if pos < end and text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        denom = text[start:pos]
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos < end:
        raise QuantityError(ERR_FORMAT_WRONG)
    return positive, num, denom, text[suffix_start:]


def _interpret(suffix: str) -> tuple[int, int, str]:
    """(base, exponent, format) of a suffix."""
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix], DECIMAL_SI
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix], BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE" and _INT_RE.fullmatch(suffix[1:]):
        exponent = int(suffix[1:])
        if -(2**63) <= exponent < 2**63:
            return 10, exponent, DECIMAL_EXPONENT
    raise QuantityError(ERR_SUFFIX)


@functools.lru_cache(maxsize=4096)
def _parse(text: str) -> Quantity:
    """(Remembered by text: a Quantity is immutable, a cluster has a few distinct quantities
    and a pod's are read at each create, defaulting, QoS class and validation; a text that
    does not parse raises each time, as lru_cache keeps no exceptions.)"""
    if not text:
        raise QuantityError(ERR_FORMAT_WRONG)
    if text == "0":
        return Quantity(0, DECIMAL_SI)
    positive, num, denom, suffix = _split(text)
    base, exponent, fmt = _interpret(suffix)
    # The exact value is digits * 10^-len(denom) * base^exponent; count it in nano-units.
    digits = int(num + denom)
    if base == 10:
        shift = exponent - len(denom) + 9
        if shift >= 0:
            nanos = digits * 10**shift
        else:
            nanos = _div_away(digits, 10**-shift)
    else:
        scaled = digits * (2**exponent) * _NANO
        nanos = _div_away(scaled, 10 ** len(denom))
        if nanos > _MAX_INT64 * _NANO:
            nanos = _MAX_INT64 * _NANO
    # Only the slow path (a fraction was written) demotes sub-unit binary values; "0Ki"
    # keeps its format.
    if fmt == BINARY_SI and denom and nanos < _NANO:
        fmt = DECIMAL_SI
    return Quantity(nanos if positive else -nanos, fmt)


# -- canonical form ------------------------------------------------------------------------

def _decimal_parts(nanos: int) -> tuple[int, int]:
    """(mantissa, exponent) with the exponent a multiple of 3 and as large as possible."""
    mantissa, exponent = nanos, -9
    while mantissa % 10 == 0:
        mantissa //= 10
        exponent += 1
    shift = exponent % 3
    return mantissa * 10**shift, exponent - shift


def _canonical(nanos: int, fmt: str) -> str:
    if nanos == 0:
        return "0"
    if fmt == BINARY_SI:
        if -1024 * _NANO < nanos < 1024 * _NANO or nanos % _NANO:
            fmt = DECIMAL_SI
        else:
            amount, power = abs(nanos) // _NANO, 0
            while amount % 1024 == 0:
                amount //= 1024
                power += 10
            suffix = _BINARY_BY_EXPONENT.get(power)
            if suffix is not None:
                return f"{'-' if nanos < 0 else ''}{amount}{suffix}"
            fmt = DECIMAL_SI
    mantissa, exponent = _decimal_parts(nanos)
    if fmt == DECIMAL_SI:
        suffix = _DECIMAL_BY_EXPONENT.get(exponent)
        if suffix is not None:
            return f"{mantissa}{suffix}"
    # DecimalExponent, and DecimalSI values beyond the SI table (above 999E).
    return f"{mantissa}e{exponent}" if exponent else str(mantissa)

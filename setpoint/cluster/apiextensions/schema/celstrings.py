"""cel-go's strings extension as Kubernetes 1.32 declares it: ``ext.Strings(ext.StringsVersion(2))``
(apiserver v0.32 pkg/cel/environment/base.go; cel-go v0.22.0 ext/strings.go and
ext/formatting.go). Version 2 has ``format`` and ``strings.quote`` (version 1) and the
list-checked ``join``; ``reverse`` is version 3 and so is not declared.

Positions count runes (Python ``str`` indexes), errors are returned as ``CELEvalError`` worded as
cel-go's (a raised ``ValueError`` would be worded by celpy as an overflow).
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Callable
from decimal import Decimal
from typing import Any, cast

from celpy import celtypes
from celpy.evaluation import CELEvalError

_DEFAULT_PRECISION = 6  # strings.go defaultPrecision
# Go's unicode.IsSpace, which strings.TrimSpace trims (Python's strip() also trims \x1c-\x1f)
_GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007" \
            "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"


def _s(v: Any) -> str:
    if not isinstance(v, str):
        raise TypeError("no such overload")
    return str(v)


def index_of(text: str, needle: str, offset: int = 0) -> Any:
    """strings.go indexOfOffset: a negative offset is an error, one past the end is -1."""
    if needle == "":
        return celtypes.IntType(offset)
    if offset < 0:
        return CELEvalError(f"index out of range: {offset}")
    if offset >= len(text):
        return celtypes.IntType(-1)
    return celtypes.IntType(text.find(needle, offset))


def last_index_of(text: str, needle: str, offset: int | None = None) -> Any:
    """strings.go lastIndexOf / lastIndexOfOffset."""
    if offset is None:
        if needle == "":
            return celtypes.IntType(len(text))
        offset = len(text) - 1
    if needle == "":
        return celtypes.IntType(offset)
    if offset < 0:
        return CELEvalError(f"index out of range: {offset}")
    if offset >= len(text):
        return celtypes.IntType(-1)
    return celtypes.IntType(text.rfind(needle, 0, offset + len(needle)))


def _replace(text: Any, old: Any, new: Any, n: Any = -1) -> Any:
    """Go strings.Replace: n < 0 replaces all; an empty ``old`` matches at every rune
    boundary, as Python's str.replace does too."""
    count = int(n)
    return celtypes.StringType(_s(text).replace(_s(old), _s(new), count if count >= 0 else -1))


def _split(text: Any, sep: Any, n: Any = -1) -> Any:
    """Go strings.SplitN: n == 0 gives no parts, n < 0 all; an empty separator splits
    after each rune (at most n - 1 times)."""
    t, s, count = _s(text), _s(sep), int(n)
    if count == 0:
        return celtypes.ListType([])
    if s == "":
        parts = list(t) if count < 0 or count >= len(t) else [*t[:count - 1], t[count - 1:]]
    else:
        parts = t.split(s, count - 1) if count > 0 else t.split(s)
    return celtypes.ListType([celtypes.StringType(p) for p in parts])


def _substring(text: Any, start: Any, end: Any = None) -> Any:
    t, b = _s(text), int(start)
    if end is None:
        if b < 0 or b > len(t):
            return CELEvalError(f"index out of range: {b}")
        return celtypes.StringType(t[b:])
    e = int(end)
    if b > e:
        return CELEvalError(f"invalid substring range. start: {b}, end: {e}")
    if b < 0 or b > len(t):
        return CELEvalError(f"index out of range: {b}")
    if e < 0 or e > len(t):
        return CELEvalError(f"index out of range: {e}")
    return celtypes.StringType(t[b:e])


def _char_at(text: Any, i: Any) -> Any:
    t, idx = _s(text), int(i)
    if idx < 0 or idx > len(t):
        return CELEvalError(f"index out of range: {idx}")
    return celtypes.StringType(t[idx:idx + 1])


def _ascii_case(upper: bool) -> Callable[[Any], Any]:
    # strings.go lowerASCII/upperASCII: only runes <= unicode.MaxASCII change case
    def call(text: Any) -> Any:
        return celtypes.StringType("".join(
            (c.upper() if upper else c.lower()) if c < "\x80" else c for c in _s(text)))
    return call


def _join(items: Any, sep: Any = "") -> Any:
    """strings.go joinValSeparator (version >= 2): each element must be a string."""
    parts = []
    for item in items:
        if not isinstance(item, str):
            return CELEvalError(f"join: invalid input: {item}")
        parts.append(str(item))
    return celtypes.StringType(_s(sep).join(parts))


_QUOTE_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t",
                  "\v": "\\v", "\\": "\\\\", '"': '\\"'}


def quote(text: Any) -> Any:
    """strings.go quote: CEL escape sequences written out, in double quotes."""
    return celtypes.StringType('"' + "".join(_QUOTE_ESCAPES.get(c, c) for c in _s(text)) + '"')


# -- format ------------------------------------------------------------------------------------

class _FormatError(Exception):
    pass


def _type_name(v: Any) -> str:
    """The CEL type name cel-go's format errors quote."""
    if v is None:
        return "null_type"
    for cls, name in ((celtypes.BoolType, "bool"), (celtypes.UintType, "uint"),
                      (celtypes.IntType, "int"), (celtypes.DoubleType, "double"),
                      (celtypes.StringType, "string"), (celtypes.BytesType, "bytes"),
                      (celtypes.TimestampType, "google.protobuf.Timestamp"),
                      (celtypes.DurationType, "google.protobuf.Duration"),
                      (celtypes.ListType, "list"), (celtypes.MapType, "map"),
                      (bool, "bool"), (int, "int"), (float, "double"), (str, "string"),
                      (bytes, "bytes"), (list, "list"), (dict, "map")):
        if isinstance(v, cls):
            return name
    return type(v).__name__


def go_double_string(d: float) -> str:
    """CEL ``string(double)``: cel-go common/types/double.go, fmt.Sprintf("%g", d)."""
    if math.isnan(d):
        return "NaN"
    if math.isinf(d):
        return "+Inf" if d > 0 else "-Inf"
    if d == 0:
        return "-0" if math.copysign(1, d) < 0 else "0"
    sign, digits, exp = Decimal(repr(d)).normalize().as_tuple()
    ds = "".join(map(str, digits))
    x = len(ds) + int(exp) - 1  # the decimal exponent of the first digit
    neg = "-" if sign else ""
    if x < -4 or x >= 6:  # Go %g, shortest digits: strconv uses eprec 6 for the decision
        mant = ds[0] + ("." + ds[1:] if len(ds) > 1 else "")
        return f"{neg}{mant}e{'-' if x < 0 else '+'}{abs(x):02d}"
    if x < 0:
        return f"{neg}0.{'0' * (-x - 1)}{ds}"
    if x + 1 >= len(ds):
        return neg + ds + "0" * (x + 1 - len(ds))
    return f"{neg}{ds[:x + 1]}.{ds[x + 1:]}"


def _plain_string(v: Any) -> str:
    """FormatString's scalar case: the value's CEL ``string()`` conversion."""
    if isinstance(v, bool | celtypes.BoolType):
        return "true" if v else "false"
    if isinstance(v, float):
        return go_double_string(float(v))
    if isinstance(v, int):
        return str(int(v))
    if isinstance(v, bytes):
        return bytes(v).decode("utf-8", "replace")
    if isinstance(v, datetime.datetime | datetime.timedelta):
        return str(celtypes.StringType(cast(Any, v)))  # celpy writes them as cel-go does
    return str(v)


def _quoted(v: Any, text: str) -> str:
    """formatting.go quoteForCEL: Go's %q for strings, b%q for bytes."""
    if isinstance(v, str):
        return _go_quote(text)
    if isinstance(v, bytes):
        return "b" + _go_quote(text)
    if isinstance(v, float) and (math.isinf(v) or math.isnan(v)):
        return _go_quote(text)
    return text


def _go_quote(text: str) -> str:
    out = []
    for c in text:
        if c in _QUOTE_ESCAPES:
            out.append(_QUOTE_ESCAPES[c])
        elif c.isprintable():
            out.append(c)
        elif ord(c) < 0x10000:
            out.append(f"\\x{ord(c):02x}" if ord(c) < 0x80 else f"\\u{ord(c):04x}")
        else:
            out.append(f"\\U{ord(c):08x}")
    return '"' + "".join(out) + '"'


def _member(v: Any) -> str:
    """formatting.go clauseForType: how list elements and map values are written."""
    if isinstance(v, float):
        return _quoted(v, f"{float(v):.{_DEFAULT_PRECISION}f}")
    if isinstance(v, celtypes.TimestampType | datetime.datetime):
        return f'timestamp("{_plain_string(v)}")'
    if isinstance(v, celtypes.DurationType | datetime.timedelta):
        return f'duration("{_plain_string(v)}")'
    return _quoted(v, format_string(v))


def format_string(v: Any) -> str:
    """formatting.go FormatString, the ``%s`` clause."""
    if v is None:
        return "null"
    if isinstance(v, list):
        return "[" + ", ".join(_member(m) for m in v) + "]"
    if isinstance(v, dict):
        pairs = []
        for key, value in v.items():
            if not isinstance(key, str | bool | int):
                raise _FormatError("no formatting function for map key of type "
                                   + _type_name(key))
            pairs.append((_quoted(key, _plain_string(key)), _member(value)))
        return "{" + ", ".join(f"{k}:{val}" for k, val in sorted(pairs)) + "}"
    if isinstance(v, bool | int | float | str | bytes | datetime.datetime
                  | datetime.timedelta):
        return _plain_string(v)
    raise _FormatError("string clause can only be used on strings, bools, bytes, ints, "
                       "doubles, maps, lists, types, durations, and timestamps, was given "
                       + _type_name(v))


_CLAUSE_KINDS = {
    "s": ("list", "map", "int", "uint", "double", "bool", "string", "timestamp", "bytes",
          "duration", "type", "null"),
    "d": ("int", "uint"), "o": ("int", "uint"), "b": ("int", "uint", "bool"),
    "f": ("double", "string"), "e": ("double", "string"),
    "x": ("int", "uint", "string", "bytes"), "X": ("int", "uint", "string", "bytes"),
}
_CLAUSE_ERRORS = {
    "s": "string clause can only be used on strings, bools, bytes, ints, doubles, maps, "
         "lists, types, durations, and timestamps",
    "d": "decimal clause can only be used on integers", "o": "octal clause can only be used on "
    "integers", "b": "only integers and bools can be formatted as binary",
    "f": "fixed-point clause can only be used on doubles",
    "e": "scientific clause can only be used on doubles",
    "x": "only integers, byte buffers, and strings can be formatted as hex",
}

def _integer(v: Any, message: str) -> int:
    if isinstance(v, bool | celtypes.BoolType) or not isinstance(v, int):
        raise _FormatError(f"{message}, was given {_type_name(v)}")
    return int(v)


_INF_NAN = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def _double(v: Any, clause: str) -> float | None:
    """The double a %f/%e clause formats; None for NaN and infinities, which x/text prints
    as NaN and ∞."""
    if isinstance(v, str) and str(v) in _INF_NAN:
        v = _INF_NAN[str(v)]
    elif not isinstance(v, float):
        raise _FormatError(f"{clause} clause can only be used on doubles, was given "
                           + _type_name(v))
    return float(v)


def _non_finite(d: float) -> str | None:
    if math.isnan(d):
        return "NaN"
    if math.isinf(d):
        return "∞" if d > 0 else "-∞"
    return None


def _fixed(v: Any, precision: int) -> str:
    """%f through x/text/message with the en_US locale: digits grouped by thousands."""
    d = _double(v, "fixed-point")
    assert d is not None
    return _non_finite(d) or f"{d:,.{precision}f}"


def _scientific(v: Any, precision: int) -> str:
    """%e through x/text/message, en_US: ``1.052033 \u00d7 10⁰³`` (narrow no-break spaces)."""
    d = _double(v, "scientific")
    assert d is not None
    special = _non_finite(d)
    if special is not None:
        return special
    mantissa, _, exp = f"{d:.{precision}e}".partition("e")
    e = int(exp)
    return f"{mantissa}\u202f\u00d7\u202f10" + f"{'-' if e < 0 else ''}{abs(e):02d}".translate(
        _SUPERSCRIPT)


def _binary(v: Any) -> str:
    if isinstance(v, bool | celtypes.BoolType):
        return "1" if v else "0"
    n = _integer(v, _CLAUSE_ERRORS["b"])
    return format(n, "b")


def _hex(v: Any, upper: bool) -> str:
    if isinstance(v, str | bytes):
        data = v.encode() if isinstance(v, str) else bytes(v)
        text = data.hex()
    else:
        text = format(_integer(v, _CLAUSE_ERRORS["x"]), "x")
    return text.upper() if upper else text


def _parse_clause(fmt: str, i: int) -> tuple[int, str, int | None]:
    """parseFormattingClause at ``i`` (after the ``%``): (chars read, verb, precision)."""
    j, precision = i, None
    if fmt[j] == ".":
        j += 1
        start = j
        while j < len(fmt) and fmt[j].isascii() and fmt[j].isdigit():
            j += 1
        if j >= len(fmt):
            raise _FormatError("could not parse formatting clause: error while parsing "
                               "precision: could not find end of precision specifier")
        if j == start:
            raise _FormatError('could not parse formatting clause: error while parsing '
                               'precision: error while converting precision to integer: '
                               'strconv.Atoi: parsing "": invalid syntax')
        precision = int(fmt[start:j])
    if fmt[j] not in _CLAUSE_KINDS:
        raise _FormatError("could not parse formatting clause: unrecognized formatting "
                           f'clause "{fmt[j]}"')
    return j + 1 - i, fmt[j], precision


def _clause(fmt: str, i: int, arg: Any) -> tuple[int, str]:
    """parseAndFormatClause: the clause after ``%`` at ``i``; (chars read, text)."""
    read, verb, precision = _parse_clause(fmt, i)
    p = _DEFAULT_PRECISION if precision is None else precision
    clauses: dict[str, Callable[[], str]] = {
        "s": lambda: format_string(arg),
        "d": lambda: str(_integer(arg, _CLAUSE_ERRORS["d"])),
        "f": lambda: _fixed(arg, p),
        "e": lambda: _scientific(arg, p),
        "b": lambda: _binary(arg),
        "x": lambda: _hex(arg, False),
        "X": lambda: _hex(arg, True),
        "o": lambda: format(_integer(arg, _CLAUSE_ERRORS["o"]), "o"),
    }
    try:
        return read, clauses[verb]()
    except _FormatError as exc:
        raise _FormatError(f"error during formatting: {exc}") from exc


def string_format(fmt: Any, args: Any) -> Any:
    """``'...'.format([args])``: formatting.go parseFormatString."""
    text = _s(fmt)
    if not isinstance(args, list):
        raise TypeError("no such overload")
    out: list[str] = []
    i = arg_index = 0
    try:
        while i < len(text):
            if text[i] != "%":
                out.append(text[i])
                i += 1
                continue
            if i + 1 < len(text) and text[i + 1] == "%":
                out.append("%")
                i += 2
                continue
            if arg_index >= len(args):
                raise _FormatError(f"index {arg_index} out of range")
            if i + 1 >= len(text):
                raise _FormatError("unexpected end of string")
            read, value = _clause(text, i + 1, args[arg_index])
            out.append(value)
            i += 1 + read
            arg_index += 1
    except _FormatError as exc:
        return CELEvalError(str(exc))
    return celtypes.StringType("".join(out))


def _offset_call(fn: Callable[..., Any]) -> Callable[..., Any]:
    def call(target: Any, needle: Any, *offset: Any) -> Any:
        return fn(_s(target), _s(needle), *(int(o) for o in offset))
    return call


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "charAt": _char_at,
    "lowerAscii": _ascii_case(False),
    "upperAscii": _ascii_case(True),
    "replace": _replace,
    "split": _split,
    "substring": _substring,
    "trim": lambda t: celtypes.StringType(_s(t).strip(_GO_SPACE)),
    "join": _join,
    "format": string_format,
    "strings.quote": quote,
}
STRING_INDEX = {"indexOf": _offset_call(index_of), "lastIndexOf": _offset_call(last_index_of)}


# -- the format validator (formatting.go stringFormatValidator) --------------------------------
# A literal format string with a list literal of arguments is checked when the rule compiles:
# each clause against its argument's static type (dyn passes), the count both ways.

_STATIC_NAMES = {"null": "null_type", "timestamp": "google.protobuf.Timestamp",
                 "duration": "google.protobuf.Duration", "ip": "net.IP", "cidr": "net.CIDR",
                 "url": "kubernetes.URL", "quantity": "kubernetes.Quantity",
                 "optional": "optional_type", "format": "kubernetes.NamedFormat"}


def check_format(fmt: str, kinds: list[str]) -> tuple[int | None, str] | None:
    """The validator's complaint about ``fmt.format([args of kinds])``: (the argument it
    is about, or None for the call; the message), or None when the call checks."""
    i = arg_index = 0
    while i < len(fmt):
        if fmt[i] != "%":
            i += 1
            continue
        if i + 1 < len(fmt) and fmt[i + 1] == "%":
            i += 2
            continue
        if i + 1 >= len(fmt):
            return None, "unexpected end of string"
        if arg_index >= len(kinds):
            return None, f"index {arg_index} out of range"
        try:
            read, verb, _ = _parse_clause(fmt, i + 1)
        except _FormatError as exc:
            return None, str(exc)
        kind = kinds[arg_index]
        if kind != "dyn" and kind not in _CLAUSE_KINDS[verb]:
            return arg_index, (f"error during formatting: {_CLAUSE_ERRORS[verb.lower()]}, "
                               f"was given {_STATIC_NAMES.get(kind, kind)}")
        i += 1 + read
        arg_index += 1
    if len(kinds) > arg_index:
        return None, ("too many arguments supplied to string.format (expected "
                      f"{arg_index}, got {len(kinds)})")
    return None

"""JSON written as Go's ``encoding/json`` writes it: orjson's text, HTML-escaped.

kube-apiserver encodes every JSON answer with encoding/json (apimachinery's
``runtime/serializer/json``: ``json.NewEncoder(w).Encode``, ``json.Marshal``), and custom
resources reach etcd through the same encoder. Its ``encodeState.string``
(encoding/json/encode.go ``appendString``, ``escapeHTML`` on by default) writes ``<``, ``>``
and ``&`` as ``\\u003c``, ``\\u003e``, ``\\u0026`` (as ``HTMLEscape`` does) and U+2028,
U+2029 as ``\\u2028``, ``\\u2029``; orjson writes them as they are. Everything else orjson
already writes as Go does: ``\\b \\f \\n \\r \\t``, other control characters as
``\\u00XX`` in lowercase hex, DEL and other text raw.

The five can only occur inside JSON strings (never in the syntax between them), so a
byte-level replacement of orjson's output is exact, and an escaped text has none left
(escaping twice changes nothing). A text holding none of them, the usual case, is handed
back as it is after four ``memchr`` scans.

Numbers: encode.go ``floatEncoder.encode`` writes a float64 with strconv's shortest digits in
``'f'`` format when 1e-6 <= |f| < 1e21 and in ``'e'`` format otherwise, its exponent
cleaned of a leading zero (``1e-07`` as ``1e-7``, ``1e+21``); orjson writes ``1.0``,
``1e+16`` and ``1e-6`` where Go writes ``1``, ``10000000000000000`` and ``0.000001``.
Only such a text holds ``e-6``, ``e+1``, ``e+20`` or ``.0`` before ``,``, ``}``, ``]`` or its
end; a text without them (substring scans again) is handed back as it is, one with them has
its numbers (outside strings) rewritten.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

import orjson

_LS, _PS = "\u2028".encode(), "\u2029".encode()
_ESCAPES = ((b"<", b"\\u003c"), (b">", b"\\u003e"), (b"&", b"\\u0026"),
            (_LS, b"\\u2028"), (_PS, b"\\u2029"))


def html_escaped(text: bytes) -> bytes:
    """``text`` (JSON) with Go's HTML and line-separator escapes."""
    # single-byte searches (memchr) first: a few hundred nanoseconds for an object that
    # holds none, where one regular-expression scan would take longer than orjson's dump;
    # then ``bytes.replace`` (memchr again) rather than a regular expression's substitution
    if b"<" not in text and b">" not in text and b"&" not in text and (
            b"\xe2" not in text or (_LS not in text and _PS not in text)):
        return text
    for raw, escaped in _ESCAPES:
        text = text.replace(raw, escaped)
    return text


# a JSON string (skipped whole, so that its text is never taken for a number) or a number
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?')


def go_float(value: float) -> str:
    """encode.go ``floatEncoder.encode`` for a float64: the text Go writes."""
    magnitude = abs(value)
    # Python's repr has the same shortest round-trip digits as strconv's precision -1
    if magnitude != 0 and (magnitude < 1e-6 or magnitude >= 1e21):
        text = repr(value)  # 'e' format, at least two exponent digits, as strconv's
        if text[-4:-1] == "e-0":  # clean up e-09 to e-9
            text = text[:-2] + text[-1]
        return text
    return format(Decimal(repr(value)).normalize(), "f")


def _go_number(match: re.Match[bytes]) -> bytes:
    token = match.group()
    if token[0] == 34 or (b"." not in token and b"e" not in token and b"E" not in token):
        return token  # a string, or an integer (Go's int64 is written as it is)
    return go_float(float(token)).encode()


# what may come before a number in orjson's compact text, and the characters of a number
_BEFORE_NUMBER = frozenset(b":,[")
_NUMBER = frozenset(b"0123456789.-")
_DIGITS = frozenset(b"0123456789")
_AFTER_NUMBER = frozenset(b",}]")


def _is_number_at(text: bytes, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` (a found ``e-6``, ``e+1``, ``.0`` ...) may be in a number:
    the characters before it are a number's, from a ``:``, ``,``, ``[`` or the text's
    start, and the digits after it end at a ``,``, ``}``, ``]`` or the text's end. A uid or
    name holding ``e-6`` (``...800e-6d08...``) is not, and does not cost the regular
    expression's walk over every string of the object; a string that looks like one just
    takes that walk, which leaves strings as they are."""
    while start > 0 and text[start - 1] in _NUMBER:
        start -= 1
    if start > 0 and text[start - 1] not in _BEFORE_NUMBER:
        return False
    n = len(text)
    while end < n and text[end] in _DIGITS:
        end += 1
    return end == n or text[end] in _AFTER_NUMBER


def _holds(text: bytes, needle: bytes) -> bool:
    """Whether ``needle`` is in ``text`` at a place a number may be (:func:`_is_number_at`)."""
    at = text.find(needle)
    while at >= 0:
        if _is_number_at(text, at, at + len(needle)):
            return True
        at = text.find(needle, at + 1)
    return False


def go_floats(text: bytes) -> bytes:
    """``text`` (JSON) with its floats written as Go writes a float64."""
    # cheapest first: ``+`` and ``.`` are one memchr each (a built-in object often holds
    # neither), ``e-6`` and ``.0`` a substring scan each; a needle found is then checked
    # where it stands (a uid holds ``e-6`` about once in sixty objects)
    if not ((b"e-6" in text and _holds(text, b"e-6"))
            or (b"+" in text and ((b"e+1" in text and _holds(text, b"e+1"))
                                  or (b"e+20" in text and _holds(text, b"e+20"))))
            or (b"." in text and b".0" in text
                and (b".0," in text or b".0}" in text or b".0]" in text
                     or text.endswith(b".0")) and _holds(text, b".0"))):
        return text
    return _TOKEN.sub(_go_number, text)


def go_text(text: bytes) -> bytes:
    """orjson's ``text`` as Go's ``json.Marshal`` writes the same value."""
    return html_escaped(go_floats(text))


def dumps(obj: Any, option: int | None = None) -> bytes:
    """``obj`` as ``json.Marshal`` writes it (orjson's ``option`` as given)."""
    # (orjson is slower with an explicit ``option=None`` than with none)
    return go_text(orjson.dumps(obj) if option is None else orjson.dumps(obj, option=option))


# a JSON string (whose punctuation is not the syntax's), a structural character, or a run of
# anything else (a number or a literal); whitespace between them matches nothing and is dropped
_INDENT_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[{}\[\],:]|[^"{}\[\],:\s]+')
_NEWLINES = [b"\n" + b"  " * depth for depth in range(64)]


def _newline(depth: int) -> bytes:
    return _NEWLINES[depth] if depth < len(_NEWLINES) else b"\n" + b"  " * depth


def indented(text: bytes) -> bytes:
    """``text`` (one JSON value) as ``json.MarshalIndent(v, "", "  ")`` writes the same
    value: encoding/json indent.go ``appendIndent`` over ``Marshal``'s text, each element on
    a line of its own two spaces deeper, ``": "`` after a key, an empty object or array
    kept as ``{}`` or ``[]``, and no newline at the end (``Encoder.Encode``'s is
    whitespace, which ``appendIndent`` drops like any other outside a string)."""
    parts: list[bytes] = []
    add = parts.append
    depth = 0
    opened = False  # appendIndent's needIndent: the indent waits for the next token
    for token in _INDENT_TOKEN.findall(text):
        closing = token == b"}" or token == b"]"
        if opened and not closing:
            opened = False
            depth += 1
            add(_newline(depth))
        if token == b"{" or token == b"[":
            opened = True
            add(token)
        elif token == b",":
            add(b",")
            add(_newline(depth))
        elif token == b":":
            add(b": ")
        elif closing:
            if opened:
                opened = False  # an empty object or array stays on its line
            else:
                depth -= 1
                add(_newline(depth))
            add(token)
        else:
            add(token)
    return b"".join(parts)

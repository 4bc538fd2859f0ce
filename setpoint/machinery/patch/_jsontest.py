"""The ``test`` operation of a JSON patch as evanphx/json-patch v4 (the kube-apiserver's) makes it.

``lazyNode.equal`` (patch.go of gopkg.in/evanphx/json-patch.v4 v4.12.0) compares two JSON
texts, not two decoded values: objects and arrays member by member, but every scalar by the
bytes of its text (``bytes.Equal`` of the compacted raw messages). One side is the live
object as the apiserver's encoder wrote it (Go's ``encoding/json``: ``<``, ``>`` and ``&``
escaped as ``\\u003c``..., non-ASCII left as UTF-8, ``1`` for an integral number); the other
is the operation's ``value`` exactly as the client sent it. So ``true`` is not ``1``, ``1.0``
is not ``1``, and ``"\\u00e9"`` is not ``"é"``, where a decoded comparison would call them
equal. A ``null`` value is Go's nil message: it matches only a missing or null member.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

_DECODER = json.JSONDecoder()
_WHITESPACE = " \t\n\r"
_HEX = "0123456789abcdef"
_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n",
                  "\r": "\\r", "\t": "\\t"}


class Text(str):
    """A scalar's JSON text as the client wrote it (``"\\u00e9"``, ``1.0``, ``null``)."""


# an operation's value as read from the body: objects and arrays of the texts of scalars
Raw = dict[str, "Raw"] | list["Raw"] | Text
NULL = Text("null")


def raw_values(raw: bytes | None) -> list[Raw | None] | None:
    """The value of each operation in a JSON patch body as sent, in order (None for an
    operation without one, or that is no object); None when the body cannot be read so."""
    if raw is None:
        return None
    try:
        return _operations(raw.decode("utf-8"))
    except (ValueError, IndexError, RecursionError):
        return None


def read_raw(text: str) -> Raw:
    """One JSON text (as JSON would write a value the body's text is not at hand for)."""
    return _node(text, _skip(text, 0))[0]


def test_passes(found: bool, value: Any, raw: Raw | None) -> bool:
    """Whether a ``test`` passes: ``found``/``value`` is the live member (a missing object
    member is not found), ``raw`` the operation's value as sent (None when absent)."""
    if not found or value is None:
        # patch.go test: ``val == nil`` passes when the operation's value is nil too
        return raw is None or raw == NULL
    if raw is None or raw == NULL:
        return False
    return _equal(value, raw)


def _equal(value: Any, raw: Raw) -> bool:
    """``lazyNode.equal`` of the live ``value`` (never None) with the value sent."""
    if isinstance(value, dict):
        if not isinstance(raw, dict) or len(raw) != len(value):
            return False
        for key, item in value.items():
            if key not in raw:
                return False
            other = raw[key]
            if (item is None) != (other == NULL):
                return False
            if item is not None and not _equal(item, other):
                return False
        return True
    if isinstance(value, list):
        if not isinstance(raw, list) or len(raw) != len(value):
            return False
        return all((item is None and other == NULL)
                   or (item is not None and other != NULL and _equal(item, other))
                   for item, other in zip(value, raw, strict=True))
    return isinstance(raw, Text) and go_json(value) == raw


def go_json(value: Any) -> str:
    """A scalar as Go's ``encoding/json`` encodes it (HTML characters escaped)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _go_float(value)
    return _go_string(str(value))


def _go_string(s: str) -> str:
    out = ['"']
    for ch in s:
        if ch in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[ch])
        elif ch < " " or ch in "<>&":
            out.append("\\u00" + _HEX[ord(ch) >> 4] + _HEX[ord(ch) & 0xF])
        elif ch in "\u2028\u2029":
            out.append(f"\\u{ord(ch):04x}")
        elif 0xD800 <= ord(ch) <= 0xDFFF:
            out.append("\ufffd")  # not valid UTF-8: Go writes the replacement character
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _go_float(f: float) -> str:
    """encoding/json's floatEncoder: the shortest digits, exponent form below 1e-6 and from
    1e21 on, its exponent without a leading zero."""
    if f == 0:
        return "-0" if str(f).startswith("-") else "0"
    exact = Decimal(repr(f)).normalize()
    if 1e-6 <= abs(f) < 1e21:
        return format(exact, "f")
    sign, digits, exponent = exact.as_tuple()
    text = "".join(map(str, digits))
    exp = len(text) - 1 + int(exponent)
    mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
    # strconv's 'e' writes two exponent digits at least; encoding/json cuts "e-07" to "e-7"
    power = f"-{-exp}" if exp < 0 else f"+{exp:02d}"
    return f"{'-' if sign else ''}{mantissa}e{power}"


# -- reading the body: each scalar keeps its text, each container is read once ----------------

def _skip(s: str, i: int) -> int:
    while i < len(s) and s[i] in _WHITESPACE:
        i += 1
    return i


def _operations(s: str) -> list[Raw | None] | None:
    i = _skip(s, 0)
    if s[i] != "[":
        return None
    values: list[Raw | None] = []
    for element in _node(s, i)[0]:
        values.append(element.get("value") if isinstance(element, dict) else None)
    return values


def _node(s: str, i: int) -> tuple[Raw, int]:
    """The value at ``s[i]`` and the index after it; an object's repeated key keeps its last
    value, as Go's map decoding does."""
    if s[i] == "{":
        members: dict[str, Raw] = {}
        i = _skip(s, i + 1)
        if s[i] == "}":
            return members, i + 1
        while True:
            key, i = _DECODER.raw_decode(s, i)
            if not isinstance(key, str):
                raise ValueError(key)
            i = _skip(s, i)
            if s[i] != ":":
                raise ValueError(s[i])
            members[key], i = _node(s, _skip(s, i + 1))
            i = _skip(s, i)
            if s[i] == "}":
                return members, i + 1
            if s[i] != ",":
                raise ValueError(s[i])
            i = _skip(s, i + 1)
    if s[i] == "[":
        elements: list[Raw] = []
        i = _skip(s, i + 1)
        if s[i] == "]":
            return elements, i + 1
        while True:
            element, i = _node(s, i)
            elements.append(element)
            i = _skip(s, i)
            if s[i] == "]":
                return elements, i + 1
            if s[i] != ",":
                raise ValueError(s[i])
            i = _skip(s, i + 1)
    end = int(_DECODER.raw_decode(s, i)[1])
    return Text(s[i:end]), end

"""The syntax error Go's encoding/json reports for a body that is not JSON.

kube-apiserver decodes bodies with encoding/json or its sigs.k8s.io/json fork, which first run
the whole text through the scanner of encoding/json/scanner.go (``checkValid``); its first
error is the message clients see ("invalid character 'x' after object key", "unexpected end
of JSON input"). This is that scanner's state machine, byte for byte, run only on a body
another parser has already refused.
"""

from __future__ import annotations

from collections.abc import Callable

_SPACE = b" \t\r\n"
_DIGITS = b"0123456789"
_HEX = b"0123456789abcdefABCDEF"
_OBJECT_KEY, _OBJECT_VALUE, _ARRAY_VALUE = range(3)


class _Syntax(Exception):
    pass


def _quote_char(c: int) -> str:
    """encoding/json quoteChar: strconv.Quote of the byte taken as a rune, in single quotes."""
    if c == 0x27:
        return "'\\''"
    if c == 0x22:
        return "'\"'"
    ch = chr(c)
    if ch.isprintable():
        return f"'{ch}'"
    named = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t",
             "\v": "\\v"}
    if ch in named:
        return f"'{named[ch]}'"
    return f"'\\x{c:02x}'" if c < 0x80 else f"'\\u{c:04x}'"


class _Scanner:
    def __init__(self) -> None:
        self.stack: list[int] = []
        self.step: Callable[[int], None] = self.begin_value
        self.end_top = False

    def error(self, c: int, context: str) -> None:
        raise _Syntax(f"invalid character {_quote_char(c)} {context}")

    # -- values ------------------------------------------------------------------------
    def begin_value_or_empty(self, c: int) -> None:
        if c in _SPACE:
            return
        if c == 0x5D:  # ]
            self.end_value(c)
            return
        self.begin_value(c)

    def begin_value(self, c: int) -> None:
        if c in _SPACE:
            return
        simple: dict[int, Callable[[int], None]] = {
            0x22: self.in_string, 0x2D: self.neg, 0x30: self.zero,
            0x74: self.literal("true", 1), 0x66: self.literal("false", 1),
            0x6E: self.literal("null", 1)}
        if c == 0x7B:  # {
            self.step = self.begin_string_or_empty
            self.stack.append(_OBJECT_KEY)
        elif c == 0x5B:  # [
            self.step = self.begin_value_or_empty
            self.stack.append(_ARRAY_VALUE)
        elif c in simple:
            self.step = simple[c]
        elif 0x31 <= c <= 0x39:
            self.step = self.one
        else:
            self.error(c, "looking for beginning of value")

    def begin_string_or_empty(self, c: int) -> None:
        if c in _SPACE:
            return
        if c == 0x7D:  # }
            self.stack[-1] = _OBJECT_VALUE
            self.end_value(c)
            return
        self.begin_string(c)

    def begin_string(self, c: int) -> None:
        if c in _SPACE:
            return
        if c != 0x22:
            self.error(c, "looking for beginning of object key string")
        self.step = self.in_string

    def end_value(self, c: int) -> None:
        if not self.stack:
            self.step = self.end_top_value
            self.end_top = True
            self.end_top_value(c)
            return
        if c in _SPACE:
            self.step = self.end_value
            return
        state = self.stack[-1]
        if state == _OBJECT_KEY:
            if c != 0x3A:
                self.error(c, "after object key")
            self.stack[-1] = _OBJECT_VALUE
            self.step = self.begin_value
        elif state == _OBJECT_VALUE:
            if c == 0x2C:
                self.stack[-1] = _OBJECT_KEY
                self.step = self.begin_string
            elif c == 0x7D:
                self.pop()
            else:
                self.error(c, "after object key:value pair")
        elif c == 0x2C:
            self.step = self.begin_value
        elif c == 0x5D:
            self.pop()
        else:
            self.error(c, "after array element")

    def pop(self) -> None:
        self.stack.pop()
        if self.stack:
            self.step = self.end_value
        else:
            self.step = self.end_top_value
            self.end_top = True

    def end_top_value(self, c: int) -> None:
        if c not in _SPACE:
            self.error(c, "after top-level value")

    # -- strings -----------------------------------------------------------------------
    def in_string(self, c: int) -> None:
        if c == 0x22:
            self.step = self.end_value
        elif c == 0x5C:
            self.step = self.in_string_escape
        elif c < 0x20:
            self.error(c, "in string literal")

    def in_string_escape(self, c: int) -> None:
        if c in b'bfnrt\\/"':
            self.step = self.in_string
        elif c == 0x75:
            self.step = self.unicode_escape(4)
        else:
            self.error(c, "in string escape code")

    def unicode_escape(self, left: int) -> Callable[[int], None]:
        def step(c: int) -> None:
            if c not in _HEX:
                self.error(c, "in \\u hexadecimal character escape")
            self.step = self.in_string if left == 1 else self.unicode_escape(left - 1)
        return step

    # -- numbers and literals ------------------------------------------------------------
    def neg(self, c: int) -> None:
        if c == 0x30:
            self.step = self.zero
        elif 0x31 <= c <= 0x39:
            self.step = self.one
        else:
            self.error(c, "in numeric literal")

    def one(self, c: int) -> None:
        if c in _DIGITS:
            return
        self.zero(c)

    def zero(self, c: int) -> None:
        if c == 0x2E:
            self.step = self.dot
        elif c in b"eE":
            self.step = self.exponent
        else:
            self.end_value(c)

    def dot(self, c: int) -> None:
        if c not in _DIGITS:
            self.error(c, "after decimal point in numeric literal")
        self.step = self.dot_digits

    def dot_digits(self, c: int) -> None:
        if c in _DIGITS:
            return
        if c in b"eE":
            self.step = self.exponent
        else:
            self.end_value(c)

    def exponent(self, c: int) -> None:
        if c in b"+-":
            self.step = self.exponent_sign
            return
        self.exponent_sign(c)

    def exponent_sign(self, c: int) -> None:
        if c not in _DIGITS:
            self.error(c, "in exponent of numeric literal")
        self.step = self.exponent_digits

    def exponent_digits(self, c: int) -> None:
        if c not in _DIGITS:
            self.end_value(c)

    def literal(self, word: str, at: int) -> Callable[[int], None]:
        def step(c: int) -> None:
            if c != ord(word[at]):
                self.error(c, f"in literal {word} (expecting '{word[at]}')")
            self.step = self.end_value if at == len(word) - 1 else self.literal(word, at + 1)
        return step


def go_syntax_error(raw: bytes) -> str | None:
    """encoding/json's ``checkValid`` message for ``raw``, or None when it is valid JSON."""
    scanner = _Scanner()
    try:
        for c in raw:
            scanner.step(c)
        if not scanner.end_top:
            scanner.step(0x20)  # eof(): a number ends at the input's end
        if not scanner.end_top:
            return "unexpected end of JSON input"
    except _Syntax as exc:
        return str(exc)
    return None

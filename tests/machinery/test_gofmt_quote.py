"""``gofmt.go_quote`` against Go's strconv.Quote (Go src/strconv/quote.go ``appendQuotedWith``
and ``appendEscapedRune`` with ASCIIonly and graphicOnly false): the quote and backslash
escaped, the seven C escapes by name, a printable rune (strconv.IsPrint: letters, marks,
numbers, punctuation, symbols and the ASCII space) as it is, any other rune below a space or
DEL as ``\\x``, below U+10000 as ``\\u``, above as ``\\U``, all in lowercase hex."""

from __future__ import annotations

import pytest

from setpoint.machinery.gofmt import go_quote

# (input, what fmt.Println(strconv.Quote(input)) prints)
GO_OUTPUTS = [
    ("", '""'),
    ("plain text", '"plain text"'),
    ('say "hi"\\', r'"say \"hi\"\\"'),
    ("it's", '"it\'s"'),
    ("\a\b\f\n\r\t\v", r'"\a\b\f\n\r\t\v"'),
    ("\x00\x01\x1b\x7f", r'"\x00\x01\x1b\x7f"'),
    ("\x85", r'"\u0085"'),  # a C1 control: not below a space, so \u
    ("é日本語 ключ", '"é日本語 ключ"'),
    ("\U0001f600", '"\U0001f600"'),
    ("\u00a0\u2028\u3000", r'"\u00a0\u2028\u3000"'),  # spaces other than ASCII's
    ("\u200b\u00ad\ufeff", r'"\u200b\u00ad\ufeff"'),  # format characters
    ("\ue000", r'"\ue000"'),  # private use
    ("\U000e0001", r'"\U000e0001"'),
    ("\U0010ffff", r'"\U0010ffff"'),
]


@pytest.mark.parametrize(("text", "quoted"), GO_OUTPUTS)
def test_go_quote_is_strconv_quote(text: str, quoted: str) -> None:
    assert go_quote(text) == quoted

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
"""

from __future__ import annotations

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


def dumps(obj: Any, option: int | None = None) -> bytes:
    """``obj`` as ``json.Marshal`` writes it (orjson's ``option`` as given)."""
    # (orjson is slower with an explicit ``option=None`` than with none)
    return html_escaped(orjson.dumps(obj) if option is None else orjson.dumps(obj, option=option))

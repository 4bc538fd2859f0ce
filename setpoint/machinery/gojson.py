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
back as it is after a few ``memchr`` scans.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

_ESCAPES = {b"<": b"\\u003c", b">": b"\\u003e", b"&": b"\\u0026",
            "\u2028".encode(): b"\\u2028", "\u2029".encode(): b"\\u2029"}
_ESCAPED = re.compile(b"|".join(re.escape(k) for k in _ESCAPES))
_LINE_SEPARATORS_LEAD = "\u2028".encode()[:2]  # U+2028, U+2029 and the rest of U+2000-203F


def html_escaped(text: bytes) -> bytes:
    """``text`` (JSON) with Go's HTML and line-separator escapes."""
    if (b"<" not in text and b">" not in text and b"&" not in text
            and _LINE_SEPARATORS_LEAD not in text):
        return text
    return _ESCAPED.sub(lambda m: _ESCAPES[m.group()], text)


def dumps(obj: Any, option: int | None = None) -> bytes:
    """``obj`` as ``json.Marshal`` writes it (orjson's ``option`` as given)."""
    return html_escaped(orjson.dumps(obj, option=option))

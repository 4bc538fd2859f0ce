"""YAML text of a JSON value, written the way gnostic writes ``Any.yaml``.

gnostic keeps every free-form value of an OpenAPI v2 document (vendor extensions, ``enum``
items, ``default``, ``example``) as YAML text: it parses the JSON document into ``yaml.v3``
nodes, clears their styles and marshals each value with ``yaml.v3``. Clients (kubectl's
``kube-openapi/pkg/util/proto``, the query-parameter verifier) read that text back with a YAML
parser, so what matters is that it means the same value; this module also follows yaml.v3's
layout (block style, four-space indentation, a mapping inside a sequence item aligned after
``- ``, plain scalars unless quoting is needed) so that the text is what the apiserver sends.

One deliberate difference: yaml.v3 writes a string with line breaks as a literal block
(``|-``); this writes it double-quoted with ``\\n`` escapes, which parses to the same string.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import orjson

BEST_INDENT = 4

# Plain strings that a YAML parser would read as something else: yaml.v3's resolver (null,
# booleans, numbers in any base, infinities, timestamps) and, for parsers still on YAML 1.1
# like yaml.v2 (which kubectl uses to read these values), the old booleans.
_NOT_STRINGS = {
    "", "~", "null", "Null", "NULL", "true", "True", "TRUE", "false", "False", "FALSE",
    ".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf",
    "-.Inf", "-.INF", "<<", "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "on",
    "On", "ON", "off", "Off", "OFF",
}
_NUMBER = re.compile(
    r"[-+]?(\.[0-9]+|[0-9][0-9_]*(\.[0-9_]*)?)([eE][-+]?[0-9]+)?"
    r"|[-+]?0[xX][0-9a-fA-F_]+|[-+]?0[oO]?[0-7_]+|[-+]?0[bB][01_]+"
    r"|[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?")  # YAML 1.1 sexagesimal numbers
_TIMESTAMP = re.compile(r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}([Tt ].*)?")
# Characters that end a plain scalar, or start something else, at the front of one
_LEADING_INDICATORS = set("#,[]{}&*!|>'\"%@`")
_DOUBLE_ESCAPES = {"\0": "\\0", "\a": "\\a", "\b": "\\b", "\t": "\\t", "\n": "\\n",
                   "\v": "\\v", "\f": "\\f", "\r": "\\r", "\x1b": "\\e", '"': '\\"',
                   "\\": "\\\\", "\x85": "\\N", "\xa0": "\\_", "\u2028": "\\L",
                   "\u2029": "\\P"}


def marshal(value: Any) -> str:
    """The YAML document yaml.v3 writes for the JSON value ``value`` (ending in a newline)."""
    out: list[str] = []
    _node(value, out, indent=-1, in_sequence=False)
    text = "".join(out)
    return text if text.endswith("\n") else text + "\n"


def scalar(value: Any) -> str:
    """One scalar's text: plain when a parser reads it back unchanged, else quoted."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int | float):
        return orjson.dumps(value).decode()  # the JSON literal gnostic's parser saw
    return _string(str(value))


def _string(s: str) -> str:
    if _needs_double_quotes(s):
        return '"' + "".join(_escape(c) for c in s) + '"'
    if not _plain_allowed(s):
        return "'" + s.replace("'", "''") + "'"
    return s


def _needs_double_quotes(s: str) -> bool:
    if s in _NOT_STRINGS or _NUMBER.fullmatch(s) or _TIMESTAMP.fullmatch(s):
        return True  # yaml.v3 forces these quoted, and always with double quotes
    return any(_escape(c) != c for c in s) or s[:1] == " " or s[-1:] == " "


def _plain_allowed(s: str) -> bool:
    """libyaml's analysis of a scalar in block context: may it be written plain?"""
    if s.startswith(("---", "...")) or s[0] in _LEADING_INDICATORS:
        return False
    if s[0] in "-?:" and (len(s) == 1 or s[1] == " "):
        return False
    return not (": " in s or " #" in s or s.endswith(":"))


def _escape(c: str) -> str:
    known = _DOUBLE_ESCAPES.get(c)
    if known is not None:
        return known
    code = ord(c)
    if code < 0x20 or 0x7F <= code < 0xA0 or code in (0xFEFF, 0xFFFE, 0xFFFF) or (
            0xD800 <= code < 0xE000):
        return f"\\x{code:02X}" if code <= 0xFF else f"\\u{code:04X}"
    return c


def _child_indent(indent: int, in_sequence: bool) -> int:
    """yaml.v3's indentation of a collection nested at ``indent``."""
    if indent < 0:
        return 0
    if in_sequence:
        return indent + 2  # the first indent inside a sequence item skips the "- "
    return BEST_INDENT * ((indent + BEST_INDENT) // BEST_INDENT)


def _node(value: Any, out: list[str], indent: int, in_sequence: bool) -> None:
    """Append ``value``; the caller has written whatever precedes it on the current line."""
    if isinstance(value, Mapping):
        if not value:
            out.append("{}\n")
            return
        inner = _child_indent(indent, in_sequence)
        for i, (key, item) in enumerate(value.items()):
            if i or not in_sequence:
                out.append(" " * inner)
            out.append(_string(str(key)) + ":")
            _value(item, out, inner)
    elif isinstance(value, list):
        if not value:
            out.append("[]\n")
            return
        inner = _child_indent(indent, in_sequence)
        for i, item in enumerate(value):
            if i or not in_sequence:
                out.append(" " * inner)
            out.append("-")
            if isinstance(item, Mapping | list) and item:
                out.append(" ")
                _node(item, out, inner, in_sequence=True)
            else:
                out.append(" " + _flow_or_scalar(item) + "\n")
    else:
        out.append(scalar(value) + "\n")


def _value(item: Any, out: list[str], indent: int) -> None:
    """A mapping value after ``key:``: inline when scalar or empty, else on the next lines."""
    if isinstance(item, Mapping | list) and item:
        out.append("\n")
        _node(item, out, indent, in_sequence=False)
    else:
        out.append(" " + _flow_or_scalar(item) + "\n")


def _flow_or_scalar(item: Any) -> str:
    if isinstance(item, Mapping):
        return "{}"
    if isinstance(item, list):
        return "[]"
    return scalar(item)

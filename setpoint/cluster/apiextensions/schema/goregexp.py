"""Schema ``pattern`` regular expressions with Go's ``regexp`` (RE2) semantics.

kube-openapi compiles a pattern with Go's ``regexp.Compile``: RE2 syntax, so lookarounds and
backreferences are refused, ``$`` matches only at the very end, ``\\d`` is ASCII. Python's
``re`` differs on each, so patterns are compiled by RE2 itself (google-re2, which cel-python
already needs), and its parse errors are worded as Go's ``regexp/syntax`` words them:
``error parsing regexp: <code>: `<expr>```.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

# RE2 (C++) error texts -> Go regexp/syntax ErrorCode strings; both report the same fragment
_GO_CODES = {
    "missing ]": "missing closing ]",
    "missing )": "missing closing )",
    "unexpected )": "unexpected )",
    "no argument for repetition operator": "missing argument to repetition operator",
    "bad repetition operator": "invalid nested repetition operator",
    "invalid repetition size": "invalid repeat count",
    "invalid escape sequence": "invalid escape sequence",
    "invalid character class range": "invalid character class range",
    "invalid character class": "invalid character class",
    "invalid perl operator": "invalid or unsupported Perl syntax",
    "invalid named capture group": "invalid named capture",
    "invalid UTF-8": "invalid UTF-8",
    "trailing \\": "trailing backslash at end of expression",
}


class GoRegexpError(ValueError):
    """A pattern Go's regexp.Compile refuses; ``str()`` is Go's error text."""


@lru_cache(maxsize=512)
def compile_go(pattern: str) -> Any:
    """The compiled pattern, or :class:`GoRegexpError` worded as Go's ``regexp.Compile``."""
    import re2  # type: ignore[import-untyped]

    options = re2.Options()
    options.log_errors = False
    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        raise GoRegexpError(_go_message(exc)) from None


def _go_message(exc: Exception) -> str:
    raw = exc.args[0] if exc.args else ""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    code, _, expr = text.partition(": ")
    if code == "trailing \\":
        expr = ""  # Go reports the empty remainder after the backslash
    return f"error parsing regexp: {_GO_CODES.get(code, code)}: `{expr}`"


def search_go(pattern: str, value: str) -> bool:
    """Whether ``value`` contains a match (Go's ``MatchString``); patterns Go would refuse
    match everything, as the CRD that holds them was refused before it could serve."""
    try:
        return compile_go(pattern).search(value) is not None
    except GoRegexpError:
        return True

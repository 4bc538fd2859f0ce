"""Two libraries' regular expressions, compiled at once instead of the slow way.

``re``'s compiler turns a character class with a range past U+00FF into a table by walking
the range's BMP code points one by one, in Python: a class such as ``[\\x80-\\U0010ffff]``
costs tens of millions of instructions. Two patterns compiled at import on ``cluster up``'s
critical path (docs/benchmarks.md, Start-up) are such:

- ``cryptography.x509``'s ``_RFC4514NameParser._STRING_RE`` (the parser of
  ``Name.from_rfc4514_string``), three ``[\\x80-\\U0010ffff]`` classes: about 84 M
  instructions, a tenth of the API server's imports;
- PyYAML's ``Reader.NON_PRINTABLE`` (``yaml.reader``), a negated class of ranges up to
  U+10FFFF: about 53 M, 6 % of the workloads' process's imports (its client reads its
  kubeconfig with PyYAML).

Each has a form matching the same characters that compiles at once: ``[^\\x00-\\x7f]`` (a
``str`` pattern's code points run from 0 to ``sys.maxunicode``), and the positive class of
the characters PyYAML's negated one leaves out. A ``prime_*`` function compiles that form
and puts it in ``re``'s cache under the key of the library's own pattern, so the library's
``re.compile`` returns it: the same matches, without the walk. If a library changes its
pattern the key no longer matches, and it compiles its own as before
(``tests/machinery/test_librarypatterns.py`` says so).
"""

from __future__ import annotations

import re
import sys

# cryptography/x509/name.py, _RFC4514NameParser (cryptography 41-50): the parts of _STRING_RE
_ESCAPE_SPECIAL = r"[\\ #=\"\+,;<>]"
_ESCAPE_HEX = r"[\da-zA-Z]{2}"
_PAIR = rf"\\({_ESCAPE_SPECIAL}|{_ESCAPE_HEX})"
_LUTF1 = r"[\x01-\x1f\x21\x24-\x2A\x2D-\x3A\x3D\x3F-\x5B\x5D-\x7F]"
_SUTF1 = r"[\x01-\x21\x23-\x2A\x2D-\x3A\x3D\x3F-\x5B\x5D-\x7F]"
_TUTF1 = r"[\x01-\x1F\x21\x23-\x2A\x2D-\x3A\x3D\x3F-\x5B\x5D-\x7F]"

UTFMB = rf"[\x80-{chr(sys.maxunicode)}]"
"""cryptography's class of every non-ASCII code point."""
UTFMB_AT_ONCE = r"[^\x00-\x7f]"
"""The same code points, as a class ``re`` compiles without walking them."""

YAML_NON_PRINTABLE = "[^\x09\x0A\x0D\x20-\x7E\x85\xA0-\uD7FF\uE000-\uFFFD\U00010000-\U0010ffff]"
"""PyYAML's ``Reader.NON_PRINTABLE`` (PyYAML 5.1-6.0): what YAML 1.1 may not hold."""
YAML_NON_PRINTABLE_AT_ONCE = (
    "[\x00-\x08\x0B\x0C\x0E-\x1F\x7F-\x84\x86-\x9F\uD800-\uDFFF\uFFFE\uFFFF]")
"""The same characters: those the negated class leaves out of 0 to U+10FFFF."""


def rfc4514_string_pattern(utfmb: str) -> str:
    """``_RFC4514NameParser._STRING_RE``'s source, its non-ASCII class written ``utfmb``."""
    leadchar = rf"{_LUTF1}|{utfmb}"
    stringchar = rf"{_SUTF1}|{utfmb}"
    trailchar = rf"{_TUTF1}|{utfmb}"
    return rf"""
        (
            ({leadchar}|{_PAIR})
            (
                ({stringchar}|{_PAIR})*
                ({trailchar}|{_PAIR})
            )?
        )?
        """


def prime_x509() -> None:
    """Before ``cryptography.x509`` is first imported (later, a no-op)."""
    if "cryptography.x509.name" not in sys.modules:
        _prime(rfc4514_string_pattern(UTFMB), rfc4514_string_pattern(UTFMB_AT_ONCE),
               re.VERBOSE)


def prime_yaml() -> None:
    """Before PyYAML is first imported (later, a no-op)."""
    if "yaml.reader" not in sys.modules:
        _prime(YAML_NON_PRINTABLE, YAML_NON_PRINTABLE_AT_ONCE, re.NOFLAG)


def _prime(source: str, at_once: str, flags: re.RegexFlag) -> None:
    cache = getattr(re, "_cache", None)
    if not isinstance(cache, dict):
        return  # another Python's re: the library compiles its pattern itself
    # re._compile's key: (type of the pattern, the pattern, the flags as an int)
    cache[(str, source, flags.value)] = re.compile(at_once, flags)

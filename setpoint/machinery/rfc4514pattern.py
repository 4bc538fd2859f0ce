"""``cryptography.x509`` without compiling its RFC 4514 string pattern the slow way.

Importing ``cryptography.x509`` compiles ``_RFC4514NameParser._STRING_RE`` (the parser of
``Name.from_rfc4514_string``), whose three ``[\\x80-\\U0010ffff]`` classes make ``re``'s
compiler walk the 65,536 BMP code points one by one in Python: about 84 M instructions,
a tenth of the API server's imports, on ``cluster up``'s critical path (docs/benchmarks.md,
Start-up). ``[^\\x00-\\x7f]`` is the same set of characters (a ``str`` pattern's code points
run from 0 to ``sys.maxunicode``) and compiles at once. :func:`prime` compiles the pattern
with that class and puts it in ``re``'s cache under the key of cryptography's own pattern,
so its ``re.compile`` returns it: the same matches, without the walk.

If cryptography changes its pattern, the key no longer matches and its ``re.compile``
compiles its own as before (``tests/machinery/test_rfc4514pattern.py`` says so).
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


def string_pattern(utfmb: str) -> str:
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


def prime() -> None:
    """Put the quickly compiled pattern in ``re``'s cache for cryptography's ``re.compile``
    (before ``cryptography.x509`` is first imported; later, a no-op)."""
    if "cryptography.x509.name" in sys.modules:
        return
    cache = getattr(re, "_cache", None)
    if not isinstance(cache, dict):
        return  # another Python's re: cryptography compiles its pattern itself
    # re._compile's key: (type of the pattern, the pattern, the flags as an int)
    cache[(str, string_pattern(UTFMB), re.VERBOSE.value)] = re.compile(
        string_pattern(UTFMB_AT_ONCE), re.VERBOSE)

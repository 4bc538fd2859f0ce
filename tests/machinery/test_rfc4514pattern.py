"""cryptography.x509's RFC 4514 string pattern, compiled at once (setpoint/machinery/
rfc4514pattern.py): the server's package primes ``re``'s cache before any of its modules
imports ``cryptography.x509``, so that import skips ``re``'s walk of 65,536 code points
(docs/benchmarks.md, Start-up). The primed pattern must be cryptography's own pattern's
key (else priming does nothing) and match exactly what cryptography's own pattern matches
(else ``Name.from_rfc4514_string`` would parse differently)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

from setpoint.machinery.rfc4514pattern import UTFMB, UTFMB_AT_ONCE, string_pattern

ROOT = Path(__file__).resolve().parents[2]


def _fresh(program: str) -> dict[str, object]:
    """What ``program`` prints as JSON, run in a fresh interpreter (this one has
    cryptography.x509 loaded already)."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(program)], cwd=ROOT,
                          capture_output=True, text=True, check=True)
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_cryptographys_own_pattern_is_the_one_primed() -> None:
    """Unprimed, cryptography compiles exactly the source whose cache key ``prime`` fills:
    a cryptography that changed its pattern fails here, not silently slower."""
    seen = _fresh("""
        import json, cryptography.x509.name as name
        compiled = name._RFC4514NameParser._STRING_RE
        print(json.dumps({"pattern": compiled.pattern, "flags": compiled.flags}))
    """)
    assert seen["pattern"] == string_pattern(UTFMB)
    assert seen["flags"] == re.compile(string_pattern(UTFMB), re.VERBOSE).flags


def test_the_servers_package_primes_it_before_cryptography_x509_loads() -> None:
    seen = _fresh("""
        import json, setpoint.cluster, cryptography.x509.name as name
        from cryptography import x509
        print(json.dumps({
            "pattern": name._RFC4514NameParser._STRING_RE.pattern,
            "parsed": [[a.oid.dotted_string, a.value] for a in
                       x509.Name.from_rfc4514_string("CN=caf\\u00e9 \\U0001f600,O=a\\\\,b")]}))
    """)
    assert seen["pattern"] == string_pattern(UTFMB_AT_ONCE)
    assert seen["parsed"] == [["2.5.4.10", "a,b"], ["2.5.4.3", "café \U0001f600"]]


def test_the_primed_pattern_matches_what_cryptographys_matches() -> None:
    """Every code point class boundary, escapes, and strings cut at each place: the same
    match (the same span) from both patterns."""
    own = re.compile(string_pattern(UTFMB), re.VERBOSE)
    at_once = re.compile(string_pattern(UTFMB_AT_ONCE), re.VERBOSE)
    points = [0, 1, 0x1f, 0x20, 0x21, 0x22, 0x23, 0x2b, 0x2c, 0x3b, 0x3c, 0x3e, 0x5c, 0x7e,
              0x7f, 0x80, 0xff, 0x100, 0x7ff, 0x800, 0xd7ff, 0xd800, 0xdfff, 0xe000, 0xfffd,
              0xffff, 0x10000, 0x1f600, sys.maxunicode]
    texts = [chr(p) for p in points]
    texts += [a + b + c for a in ("x", "\x80", " ", "#") for b in map(chr, points)
              for c in ("", "y", " ", "\U0001f600")]
    texts += ["caf\u00e9", "\\,a", "\\41bc", "a\\", "\\ é\\ ", "é,é", "a+b", "#04"]
    for text in texts:
        for start in range(len(text) + 1):
            mine, theirs = at_once.match(text, start), own.match(text, start)
            assert (mine and mine.span()) == (theirs and theirs.span()), (text, start)

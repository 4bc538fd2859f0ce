"""Two libraries' slow patterns compiled at once (setpoint/machinery/librarypatterns.py):
the server's package primes ``re``'s cache before any of its modules imports
``cryptography.x509``, the client's kubeconfig reader before it imports PyYAML, so those
imports skip ``re``'s walk of the BMP's code points (docs/benchmarks.md, Start-up). Each
primed pattern must be the library's own pattern's key (else priming does nothing) and
match exactly what the library's own pattern matches (else ``Name.from_rfc4514_string`` or
PyYAML's check of printable characters would answer differently)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

from setpoint.machinery.librarypatterns import (
    UTFMB,
    UTFMB_AT_ONCE,
    YAML_NON_PRINTABLE,
    YAML_NON_PRINTABLE_AT_ONCE,
    rfc4514_string_pattern,
)

ROOT = Path(__file__).resolve().parents[2]

# every boundary of the classes involved, and characters inside each range
POINTS = [0, 1, 8, 9, 0xa, 0xb, 0xc, 0xd, 0xe, 0x1f, 0x20, 0x21, 0x22, 0x23, 0x2b, 0x2c,
          0x3b, 0x3c, 0x3e, 0x5c, 0x7e, 0x7f, 0x80, 0x84, 0x85, 0x86, 0x9f, 0xa0, 0xff,
          0x100, 0x7ff, 0x800, 0xd7ff, 0xd800, 0xdbff, 0xdc00, 0xdfff, 0xe000, 0xfffd,
          0xfffe, 0xffff, 0x10000, 0x1f600, 0x10fffe, sys.maxunicode]


def _fresh(program: str) -> dict[str, object]:
    """What ``program`` prints as JSON, run in a fresh interpreter (this one has both
    libraries loaded already)."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(program)], cwd=ROOT,
                          capture_output=True, text=True, check=True)
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_the_libraries_own_patterns_are_the_ones_primed() -> None:
    """Unprimed, each library compiles exactly the source whose cache key is primed: a
    version that changed its pattern fails here, not silently slower."""
    seen = _fresh("""
        import json, cryptography.x509.name as name, yaml.reader as reader
        x509 = name._RFC4514NameParser._STRING_RE
        print(json.dumps({"x509": [x509.pattern, x509.flags],
                          "yaml": [reader.Reader.NON_PRINTABLE.pattern,
                                   reader.Reader.NON_PRINTABLE.flags]}))
    """)
    assert seen["x509"] == [rfc4514_string_pattern(UTFMB),
                            re.compile(rfc4514_string_pattern(UTFMB), re.VERBOSE).flags]
    assert seen["yaml"] == [YAML_NON_PRINTABLE, re.compile(YAML_NON_PRINTABLE).flags]


def test_the_server_and_the_client_prime_them_before_the_libraries_load() -> None:
    seen = _fresh("""
        import json, setpoint.cluster, setpoint.client
        import cryptography.x509.name as name, yaml, yaml.reader as reader
        from cryptography import x509
        print(json.dumps({
            "x509": name._RFC4514NameParser._STRING_RE.pattern,
            "yaml": reader.Reader.NON_PRINTABLE.pattern,
            "parsed": [[a.oid.dotted_string, a.value] for a in
                       x509.Name.from_rfc4514_string("CN=caf\\u00e9 \\U0001f600,O=a\\\\,b")],
            "loaded": yaml.safe_load("a: caf\\u00e9 \\U0001f600")}))
    """)
    assert seen["x509"] == rfc4514_string_pattern(UTFMB_AT_ONCE)
    assert seen["yaml"] == YAML_NON_PRINTABLE_AT_ONCE
    assert seen["parsed"] == [["2.5.4.10", "a,b"], ["2.5.4.3", "café \U0001f600"]]
    assert seen["loaded"] == {"a": "café \U0001f600"}


def test_the_primed_x509_pattern_matches_what_cryptographys_matches() -> None:
    """Escapes, and strings of every boundary cut at each place: the same match (the same
    span) from both patterns."""
    own = re.compile(rfc4514_string_pattern(UTFMB), re.VERBOSE)
    at_once = re.compile(rfc4514_string_pattern(UTFMB_AT_ONCE), re.VERBOSE)
    texts = [chr(p) for p in POINTS]
    texts += [a + b + c for a in ("x", "\x80", " ", "#") for b in map(chr, POINTS)
              for c in ("", "y", " ", "\U0001f600")]
    texts += ["caf\u00e9", "\\,a", "\\41bc", "a\\", "\\ é\\ ", "é,é", "a+b", "#04"]
    for text in texts:
        for start in range(len(text) + 1):
            mine, theirs = at_once.match(text, start), own.match(text, start)
            assert (mine and mine.span()) == (theirs and theirs.span()), (text, start)


def test_the_primed_yaml_pattern_finds_what_pyyamls_finds() -> None:
    """Every code point of the BMP and each plane's boundaries: the same verdict."""
    own = re.compile(YAML_NON_PRINTABLE)
    at_once = re.compile(YAML_NON_PRINTABLE_AT_ONCE)
    bmp = "".join(map(chr, range(0x10000)))
    assert [m.start() for m in at_once.finditer(bmp)] == [m.start() for m in own.finditer(bmp)]
    for point in POINTS:
        assert bool(at_once.search(chr(point))) == bool(own.search(chr(point))), hex(point)

"""Go's ``time.ParseDuration`` and the error text it returns, for the values the server
parses as Go durations: a request's ``timeout`` parameter (request_deadline.go) and a CronJob's
``@every`` schedule (robfig/cron, which calls ParseDuration)."""

from __future__ import annotations

_UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "μs": 1_000, "ms": 1_000_000,
          "s": 1_000_000_000, "m": 60_000_000_000, "h": 3_600_000_000_000}
_MAX_NS = (1 << 63) - 1


def parse_duration(text: str) -> float:
    """Seconds of a Go duration ("1s", "1.5h", "-2m3s"), or ValueError with Go's message."""
    invalid = ValueError(f"time: invalid duration {quote(text)}")
    s, negative = text, False
    if s[:1] in ("-", "+"):
        negative, s = s[0] == "-", s[1:]
    if s == "0":
        return 0.0
    if not s:
        raise invalid
    total = 0
    while s:
        if not _number_char(s[0]):
            raise invalid
        whole = _leading_digits(s)
        s = s[len(whole):]
        fraction = ""
        if s[:1] == ".":
            fraction = _leading_digits(s[1:])
            s = s[1 + len(fraction):]
            if not whole and not fraction:
                raise invalid
        elif not whole:
            raise invalid
        unit_end = 0
        while unit_end < len(s) and not _number_char(s[unit_end]):
            unit_end += 1
        if unit_end == 0:
            raise ValueError(f"time: missing unit in duration {quote(text)}")
        unit, s = s[:unit_end], s[unit_end:]
        scale = _UNITS.get(unit)
        if scale is None:
            raise ValueError(f"time: unknown unit {quote(unit)} in duration {quote(text)}")
        value = int(whole or "0") * scale
        if fraction:  # (Go truncates the fraction to whole nanoseconds)
            value += int(fraction) * scale // 10 ** len(fraction)
        total += value
        if total > _MAX_NS:
            raise invalid
    return (-total if negative else total) / 1e9


def _number_char(ch: str) -> bool:
    return ch == "." or (ch.isascii() and ch.isdigit())


def _leading_digits(s: str) -> str:
    end = 0
    while end < len(s) and s[end].isascii() and s[end].isdigit():
        end += 1
    return s[:end]


def quote(s: str) -> str:
    """time's own quote: printable ASCII as is (``"`` and ``\\`` escaped), other bytes
    as ``\\x``-escaped UTF-8."""
    out = ['"']
    for ch in s:
        if ch < " " or ord(ch) >= 0x80:
            out.extend(f"\\x{b:02x}" for b in ch.encode("utf-8", "surrogateescape"))
        else:
            out.append("\\" + ch if ch in '"\\' else ch)
    out.append('"')
    return "".join(out)

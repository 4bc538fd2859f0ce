"""The error Go's ``time.Parse(time.RFC3339, s)`` gives for a timestamp it cannot read.

metav1.Time's UnmarshalJSON parses with ``time.Parse(time.RFC3339, str)``
(apimachinery pkg/apis/meta/v1/time.go), metav1.MicroTime's with ``RFC3339Micro``
(micro_time.go: exactly six fraction digits); the decoder answers its ``*time.ParseError``
as is:
``parsing time "<value>" as "2006-01-02T15:04:05Z07:00": cannot parse "<rest>" as "<elem>"``,
or ``parsing time "<value>": <what> out of range`` (Go src/time/format.go ``parse``, walked
element by element as here).
"""

from __future__ import annotations

import calendar
from datetime import UTC, datetime, timedelta

RFC3339 = "2006-01-02T15:04:05Z07:00"
RFC3339_MICRO = "2006-01-02T15:04:05.000000Z07:00"
# the layouts' elements in order: (literal prefix, element)
_CHUNKS = (("", "2006"), ("-", "01"), ("-", "02"), ("T", "15"), (":", "04"), (":", "05"),
           ("", "Z07:00"))
_MICRO_CHUNKS = (*_CHUNKS[:-1], ("", ".000000"), _CHUNKS[-1])


def _getnum(value: str, fixed: bool) -> tuple[int, str] | None:
    """format.go getnum: one or two digits (two when ``fixed``)."""
    if not value[:1].isdigit() or not value[:1].isascii():
        return None
    if len(value) < 2 or not (value[1].isascii() and value[1].isdigit()):
        return None if fixed else (int(value[0]), value[1:])
    return int(value[:2]), value[2:]


def rfc3339_error(value: str, *, micro: bool = False) -> str | None:
    """Go's ParseError text for ``value`` (in the MicroTime layout if ``micro``), or None
    when Go parses it."""
    parsed = _parse(value, micro)
    return parsed if isinstance(parsed, str) else None


def rfc3339_micro_utc(value: str) -> str:
    """A MicroTime Go parses in UTC with six fraction digits, as metav1.MicroTime writes it
    back."""
    parsed = _parse(value, True)
    assert not isinstance(parsed, str)
    return parsed.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def rfc3339_utc(value: str) -> str:
    """A timestamp Go parses (:func:`rfc3339_error` None) in UTC whole seconds, as
    metav1.Time writes it back."""
    parsed = _parse(value)
    assert not isinstance(parsed, str)
    return parsed.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse(value: str, micro: bool = False) -> str | datetime:
    rest = value
    fields: dict[str, int] = {}
    offset = microsecond = 0
    layout = RFC3339_MICRO if micro else RFC3339
    for prefix, element in _MICRO_CHUNKS if micro else _CHUNKS:
        if not rest.startswith(prefix):
            return _cannot(value, layout, prefix, rest)
        rest = rest[len(prefix):]
        hold = rest
        out_of_range = ""
        if element == "2006":
            if len(rest) < 4 or not rest[0].isdigit() or not rest[:4].isascii() \
                    or not rest[:4].isdigit():
                return _cannot(value, layout, element, hold)
            fields["year"], rest = int(rest[:4]), rest[4:]
        elif element == ".000000":
            # format.go stdFracSecond0: a period or comma and exactly the layout's digits
            digits = rest[1:7]
            if len(rest) < 7 or rest[0] not in ".," or not (digits.isascii()
                                                           and digits.isdigit()):
                return _cannot(value, layout, element, hold)
            microsecond, rest = int(digits), rest[7:]
        elif element == "Z07:00":
            if rest[:1] == "Z":
                rest = rest[1:]
            else:
                hours = _getnum(rest[1:3], True) if len(rest) >= 6 and rest[3] == ":" else None
                minutes = _getnum(rest[4:6], True) if hours is not None else None
                if hours is None or minutes is None or rest[0] not in "+-":
                    return _cannot(value, layout, element, hold)
                # (format.go compares with >: an offset of 24 hours or 60 minutes passes)
                if hours[0] > 24 or minutes[0] > 60:
                    kind = "hour" if minutes[0] <= 60 else "minute"
                    return f'parsing time "{value}": time zone offset {kind} out of range'
                offset = (hours[0] * 60 + minutes[0]) * (1 if rest[0] == "+" else -1)
                rest = rest[6:]
        else:
            got = _getnum(rest, element != "15")
            if got is None:
                return _cannot(value, layout, element, hold)
            number, rest = got
            # (a day is checked against its month once the whole value is read)
            limit = {"01": (1, 12, "month"), "02": (0, 99, ""), "15": (0, 23, "hour"),
                     "04": (0, 59, "minute"), "05": (0, 59, "second")}[element]
            if not limit[0] <= number <= limit[1]:
                out_of_range = limit[2]
            fields[element] = number
            if element == "05" and not micro and len(rest) >= 2 and rest[0] in ".," \
                    and rest[1].isdigit():
                n = 2
                while n < len(rest) and rest[n].isascii() and rest[n].isdigit():
                    n += 1
                rest = rest[n:]  # fractional seconds, any number of digits (dropped)
        if out_of_range:
            return f'parsing time "{value}": {out_of_range} out of range'
    if rest:
        return f'parsing time "{value}": extra text: "{rest}"'
    year, month, day = fields["year"], fields["01"], fields["02"]
    if not 1 <= day <= calendar.monthrange(year, month)[1]:
        return f'parsing time "{value}": day out of range'
    if year == 0:
        return datetime(1, 1, 1, tzinfo=UTC)  # (out of Python's range; Go's zero is year 1)
    return datetime(year, month, day, fields["15"], fields["04"], fields["05"], microsecond,
                    tzinfo=UTC) - timedelta(minutes=offset)


def _cannot(value: str, layout: str, element: str, rest: str) -> str:
    return f'parsing time "{value}" as "{layout}": cannot parse "{rest}" as "{element}"'

"""YAML answers as kube-apiserver writes them: the JSON serializer's ``Yaml`` option encodes the
object to JSON and turns that into YAML with sigs.k8s.io/yaml ``JSONToYAML``, which unmarshals
the JSON with goyaml.v2 into ``interface{}`` and marshals it back
(k8s.io/apimachinery pkg/runtime/serializer/json/json.go ``Encode``).

So the text is goyaml.v2's (v2.4.0, lines wrapped at 80 columns, a port of libyaml's emitter,
as PyYAML's C emitter is): every mapping's keys sorted as goyaml.v2 sorter.go ``keyList.Less``
sorts them (runs of digits by value, a letter after any other character), two-space
indentation with a mapping's sequences not indented, and a string written plain unless
goyaml.v2's resolver would read it back as something else (encode.go ``stringv``: then
double-quoted; one holding a line break as a literal block; the emitter itself falls back to
single quotes where a plain scalar is not allowed, as ``- x`` or ``a: b``).
"""

from __future__ import annotations

import functools
import re
from datetime import datetime
from typing import Any

import yaml

# goyaml.v2 resolve.go: the plain scalars its resolve table maps to null, booleans, the
# float specials and the merge key
_RESOLVED = frozenset({
    "", "~", "null", "Null", "NULL",
    "y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "true", "True", "TRUE",
    "n", "N", "no", "No", "NO", "off", "Off", "OFF", "false", "False", "FALSE",
    ".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF",
    "-.inf", "-.Inf", "-.INF", "<<",
})
_YAML_STYLE_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")
_BASE60_FLOAT = re.compile(r"^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$")
_GO_INT = re.compile(r"^[-+]?(0[xX][0-9a-fA-F]+|0[oO]?[0-7]*|0[bB][01]+|[1-9][0-9]*)$")
_BINARY = re.compile(r"^[-+]?0b[01]+$")
# goyaml.v2 resolve.go allowedTimestampFormats (Go layouts with one-or-two-digit fields)
_TIMESTAMP = re.compile(
    r"^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}"
    r"(([Tt][0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(\.[0-9]+)?(Z|[-+][0-9]{2}:[0-9]{2}))"
    r"|( [0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(\.[0-9]+)?))?$")


def resolves_to_other_than_string(s: str) -> bool:
    """Whether goyaml.v2 ``resolve("", s)`` gives a tag other than ``!!str``, or ``s`` is a
    base-60 float (encode.go ``stringv``'s ``canUsePlain`` is then false)."""
    if s in _RESOLVED:
        return True
    if not s or s[0] not in "0123456789+-.":
        return False
    plain = s.replace("_", "")
    if _GO_INT.match(plain) or _BINARY.match(plain) or _YAML_STYLE_FLOAT.match(plain):
        return True
    if _TIMESTAMP.match(s) and _valid_date(s[:10].split("T")[0].split(" ")[0]):
        return True
    return bool(_BASE60_FLOAT.match(s))


def _valid_date(text: str) -> bool:
    try:
        y, m, d = (int(p) for p in text.split("-")[:3])
        datetime(y, m, d)
    except ValueError:
        return False
    return True


def _go_key_less(a: str, b: str) -> bool:
    """goyaml.v2 sorter.go ``keyList.Less`` for two string keys."""
    for i in range(min(len(a), len(b))):
        ca, cb = a[i], b[i]
        if ca == cb:
            continue
        al, bl = ca.isalpha(), cb.isalpha()
        if al and bl:
            return ca < cb
        if al or bl:
            return bl
        an = bn = 0
        if ca == "0" or cb == "0":
            j = i - 1
            while j >= 0 and a[j].isdigit():
                if a[j] != "0":
                    an = bn = 1
                    break
                j -= 1
        ai = i
        while ai < len(a) and a[ai].isdigit():
            an = an * 10 + int(a[ai])
            ai += 1
        bi = i
        while bi < len(b) and b[bi].isdigit():
            bn = bn * 10 + int(b[bi])
            bi += 1
        if an != bn:
            return an < bn
        if ai != bi:
            return ai < bi
        return ca < cb
    return len(a) < len(b)


def _go_key_compare(a: str, b: str) -> int:
    return -1 if _go_key_less(a, b) else (1 if _go_key_less(b, a) else 0)


_KEY = functools.cmp_to_key(_go_key_compare)


def sorted_keys(mapping: dict[str, Any]) -> list[str]:
    """The keys of ``mapping`` in the order goyaml.v2 writes them."""
    return sorted(mapping, key=lambda k: _KEY(str(k)))


class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    pass


def _mapping(dumper: yaml.SafeDumper, value: dict[str, Any]) -> yaml.MappingNode:
    items = [(k, value[k]) for k in sorted_keys(value)]
    return dumper.represent_mapping("tag:yaml.org,2002:map", items, flow_style=False)


def _string(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style: str | None = None
    if "\n" in value:
        style = "|"
    elif resolves_to_other_than_string(value):
        style = '"'
    node = dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)
    return node


def _float(dumper: yaml.SafeDumper, value: float) -> yaml.ScalarNode:
    # goyaml.v2 encode.go floatv: strconv.FormatFloat(f, 'g', -1, 64), +Inf/-Inf/NaN specials
    if value != value:
        text = ".NaN"
    elif value in (float("inf"), float("-inf")):
        text = ".inf" if value > 0 else "-.inf"
    else:
        text = _format_g(value)
    # written plain, under whatever tag PyYAML's resolver reads the text as (goyaml.v2's
    # text is untagged: 2.0 is "2", 1e-05 a float to goyaml.v2 but no YAML 1.1 one)
    tag: str = dumper.resolve(yaml.ScalarNode, text, (True, False))  # type: ignore[no-untyped-call]
    return dumper.represent_scalar(tag, text)


def _format_g(value: float) -> str:
    """Go's ``strconv.FormatFloat(v, 'g', -1, 64)``: the shortest digits, in %e form when the
    decimal exponent is below -4 or at least 6 (ftoa.go: the shortest precision decides with
    6), the exponent written with a sign and at least two digits."""
    if value == 0:
        return "-0" if str(value).startswith("-") else "0"
    sign = "-" if value < 0 else ""
    digits, exponent = repr(abs(value)), 0
    # the shortest digits that read back as the value (repr's), without the point
    if "e" in digits:
        body, _, e2 = digits.partition("e")
        exponent = int(e2) + (len(body.split(".")[0]) - 1)
        digits = body.replace(".", "")
    else:
        whole, _, frac = digits.partition(".")
        frac = frac.rstrip("0")
        if whole != "0":
            exponent = len(whole) - 1
            digits = whole + frac
        else:
            stripped = frac.lstrip("0")
            exponent = -(len(frac) - len(stripped)) - 1
            digits = stripped
    digits = digits.lstrip("0").rstrip("0") or "0"
    if exponent < -4 or exponent >= 6:
        tail = digits[1:]
        text = digits[0] + ("." + tail if tail else "")
        return f"{sign}{text}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
    if exponent < 0:
        return f"{sign}0.{'0' * (-exponent - 1)}{digits}"
    whole = digits[:exponent + 1].ljust(exponent + 1, "0")
    frac = digits[exponent + 1:]
    return f"{sign}{whole}{'.' + frac if frac else ''}"


_Dumper.add_representer(dict, _mapping)
_Dumper.add_representer(str, _string)
_Dumper.add_representer(float, _float)


def dumps(value: Any) -> bytes:
    """The YAML kube-apiserver writes for the JSON value ``value``."""
    text: str = yaml.dump(value, Dumper=_Dumper, default_flow_style=False, allow_unicode=True,
                          width=80, indent=2)
    return text.encode()

"""The Kubernetes CEL format library (apiserver pkg/cel/library/format.go, in the
environment since 1.31): ``format.dns1123Label()`` and its siblings, ``format.named(name)``
(an optional), and ``<format>.validate(s)``: ``optional.none()`` when ``s`` is valid, else
the list of what is wrong, worded by the apimachinery validation the format names.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from celpy import celtypes

from setpoint.machinery import names

from .celoptional import NONE, OptionalValue
from .formats import format_ok


def _mask_trailing_dash(name: str) -> str:
    # apimachinery pkg/api/validation/generic.go maskTrailingDash, as written there
    if len(name) > 1 and name.endswith("-"):
        return name[:-2] + "a"
    return name


def _prefix(check: Callable[[str], list[str]]) -> Callable[[str], list[str]]:
    return lambda s: check(_mask_trailing_dash(s))


def _strfmt(fmt: str, message: str) -> Callable[[str], list[str]]:
    return lambda s: [] if format_ok(fmt, s) else [message]


def _request_uri(s: str) -> list[str]:
    # url.ParseRequestURI's usual refusal; its rarer errors are worded differently
    return [] if format_ok("uri", s) else [f'parse "{s}": invalid URI for request']


@dataclass(frozen=True)
class Format:
    """A named format value (apiserver pkg/cel/format.go)."""

    name: str
    check: Callable[[str], list[str]]
    max_regex_size: int


# format.go ConstantFormats: the CEL name, Go's Name, the validation and MaxRegexSize
FORMATS: dict[str, Format] = {f.name: f for f in (
    Format("dns1123Label", names.is_dns1123_label, 30),
    Format("dns1123Subdomain", names.is_dns1123_subdomain, 60),
    Format("dns1035Label", names.is_dns1035_label, 30),
    Format("qualifiedName", names.is_qualified_name, 60),
    Format("dns1123LabelPrefix", _prefix(names.is_dns1123_label), 30),
    Format("dns1123SubdomainPrefix", _prefix(names.is_dns1123_subdomain), 60),
    Format("dns1035LabelPrefix", _prefix(names.is_dns1035_label), 30),
    Format("labelValue", names.is_valid_label_value, 40),
    Format("uri", _request_uri, 1000),
    Format("uuid", _strfmt("uuid", "does not match the UUID format"), 85),
    Format("byte", _strfmt("byte", "invalid base64"), 75),
    Format("date", _strfmt("date", "invalid date"), 100),
    Format("datetime", _strfmt("datetime", "invalid datetime"), 100),
)}


def validate(fmt: Any, value: Any) -> OptionalValue:
    """``<format>.validate(s)``: none when valid, else optional.of(the errors)."""
    if not isinstance(fmt, Format) or not isinstance(value, str):
        raise TypeError("no such overload")
    errors = fmt.check(str(value))
    if not errors:
        return NONE
    return OptionalValue(celtypes.ListType([celtypes.StringType(e) for e in errors]))


def _named(name: Any) -> OptionalValue:
    found = FORMATS.get(str(name))
    return NONE if found is None else OptionalValue(found)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    **{f"format.{name}": (lambda f=f: f) for name, f in FORMATS.items()},
    "format.named": _named,
    "validate": validate,
}

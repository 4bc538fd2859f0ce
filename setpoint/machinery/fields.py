"""Field selectors (``?fieldSelector=``): parsing, matching, and the supported-field check.

A port of ``k8s.io/apimachinery/pkg/fields/selector.go``: terms are split on unescaped
commas, each term is ``field=value``, ``field==value`` or ``field!=value`` (no whitespace
trimming, no set-based operators), and values may escape ``\\``, ``,`` and ``=``. Which
fields a resource can be selected by is the server's business: it passes its supported
keys to :func:`check_supported`, which answers with the apiserver's 400.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from setpoint.machinery.errors import StatusError, bad_request

__all__ = [
    "EVERYTHING", "FieldSelectorError", "Requirement", "Selector", "check_supported",
    "escape_value", "parse", "parse_selector", "selector_from_set", "unescape_value",
]

EQUALS, DOUBLE_EQUALS, NOT_EQUALS = "=", "==", "!="
# Order matters: at each position "!=" and "==" are tried before "=".
_TERM_OPERATORS = (NOT_EQUALS, DOUBLE_EQUALS, EQUALS)


class FieldSelectorError(ValueError):
    """A field selector that cannot be parsed; ``str()`` is Kubernetes' error text."""


@dataclass(frozen=True, slots=True)
class Requirement:
    """``field op value``; ``op`` is ``=`` (also for ``==``) or ``!=``."""

    field: str
    operator: str
    value: str

    def matches(self, fields: Mapping[str, str]) -> bool:
        # A field the object does not have reads as the empty string.
        have = fields.get(self.field, "")
        return have == self.value if self.operator == EQUALS else have != self.value

    def __str__(self) -> str:
        return f"{self.field}{self.operator}{escape_value(self.value)}"


@dataclass(frozen=True, slots=True)
class Selector:
    """An AND of field requirements, sorted as Kubernetes sorts the terms."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, fields: Mapping[str, str]) -> bool:
        """Whether an object with these field labels is selected."""
        for r in self.requirements:
            have = fields.get(r.field, "")
            if (have == r.value) != (r.operator == EQUALS):
                return False
        return True

    @property
    def empty(self) -> bool:
        return not self.requirements

    def requires_exact_match(self, field: str) -> str | None:
        """The value ``field`` must equal, if the selector pins it (``metadata.name=x``)."""
        for r in self.requirements:
            if r.field == field and r.operator == EQUALS:
                return r.value
        return None

    @property
    def fields(self) -> list[str]:
        return [r.field for r in self.requirements]

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


EVERYTHING = Selector()


def selector_from_set(fields: Mapping[str, str]) -> Selector:
    """A selector requiring exactly these field values."""
    return Selector(tuple(Requirement(k, EQUALS, v) for k, v in sorted(fields.items())))


def escape_value(value: str) -> str:
    """``fields.EscapeValue``: backslash-escape ``\\``, ``,`` and ``=``."""
    return value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")


def unescape_value(value: str) -> str:
    """``fields.UnescapeValue``; raises :class:`FieldSelectorError` on a bad escape or an
    unescaped ``,`` or ``=``."""
    if not any(c in value for c in "\\,="):
        return value
    out: list[str] = []
    in_slash = False
    for c in value:
        if in_slash:
            if c not in "\\,=":
                raise FieldSelectorError(
                    f"invalid field selector: invalid escape sequence: \\{c}")
            out.append(c)
            in_slash = False
        elif c == "\\":
            in_slash = True
        elif c in ",=":
            # Go prints the rune with %v, which is its code point.
            raise FieldSelectorError(
                f"invalid field selector: unescaped character in value: {ord(c)}")
        else:
            out.append(c)
    if in_slash:
        raise FieldSelectorError("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def _split_terms(text: str) -> list[str]:
    # Split on commas that are not escaped by a backslash.
    terms: list[str] = []
    start, escaped = 0, False
    for i, c in enumerate(text):
        if escaped:
            escaped = False
        elif c == "\\":
            escaped = True
        elif c == ",":
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return terms


def _split_term(term: str) -> tuple[str, str, str] | None:
    for i in range(len(term)):
        for op in _TERM_OPERATORS:
            if term.startswith(op, i):
                return term[:i], op, term[i + len(op):]
    return None


def parse_selector(text: str | None) -> Selector:
    """Parse field selector syntax; raises :class:`FieldSelectorError`."""
    if not text:
        return EVERYTHING
    reqs: list[Requirement] = []
    for part in sorted(_split_terms(text)):
        if not part:
            continue
        split = _split_term(part)
        if split is None:
            raise FieldSelectorError(f"invalid selector: '{text}'; can't understand '{part}'")
        lhs, op, rhs = split
        reqs.append(Requirement(lhs, NOT_EQUALS if op == NOT_EQUALS else EQUALS,
                                unescape_value(rhs)))
    return Selector(tuple(reqs))


def parse(text: str | None) -> Selector:
    """Parse ``?fieldSelector=``; a bad selector is the apiserver's 400 :class:`StatusError`."""
    try:
        return parse_selector(text)
    except FieldSelectorError as err:
        raise bad_request(str(err)) from None


def check_supported(selector: Selector, supported: Collection[str], api_version: str = "",
                    kind: str = "") -> None:
    """Raise the apiserver's 400 for the first field the resource cannot be selected by
    (terms are checked in their sorted order, as the apiserver converts them). The
    version and kind are accepted for callers' convenience; the message names neither."""
    for r in selector.requirements:
        if r.field not in supported:
            raise unsupported_field(r.field)


def unsupported_field(field: str) -> StatusError:
    """``field label not supported: <field>`` as a 400 BadRequest."""
    return bad_request(f"field label not supported: {field}")

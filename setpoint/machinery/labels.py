"""Label selectors: the string syntax, ``metav1.LabelSelector``, and matching.

The parser is a port of ``k8s.io/apimachinery/pkg/labels/selector.go`` (same lexer, same
grammar, same error texts), so a bad ``?labelSelector=`` gets the apiserver's exact 400.
A parsed :class:`Selector` is compiled for speed: it runs on every list item and every
watch event, so equality requirements are checked first with plain dict lookups and the
rest with precomputed frozensets.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from setpoint.machinery import fielderrors as fe
from setpoint.machinery.errors import Cause, StatusError, bad_request
from setpoint.machinery.names import is_qualified_name, is_valid_label_value, validate_labels

__all__ = [
    "EVERYTHING", "NOTHING", "Requirement", "Selector", "SelectorError", "from_label_selector",
    "is_qualified_name", "is_valid_label_value", "new_requirement", "parse",
    "parse_requirements", "selector_from_label_selector", "selector_from_set",
    "validate_label_selector", "validate_labels",
]

IN, NOT_IN = "in", "notin"
EQUALS, DOUBLE_EQUALS, NOT_EQUALS = "=", "==", "!="
EXISTS, DOES_NOT_EXIST = "exists", "!"
GREATER_THAN, LESS_THAN = "gt", "lt"
_BINARY_OPERATORS = (IN, NOT_IN, EQUALS, DOUBLE_EQUALS, NOT_EQUALS, GREATER_THAN, LESS_THAN)
_ALL_OPERATORS = (*_BINARY_OPERATORS, EXISTS, DOES_NOT_EXIST)


class SelectorError(ValueError):
    """A selector that cannot be parsed or built; ``str()`` is Kubernetes' error text."""


# -- requirements ----------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Requirement:
    """One ``key op values`` term; build with :func:`new_requirement` to get validation."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether ``labels`` satisfy this requirement (Kubernetes' ``Requirement.Matches``)."""
        op = self.operator
        if op in (IN, EQUALS, DOUBLE_EQUALS):
            return self.key in labels and labels[self.key] in self.values
        if op in (NOT_IN, NOT_EQUALS):
            return self.key not in labels or labels[self.key] not in self.values
        if op == EXISTS:
            return self.key in labels
        if op == DOES_NOT_EXIST:
            return self.key not in labels
        if op in (GREATER_THAN, LESS_THAN):
            if self.key not in labels or len(self.values) != 1:
                return False
            try:
                have, want = _parse_int64(labels[self.key]), _parse_int64(self.values[0])
            except ValueError:
                return False
            return have > want if op == GREATER_THAN else have < want
        return False

    def __str__(self) -> str:
        prefix = "!" if self.operator == DOES_NOT_EXIST else ""
        if self.operator in (EXISTS, DOES_NOT_EXIST):
            return prefix + self.key
        symbol = {IN: " in ", NOT_IN: " notin ", GREATER_THAN: ">", LESS_THAN: "<"}.get(
            self.operator, self.operator)
        values = self.values[0] if len(self.values) == 1 else ",".join(sorted(self.values))
        if self.operator in (IN, NOT_IN):
            values = f"({values})"
        return f"{self.key}{symbol}{values}"


def _parse_int64(text: str) -> int:
    # strconv.ParseInt(s, 10, 64): optional sign, decimal digits only, int64 range.
    body = text[1:] if text[:1] in "+-" else text
    if not body.isascii() or not body.isdigit():
        raise ValueError(text)
    value = int(text)
    if not -(2**63) <= value < 2**63:
        raise ValueError(text)
    return value


def _field_error(path: str, value: Any, detail: str) -> str:
    return fe.error_text(fe.invalid(path, value, detail))


def new_requirement(key: str, operator: str, values: Iterable[str] = (),
                    path: str = "") -> Requirement:
    """``labels.NewRequirement``: validates the key, the operator's arity and the values;
    raises :class:`SelectorError` with the aggregated field errors."""
    vals = list(values)
    errs: list[Cause] = []
    key_errs = is_qualified_name(key)
    if key_errs:
        errs.append(fe.invalid(_child(path, "key"), key, "; ".join(key_errs)))
    values_path = _child(path, "values")
    if operator in (IN, NOT_IN):
        if not vals:
            errs.append(fe.invalid(values_path, fe.go_string_slice(vals),
                                   "for 'in', 'notin' operators, values set can't be empty"))
    elif operator in (EQUALS, DOUBLE_EQUALS, NOT_EQUALS):
        if len(vals) != 1:
            errs.append(fe.invalid(values_path, fe.go_string_slice(vals),
                                   "exact-match compatibility requires one single value"))
    elif operator in (EXISTS, DOES_NOT_EXIST):
        if vals:
            errs.append(fe.invalid(values_path, fe.go_string_slice(vals),
                                   "values set must be empty for exists and does not exist"))
    elif operator in (GREATER_THAN, LESS_THAN):
        if len(vals) != 1:
            errs.append(fe.invalid(values_path, fe.go_string_slice(vals),
                                   "for 'Gt', 'Lt' operators, exactly one value is required"))
        for i, v in enumerate(vals):
            try:
                _parse_int64(v)
            except ValueError:
                errs.append(fe.invalid(f"{values_path}[{i}]", v,
                                       "for 'Gt', 'Lt' operators, the value must be an integer"))
    else:
        errs.append(fe.not_supported(_child(path, "operator"), operator, _ALL_OPERATORS))
    for i, v in enumerate(vals):
        value_errs = is_valid_label_value(v)
        if value_errs:
            errs.append(fe.invalid(f"{values_path}[{i}][{key}]", v, "; ".join(value_errs)))
    if errs:
        raise SelectorError(fe.aggregate_text(errs))
    return Requirement(key, operator, tuple(vals))


def _child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


# -- selectors -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Selector:
    """An AND of requirements, sorted by key; ``matches`` is the hot path."""

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False
    _equal: tuple[tuple[str, str], ...] = field(init=False, repr=False, compare=False)
    _checks: tuple[Callable[[Mapping[str, str]], bool], ...] = field(
        init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        equal: list[tuple[str, str]] = []
        checks: list[Callable[[Mapping[str, str]], bool]] = []
        for r in self.requirements:
            if r.operator in (EQUALS, DOUBLE_EQUALS, IN) and len(r.values) == 1:
                equal.append((r.key, r.values[0]))
            else:
                checks.append(_compile(r))
        object.__setattr__(self, "_equal", tuple(equal))
        object.__setattr__(self, "_checks", tuple(checks))

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """Whether an object with these labels is selected."""
        if self.nothing:
            return False
        labels = labels or {}
        get = labels.get
        for key, value in self._equal:
            if get(key) != value:
                return False
        return all(check(labels) for check in self._checks)

    @property
    def empty(self) -> bool:
        """True when the selector does not restrict anything (``Everything``)."""
        return not self.nothing and not self.requirements

    @property
    def equalities(self) -> tuple[tuple[str, str], ...]:
        """The (key, value) pairs every selected object's labels hold: what a label index
        can look up (the selector's ``=``, ``==`` and single-value ``in`` terms)."""
        return self._equal

    def requires_exact_match(self, key: str) -> str | None:
        """The single value ``key`` must have, if the selector pins it (index lookups)."""
        for r in self.requirements:
            if r.key == key:
                if r.operator in (EQUALS, DOUBLE_EQUALS, IN) and len(r.values) == 1:
                    return r.values[0]
                return None
        return None

    def add(self, *requirements: Requirement) -> Selector:
        """A new selector with more requirements (kept sorted by key)."""
        reqs = sorted((*self.requirements, *requirements), key=lambda r: r.key)
        return Selector(tuple(reqs))

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


def _compile(r: Requirement) -> Callable[[Mapping[str, str]], bool]:
    key, values = r.key, frozenset(r.values)
    op = r.operator
    if op in (IN, EQUALS, DOUBLE_EQUALS):
        return lambda ls: key in ls and ls[key] in values
    if op in (NOT_IN, NOT_EQUALS):
        return lambda ls: key not in ls or ls[key] not in values
    if op == EXISTS:
        return lambda ls: key in ls
    if op == DOES_NOT_EXIST:
        return lambda ls: key not in ls
    return r.matches


EVERYTHING = Selector()
NOTHING = Selector(nothing=True)


def selector_from_set(labels: Mapping[str, str] | None) -> Selector:
    """A selector matching exactly these labels (``SelectorFromSet``, not validated)."""
    if not labels:
        return EVERYTHING
    return Selector(tuple(Requirement(k, EQUALS, (v,)) for k, v in sorted(labels.items())))


# -- the string syntax -----------------------------------------------------------------------

_ERROR, _END, _CLOSE, _COMMA, _NOT, _DEQ, _EQ, _GT, _ID, _IN, _LT, _NEQ, _NOTIN, _OPEN = range(14)
_LITERALS = {
    ")": _CLOSE, ",": _COMMA, "!": _NOT, "==": _DEQ, "=": _EQ, ">": _GT, "in": _IN, "<": _LT,
    "!=": _NEQ, "notin": _NOTIN, "(": _OPEN,
}
_SPECIAL = frozenset("=!(),><")
_WHITESPACE = frozenset(" \t\r\n")


def _lex(s: str) -> list[tuple[int, str]]:
    """Tokens exactly as Kubernetes' Lexer produces them, ending with the end token."""
    out: list[tuple[int, str]] = []
    i, n = 0, len(s)
    while True:
        while i < n and s[i] in _WHITESPACE:
            i += 1
        if i >= n:
            out.append((_END, ""))
            return out
        if s[i] in _SPECIAL:
            # The longest run of special characters that still spells an operator.
            buf, last, last_end = "", None, i
            j = i
            while j < n and s[j] in _SPECIAL:
                buf += s[j]
                if buf in _LITERALS:
                    last, last_end = (_LITERALS[buf], buf), j + 1
                elif last is not None:
                    break
                j += 1
            if last is None:
                out.append((_ERROR, f"error expected: keyword found '{buf}'"))
                i = j
            else:
                out.append(last)
                i = last_end
        else:
            j = i
            while j < n and s[j] not in _SPECIAL and s[j] not in _WHITESPACE:
                j += 1
            word = s[i:j]
            out.append((_LITERALS.get(word, _ID), word))
            i = j


_OPERATOR_NAMES = ", ".join(("in", "notin", "=", "==", "!=", "gt", "lt"))


class _Parser:
    def __init__(self, text: str) -> None:
        self.items = _lex(text)
        self.pos = 0

    def _peek(self, values: bool) -> tuple[int, str]:
        tok, lit = self.items[self.pos]
        if values and tok in (_IN, _NOTIN):
            tok = _ID
        return tok, lit

    def _next(self, values: bool) -> tuple[int, str]:
        item = self._peek(values)
        self.pos += 1
        return item

    def parse(self) -> list[Requirement]:
        reqs: list[Requirement] = []
        while True:
            tok, lit = self._peek(True)
            if tok in (_ID, _NOT):
                try:
                    reqs.append(self._requirement())
                except SelectorError as err:
                    raise SelectorError(f"unable to parse requirement: {err}") from None
                t, lit2 = self._next(True)
                if t == _END:
                    return reqs
                if t == _COMMA:
                    t2, lit3 = self._peek(True)
                    if t2 not in (_ID, _NOT):
                        raise SelectorError(f"found '{lit3}', expected: identifier after ','")
                else:
                    raise SelectorError(f"found '{lit2}', expected: ',' or 'end of string'")
            elif tok == _END:
                return reqs
            else:
                raise SelectorError(f"found '{lit}', expected: !, identifier, or 'end of string'")

    def _requirement(self) -> Requirement:
        key, op = self._key_and_infer_operator()
        if op in (EXISTS, DOES_NOT_EXIST):
            return new_requirement(key, op)
        op = self._operator()
        values = self._values() if op in (IN, NOT_IN) else self._exact_value()
        return new_requirement(key, op, sorted(values))

    def _key_and_infer_operator(self) -> tuple[str, str]:
        op = ""
        tok, lit = self._next(True)
        if tok == _NOT:
            op = DOES_NOT_EXIST
            tok, lit = self._next(True)
        if tok != _ID:
            raise SelectorError(f"found '{lit}', expected: identifier")
        key_errs = is_qualified_name(lit)
        if key_errs:
            # The parser's path is a nil *field.Path, which Go prints as "<nil>".
            raise SelectorError(_field_error("<nil>", lit, "; ".join(key_errs)))
        t, _ = self._peek(True)
        if t in (_END, _COMMA) and op != DOES_NOT_EXIST:
            op = EXISTS
        return lit, op

    def _operator(self) -> str:
        tok, lit = self._next(False)
        ops = {_IN: IN, _EQ: EQUALS, _DEQ: DOUBLE_EQUALS, _GT: GREATER_THAN, _LT: LESS_THAN,
               _NOTIN: NOT_IN, _NEQ: NOT_EQUALS}
        if tok not in ops:
            raise SelectorError(f"found '{lit}', expected: {_OPERATOR_NAMES}")
        return ops[tok]

    def _values(self) -> set[str]:
        tok, lit = self._next(True)
        if tok != _OPEN:
            raise SelectorError(f"found '{lit}' expected: '('")
        tok, lit = self._peek(True)
        if tok in (_ID, _COMMA):
            values = self._identifiers()
            if self._next(True)[0] != _CLOSE:
                raise SelectorError(f"found '{lit}', expected: ')'")
            return values
        if tok == _CLOSE:
            self._next(True)
            return {""}
        raise SelectorError(f"found '{lit}', expected: ',', ')' or identifier")

    def _identifiers(self) -> set[str]:
        values: set[str] = set()
        while True:
            tok, lit = self._next(True)
            if tok == _ID:
                values.add(lit)
                t2, lit2 = self._peek(True)
                if t2 == _COMMA:
                    continue
                if t2 == _CLOSE:
                    return values
                raise SelectorError(f"found '{lit2}', expected: ',' or ')'")
            if tok == _COMMA:
                if not values:
                    values.add("")
                t2, _ = self._peek(True)
                if t2 == _CLOSE:
                    values.add("")
                    return values
                if t2 == _COMMA:
                    self._next(True)
                    values.add("")
            else:
                raise SelectorError(f"found '{lit}', expected: ',', or identifier")

    def _exact_value(self) -> set[str]:
        tok, _ = self._peek(True)
        if tok in (_END, _COMMA):
            return {""}
        tok, lit = self._next(True)
        if tok == _ID:
            return {lit}
        raise SelectorError(f"found '{lit}', expected: identifier")


def parse_requirements(text: str) -> list[Requirement]:
    """The requirements of a selector string, sorted by key; raises :class:`SelectorError`."""
    reqs = _Parser(text).parse()
    reqs.sort(key=lambda r: r.key)
    return reqs


def parse(text: str | None) -> Selector:
    """Parse ``?labelSelector=`` syntax (``a=b,c in (d,e),!f``); an empty string selects
    everything. Raises a 400 :class:`StatusError` worded as the apiserver words it."""
    if not text:
        return EVERYTHING
    try:
        return Selector(tuple(parse_requirements(text)))
    except SelectorError as err:
        raise bad_request(str(err)) from None


# -- metav1.LabelSelector --------------------------------------------------------------------

_EXPRESSION_OPERATORS = {"In": IN, "NotIn": NOT_IN, "Exists": EXISTS,
                         "DoesNotExist": DOES_NOT_EXIST}


def from_label_selector(selector: Mapping[str, Any] | None) -> Selector:
    """``metav1.LabelSelectorAsSelector``: None selects nothing, ``{}`` everything.
    Raises :class:`SelectorError` for an invalid selector."""
    if selector is None:
        return NOTHING
    match_labels = selector.get("matchLabels") or {}
    expressions = selector.get("matchExpressions") or []
    if not match_labels and not expressions:
        return EVERYTHING
    reqs = [new_requirement(k, EQUALS, [v]) for k, v in match_labels.items()]
    for expr in expressions:
        op = _EXPRESSION_OPERATORS.get(expr.get("operator", ""))
        if op is None:
            raise SelectorError(
                f"{fe.go_quote(str(expr.get('operator', '')))} is not a valid label selector "
                "operator")
        reqs.append(new_requirement(expr.get("key", ""), op, list(expr.get("values") or [])))
    return EVERYTHING.add(*reqs)


selector_from_label_selector = from_label_selector


def to_label_selector_string(selector: Mapping[str, Any] | None) -> str:
    """The string form of a ``metav1.LabelSelector`` (what ``status.selector`` shows)."""
    return str(from_label_selector(selector))


def validate_label_selector(selector: Mapping[str, Any] | None, path: str,
                            allow_invalid_label_values: bool = False) -> list[Cause]:
    """``ValidateLabelSelector``: labels, operators, keys and values of a LabelSelector."""
    if selector is None:
        return []
    causes = validate_labels(selector.get("matchLabels"), f"{path}.matchLabels")
    for i, expr in enumerate(selector.get("matchExpressions") or []):
        p = f"{path}.matchExpressions[{i}]"
        op = expr.get("operator", "")
        values: Sequence[str] = expr.get("values") or []
        if op in ("In", "NotIn"):
            if not values:
                causes.append(fe.required(
                    f"{p}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
        elif op in ("Exists", "DoesNotExist"):
            if values:
                causes.append(fe.forbidden(
                    f"{p}.values",
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
        else:
            causes.append(fe.invalid(f"{p}.operator", op, "not a valid selector operator"))
        key = expr.get("key", "")
        causes.extend(fe.invalid(f"{p}.key", key, m) for m in is_qualified_name(key))
        if not allow_invalid_label_values:
            for j, v in enumerate(values):
                causes.extend(fe.invalid(f"{p}.values[{j}]", v, m)
                              for m in is_valid_label_value(v))
    return causes


def selector_status_error(err: SelectorError) -> StatusError:
    """The 400 a server answers for a selector it cannot use."""
    return bad_request(str(err))

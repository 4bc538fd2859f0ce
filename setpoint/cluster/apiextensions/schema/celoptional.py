"""CEL optional types (cel-go ``cel.OptionalTypes()``, enabled by the Kubernetes base
environment since 1.28: apiserver pkg/cel/environment/base.go).

celpy's grammar has no optional syntax, so this module extends celpy's own ``cel.lark`` with
cel-go's productions (parser/gen/CEL.g4): optional field selection ``x.?f``, optional index
``x[?i]``, optional list elements ``[?e]`` and map entries ``{?k: v}`` (with the trailing
comma cel-go's grammar allows in list and map literals). The parse tree is then rewritten the
way cel-go reads it: qualified function names (``optional.of/none/ofNonZeroValue(...)``,
ext.Sets' ``sets.*(...)``) become global calls, and ``o.optMap(x, e)`` / ``o.optFlatMap(x,
e)`` become the conditional cel-go's macros expand to (cel-go cel/library.go). The
evaluation of the new nodes lives in celruntime.py.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import celpy
import lark
from celpy import celtypes
from celpy.celparser import CELParseError, CELParser
from celpy.evaluation import CELEvalError

from . import celparsercache
from .openapi import MISSING

# each edit of celpy's grammar: (the production it replaces, cel-go's production)
_GRAMMAR_EDITS = (
    ("member         : member_dot | member_dot_arg | member_index | member_object | primary",
     "member         : member_dot | member_dot_arg | member_index | member_object\n"
     "               | member_dot_opt | member_index_opt | primary\n"
     "member_dot_opt : member \".\" \"?\" IDENT\n"
     "member_index_opt : member \"[\" \"?\" expr \"]\""),
    ("list_lit       : \"[\" [exprlist] \"]\"",
     "list_lit       : \"[\" [listelems] \"]\" | \"[\" \",\" \"]\"\n"
     "listelems      : _listelems [\",\"]\n"
     "_listelems     : _listelem | _listelems \",\" _listelem\n"
     "_listelem      : expr | opt_elem\n"
     "opt_elem       : \"?\" expr"),
    ("map_lit        : \"{\" [mapinits] \"}\"",
     "map_lit        : \"{\" [mapentries] \"}\" | \"{\" \",\" \"}\"\n"
     "mapentries     : _mapentries [\",\"]\n"
     "_mapentries    : mapentry | _mapentries \",\" mapentry\n"
     "mapentry       : (expr | opt_elem) \":\" expr"),
)

# functions named inside a package (cel-go resolves ``optional.of`` as one qualified name),
# called as globals named so after the rewrite: the optional library's and ext.Sets()'s
PACKAGE_FUNCTIONS = {"optional": ("of", "none", "ofNonZeroValue"),
                     "sets": ("contains", "equivalent", "intersects"),
                     "ip": ("isCanonical",),
                     "strings": ("quote",),  # ext/strings.go, version >= 1
                     # library/format.go: one function per named format, and named()
                     "format": ("named", "dns1123Label", "dns1123Subdomain", "dns1035Label",
                                "qualifiedName", "dns1123LabelPrefix",
                                "dns1123SubdomainPrefix", "dns1035LabelPrefix", "labelValue",
                                "uri", "uuid", "byte", "date", "datetime")}


def _grammar() -> str:
    text = (Path(celpy.__file__).parent / "cel.lark").read_text()
    for old, new in _GRAMMAR_EDITS:
        if old not in text:  # a celpy release changed its grammar: fail loudly, not subtly
            raise RuntimeError(f"celpy grammar has no production {old!r}")
        text = text.replace(old, new)
    return text


_PARSER_OPTIONS: dict[str, Any] = {
    "parser": "lalr", "start": "expr", "g_regex_flags": re.M, "propagate_positions": True,
    "maybe_placeholders": False, "priority": "invert"}
# saved with the analysis by the function's qualified name, as pickle saves functions
_LEXER_CALLBACKS = {"IDENT": CELParser.ambiguous_literals}


@functools.cache
def parser() -> lark.Lark:
    """celpy's parser over the extended grammar, built once a process (like celpy's own)
    and its LALR analysis (about 0.6 s of CPU, the first CRD rule's compile waited on it)
    kept in the user's cache for the next process (celparsercache.py)."""
    grammar = _grammar()
    key = f"{grammar}\n{lark.__version__}\n{sorted(_PARSER_OPTIONS.items())!r}"
    return celparsercache.load_or_build(
        key,
        lambda: lark.Lark(grammar, lexer_callbacks=_LEXER_CALLBACKS, **_PARSER_OPTIONS),
        lark.Lark.load)


def parse(text: str) -> lark.Tree[lark.Token]:
    """Parse ``text``; celpy's CELParseError (with line and column) when it does not."""
    return expand(parse_unexpanded(text))


def parse_unexpanded(text: str) -> lark.Tree[lark.Token]:
    """``text``'s celpy parse tree before the rewrite (lark's LALR parser, which does not
    recurse however deep the tree); CELParseError as ``parse``'s."""
    try:
        return parser().parse(text)
    except (lark.exceptions.UnexpectedToken, lark.exceptions.UnexpectedCharacters) as ex:
        raise CELParseError(ex.get_context(text), *ex.args, line=ex.line,
                                  column=ex.column) from ex
    except (lark.exceptions.LexError, lark.exceptions.ParseError) as ex:
        raise CELParseError(str(ex).splitlines()[0], *ex.args) from ex


def expand(tree: lark.Tree[lark.Token]) -> lark.Tree[lark.Token]:
    """The rewrite of a parse tree (package functions, optMap/optFlatMap), made in place; it
    recurses once a level of the tree."""
    return _expand(tree)


# -- macro expansion ----------------------------------------------------------------------------

def _wrap(node: lark.Tree[lark.Token], *layers: str) -> lark.Tree[lark.Token]:
    for data in reversed(layers):
        node = lark.Tree(data, [node], meta=node.meta)
    return node


_TO_MEMBER = ("expr", "conditionalor", "conditionaland", "relation", "addition",
              "multiplication", "unary", "member")


@functools.cache
def _template(kind: str) -> str:
    # cel-go cel/library.go optMap: `target.hasValue() ? optional.of(<bind x to
    # target.value()> e) : optional.none()`; optFlatMap omits the optional.of. celpy has no
    # bind, so a one-element map stands for it.
    if kind == "optMap":
        return ("__t.hasValue() ? optional.of([__t.value()].map(__x, __e)[0])"
                " : optional.none()")
    return "__t.hasValue() ? [__t.value()].map(__x, __e)[0] : optional.none()"


def _substitute(tree: lark.Tree[lark.Token], target: lark.Tree[lark.Token],
                var: lark.Token, body: lark.Tree[lark.Token]) -> lark.Tree[lark.Token]:
    """``tree`` with the placeholders ``__t`` (a member), ``__x`` and ``__e`` filled in."""
    def walk(node: Any) -> Any:
        if not isinstance(node, lark.Tree):
            return node
        if node.data == "member" and _ident_name(node) == "__t":
            return target
        if node.data == "expr" and _ident_name(node) == "__e":
            return body
        if node.data == "ident" and str(node.children[0]) == "__x":
            return lark.Tree("ident", [var], meta=node.meta)
        return lark.Tree(node.data, [walk(c) for c in node.children], meta=node.meta)
    result: lark.Tree[lark.Token] = walk(tree)
    return result


def _ident_name(node: lark.Tree[lark.Token]) -> str | None:
    """The name when ``node`` is nothing but an identifier."""
    while isinstance(node, lark.Tree) and len(node.children) == 1:
        if node.data == "ident":
            return str(node.children[0])
        child = node.children[0]
        if not isinstance(child, lark.Tree):
            return None
        node = child
    return None


def _expand(tree: lark.Tree[lark.Token]) -> lark.Tree[lark.Token]:
    # in place: the tree is the parse's own, and a copy of a rule's every node (tens of
    # thousands for a long one) was most of what its compile allocated
    def walk(node: Any) -> Any:
        if not isinstance(node, lark.Tree):
            return node
        kids: list[Any] = node.children
        for i, kid in enumerate(kids):
            if isinstance(kid, lark.Tree):
                kids[i] = walk(kid)
        if node.data != "member_dot_arg":
            return node
        target = node.children[0]
        name_token: Any = node.children[1]
        name = str(name_token)
        args = list(node.children[2].children) if len(node.children) > 2 else []
        package = _ident_name(target) or ""
        if name in PACKAGE_FUNCTIONS.get(package, ()):
            token = lark.Token("IDENT", f"{package}.{name}", name_token.start_pos,
                               name_token.line, name_token.column)
            call = lark.Tree("ident_arg", [token, *node.children[2:]], meta=node.meta)
            return _wrap(call, "primary")
        if name in ("optMap", "optFlatMap") and len(args) == 2 and _ident_name(args[0]):
            var = lark.Token("IDENT", _ident_name(args[0]) or "")
            expanded = _substitute(parse_template(_template(name)), target, var, args[1])
            return _wrap(lark.Tree("paren_expr", [expanded], meta=node.meta), "primary")
        return node
    result: lark.Tree[lark.Token] = walk(tree)
    return result


def parse_template(text: str) -> lark.Tree[lark.Token]:
    return _expand(parser().parse(text))


# -- values -------------------------------------------------------------------------------------

class OptionalValue:
    """A CEL ``optional_type(T)`` value: ``optional.of(v)`` or ``optional.none()``."""

    __slots__ = ("_value",)

    def __init__(self, value: Any = MISSING) -> None:
        self._value = value

    def has_value(self) -> bool:
        return self._value is not MISSING

    def get(self) -> Any:
        if self._value is MISSING:
            raise ValueError("optional.none() dereference")
        return self._value

    def or_value(self, default: Any) -> Any:
        return default if self._value is MISSING else self._value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OptionalValue) and self._value == other._value

    def __hash__(self) -> int:
        return hash(("optional", self._value if self.has_value() else None))

    def __repr__(self) -> str:
        return "optional.none()" if self._value is MISSING else f"optional.of({self._value!r})"


NONE = OptionalValue()


def select(target: Any, name: str) -> OptionalValue:
    """``target.?name``: the field when it is set, else ``optional.none()``."""
    if isinstance(target, OptionalValue):
        if not target.has_value():
            return target
        target = target.get()
    if isinstance(target, celtypes.MapType | dict):
        key = celtypes.StringType(name)
        return OptionalValue(target[key]) if key in target else NONE
    raise TypeError(f"type '{type(target).__name__}' does not support field selection")


def index(target: Any, key: Any) -> OptionalValue:
    """``target[?key]``: the entry when it exists, else ``optional.none()``."""
    if isinstance(target, OptionalValue):
        if not target.has_value():
            return target
        target = target.get()
    if isinstance(target, celtypes.ListType | list):
        if not isinstance(key, int) or isinstance(key, bool):
            raise TypeError("no such overload")
        return OptionalValue(target[key]) if 0 <= key < len(target) else NONE
    if isinstance(target, celtypes.MapType | dict):
        return OptionalValue(target[key]) if key in target else NONE
    raise TypeError("no such overload")


def _of_non_zero_value(value: Any) -> OptionalValue:
    # cel-go optional.ofNonZeroValue: none for the zero value of the type (IsZeroValue)
    zero = value is None or (not isinstance(value, celtypes.BoolType | bool | int | float)
                             and hasattr(value, "__len__") and len(value) == 0)
    if isinstance(value, bool | int | float) and not value:
        zero = True
    return NONE if zero else OptionalValue(value)


def _or(a: OptionalValue, b: OptionalValue) -> OptionalValue:
    if not isinstance(a, OptionalValue) or not isinstance(b, OptionalValue):
        raise TypeError("no such overload")
    return a if a.has_value() else b


def _optional(method: str) -> Any:
    def call(o: Any, *args: Any) -> Any:
        if not isinstance(o, OptionalValue):
            raise TypeError("no such overload")
        if method == "hasValue":
            return celtypes.BoolType(o.has_value())
        if method == "value":  # cel-go's error value, returned rather than raised
            return o.get() if o.has_value() else CELEvalError("optional.none() dereference")
        return o.or_value(args[0])
    return call


FUNCTIONS: dict[str, Any] = {
    "optional.of": OptionalValue,
    "optional.none": lambda: NONE,
    "optional.ofNonZeroValue": _of_non_zero_value,
    "hasValue": _optional("hasValue"),
    "value": _optional("value"),
    "orValue": _optional("orValue"),
    "or": _or,
}

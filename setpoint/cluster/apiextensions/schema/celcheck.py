"""Static checking and cost estimation of CEL rules against a structural schema.

cel-go type-checks every rule against the schema and estimates its worst-case cost from the
declared sizes (``maxLength``, ``maxItems``, ``maxProperties``; unbounded sizes are bounded by
the 3 MiB request limit). This is a smaller checker over the ``celpy`` parse tree: it resolves
``self``/``oldSelf`` field selections and comprehension variables through the schema, reports
undefined fields and undeclared references, checks that the rule is boolean, and estimates the
cost the same way in spirit (per-element cost times the bound of the iterated size).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import lark

from .celcost import (
    T,
    comprehension_cost,
    literal_length,
    method_cost,
    sized,
)
from .cellib import FUNCTIONS
from .celoverloads import (
    LIST_ELEMENTS,
    OPERATORS,
    QUANTITY_ONLY,
    SIZED,
    STRING_METHODS,
    cel_type_name,
    equivalent,
    has_overload,
    is_free,
    optional_of,
    type_name,
    unifies,
)
from .celprogram import CheckError, ParseTree, ProgramError, compile_expression, parse
from .celsource import (
    as_rule,
    as_token,
    element_positions,
    expr_position,
    format_error,
    position_at,
    string_literal,
)
from .celstrings import check_format
from .goregexp import GoRegexpError, compile_go

_MACROS = {"all", "exists", "exists_one", "map", "filter",
           # ext.TwoVarComprehensions (base.go, 1.32): (index or key, value) forms
           "existsOne", "transformList", "transformMap", "transformMapEntry"}
_TWO_VAR_ONLY = {"existsOne", "transformList", "transformMap", "transformMapEntry"}
_GLOBALS = {"has", "size", "int", "uint", "double", "string", "bytes", "bool", "duration",
            "timestamp", "type", "dyn", "matches", "quantity", "isQuantity", "url", "isURL",
            "ip", "isIP", "cidr", "isCIDR", "strings.quote"}
_BUILTIN_METHODS = {"hasValue", "value", "orValue", "or", "validate",
                    "contains", "startsWith", "endsWith", "matches", "size", "min",
                    "getDate", "getDayOfMonth", "getDayOfWeek", "getDayOfYear", "getFullYear",
                    "getMonth", "getHours", "getMilliseconds", "getMinutes", "getSeconds"}
_TYPE_NAMES = {"int", "uint", "double", "string", "bytes", "bool", "list", "map", "null_type",
               "type", "duration", "timestamp"}
_BOOL_METHODS = {"contains", "startsWith", "endsWith", "matches", "isSorted", "isURL", "isIP",
                 "isCIDR", "isQuantity", "isLessThan", "isGreaterThan", "isInteger",
                 "isLoopback", "isUnspecified", "isGlobalUnicast", "containsIP",
                 "isLinkLocalMulticast", "isLinkLocalUnicast",
                 "containsCIDR", "all", "exists", "exists_one"}


class Checker(lark.visitors.Interpreter[lark.Token, T]):
    """Checks one parsed rule; ``variables`` maps names to their types."""

    def __init__(self, text: str, variables: dict[str, T], *,
                 lenient_functions: bool = False) -> None:
        self.text = text
        # admission's compilers declare libraries this checker does not know (the
        # authorizer's): there, a call to an unknown function is taken as dyn, not an error
        self.lenient_functions = lenient_functions
        self.scopes: list[dict[str, T]] = [variables]
        self.uses: set[str] = set()
        # constant regexps: cel-go's ValidateRegexLiterals checks argument 0 of matches
        # after type-checking ("literal"); the program's regex optimizations (cel-go
        # MatchesRegexOptimization under OptOptimize, apiserver pkg/cel/library/regex.go
        # Find/FindAllRegexOptimization) compile the pattern when it is built ("program")
        self.patterns: list[tuple[str, lark.Token]] = []
        # cel-go's ValidateHomogeneousAggregateLiterals (cel/validator.go, which the
        # apiserver's base environment enables, pkg/cel/environment/base.go): a list or map
        # literal's elements (keys, values) of different types, by position; literals inside
        # a call named format are exempt (ext/formatting.go stringFormatValidator.Configure)
        self.mixed: dict[int, str] = {}
        self._in_format = 0
        # cel-go reports every error of a phase, not the first (checker/errors.go
        # typeErrors over common.Errors): an expression in error takes the error type,
        # which is assignable to anything (checker/types.go isDynOrError), so checking goes
        # on without a cascade. Macro expansion errors are the parser's (parser/macro.go):
        # when there is one, the checker never runs (cel/env.go Compile).
        self.errors: list[tuple[int, int, str]] = []
        self.syntax_errors: list[tuple[int, int, str]] = []

    def fail(self, token: Any, message: str) -> T:
        """Record a type-check error at ``token``; the erroneous expression's type."""
        self.errors.append(_issue(self.text, token, message))
        return T("dyn")

    def fail_syntax(self, token: Any, message: str) -> T:
        """Record a macro expansion error (a parse error in cel-go) at ``token``."""
        self.syntax_errors.append(_issue(self.text, token, message))
        return T("dyn")

    def run(self, tree: ParseTree) -> T:
        """The type of ``tree``; CheckError with every error, as cel-go's ``Issues.Err()``."""
        result = self.visit(tree)
        found = self.syntax_errors or self.errors
        if found:
            raise CheckError(_display(found))
        return result

    def _no_overload(self, pos: int, name: str, args: list[T], instance: bool = False
                     ) -> bool:
        """cel-go's ``found no matching overload`` at ``pos``, when the types are nameable;
        whether it was reported."""
        names = [cel_type_name(a) for a in args]
        if any(n is None for n in names):
            return False
        if instance:
            signature = f"{names[0]}.({', '.join(str(n) for n in names[1:])})"
        else:
            signature = f"({', '.join(str(n) for n in names)})"
        self.fail(position_at(self.text, pos),
                  f"found no matching overload for '{name}' applied to '{signature}'")
        return True

    def _call_at(self, name_token: Any) -> Any:
        """Where cel-go places a call: its "(" (parser.go VisitMemberCall's ``open``,
        VisitIdentOrGlobalCall's ``op``)."""
        return position_at(self.text, self.text.find("(", as_token(name_token).end_pos or 0))

    def _binary(self, kids: list[Any]) -> tuple[ParseTree, T, T]:
        """A binary operator's tree and its operands' types, the overload checked."""
        op_tree, right_tree = kids
        left = self.visit(op_tree.children[0])
        right = self.visit(right_tree)
        symbol, name = OPERATORS.get(op_tree.data, ("", ""))
        if name and not has_overload(name, left, right):
            self._no_overload(op_tree.meta.end_pos - len(symbol), name, [left, right])
        return op_tree, left, right

    def _kids(self, tree: ParseTree) -> list[Any]:
        return [c for c in tree.children if c is not None]

    def _sum(self, parts: list[T]) -> float:
        return sum(p.cost for p in parts)

    # structure ---------------------------------------------------------------------------
    def expr(self, tree: ParseTree) -> T:
        kids = [self.visit(c) for c in self._kids(tree)]
        if len(kids) == 3:
            return T(kids[1].kind, kids[1].schema, kids[1].elem, max(kids[1].size, kids[2].size),
                     kids[0].cost + max(kids[1].cost, kids[2].cost), kids[1].fields)
        return kids[0]

    def _logical(self, tree: ParseTree) -> T:
        trees = self._kids(tree)
        kids = [self.visit(c) for c in trees]
        if len(kids) == 1:
            return kids[0]
        name, symbol = ("_&&_", "&&") if tree.data == "conditionaland" else ("_||_", "||")
        if not has_overload(name, kids[0], kids[1]):
            pos = self.text.find(symbol, trees[0].meta.end_pos, trees[1].meta.start_pos)
            self._no_overload(pos, name, kids[:2])
        return T("bool", cost=self._sum(kids))

    conditionalor = _logical
    conditionaland = _logical

    def relation(self, tree: ParseTree) -> T:
        kids = self._kids(tree)
        if len(kids) == 1:
            return self.visit(kids[0])
        op_tree, left, right = self._binary(kids)
        # cost.go functionCost: equality and string/bytes ordering cost a tenth of the
        # smaller size (1 for scalars), `in` a list its size, the rest 1
        cost = left.cost + right.cost
        if op_tree.data == "relation_in":
            cost += right.size if right.kind == "list" else 1
        elif op_tree.data in ("relation_eq", "relation_ne") or left.kind in ("string", "bytes"):
            cost += math.ceil(0.1 * min(sized(left), sized(right)))
        else:
            cost += 1
        return T("bool", cost=cost)

    def _arith(self, tree: ParseTree) -> T:
        kids = self._kids(tree)
        if len(kids) == 1:
            return self.visit(kids[0])
        op_tree, left, right = self._binary(kids)
        kind = left.kind if left.kind == right.kind else "dyn"
        if {left.kind, right.kind} == {"timestamp", "duration"}:
            kind = "timestamp"
        elif left.kind == right.kind == "timestamp" and op_tree.data == "addition_sub":
            kind = "duration"
        size = left.size + right.size if kind in ("string", "list", "bytes") else 1.0
        extra = math.ceil(0.1 * size) if kind in ("string", "bytes") else 1
        return T(kind, None, left.elem, size, left.cost + right.cost + extra)

    addition = _arith
    multiplication = _arith

    def unary(self, tree: ParseTree) -> T:
        kids = self._kids(tree)
        if len(kids) == 1:
            return self.visit(kids[0])
        inner = self.visit(kids[1])
        # a call with no matching overload takes the error type (checker/checker.go
        # resolveOverload), which no enclosing call reports again
        if kids[0].data == "unary_not":
            if inner.kind not in ("bool", "dyn") and self._no_overload(
                    tree.meta.start_pos, "!_", [inner]):
                return T("dyn", cost=inner.cost + 1)
            return T("bool", cost=inner.cost + 1)
        if inner.kind not in ("int", "double", "dyn") and self._no_overload(
                tree.meta.start_pos, "-_", [inner]):
            return T("dyn", cost=inner.cost + 1)
        return T(inner.kind, cost=inner.cost + 1)

    def member(self, tree: ParseTree) -> T:
        return self.visit(self._kids(tree)[0])

    primary = member
    paren_expr = member

    # leaves ------------------------------------------------------------------------------
    def literal(self, tree: ParseTree) -> T:
        token = as_token(tree.children[0])
        kind = {"INT_LIT": "int", "UINT_LIT": "uint", "FLOAT_LIT": "double",
                "STRING_LIT": "string", "MLSTRING_LIT": "string", "BYTES_LIT": "bytes",
                "BOOL_LIT": "bool", "NULL_LIT": "null"}.get(token.type, "dyn")
        size = float(literal_length(str(token))) if kind in ("string", "bytes") else 1.0
        return T(kind, size=size)

    def ident(self, tree: ParseTree) -> T:
        token = tree.children[0]
        name = str(token)
        for scope in reversed(self.scopes):
            if name in scope:
                if name in ("self", "oldSelf"):
                    self.uses.add(name)
                t = scope[name]  # cost.go costIdent: every identifier costs 1
                return T(t.kind, t.schema, t.elem, t.size, 1, t.fields)
        if name in _TYPE_NAMES:
            return T("type")
        return self.fail(token, f"undeclared reference to '{name}' (in container '')")

    def list_lit(self, tree: ParseTree) -> T:
        kids = [k for k in self._kids(tree) if isinstance(k, lark.Tree)]
        trees = list(kids[0].children) if kids else []
        elems = [self._element(e) for e in trees]
        # (a list reports its first mismatch only: validator.go breaks out of the loop)
        inner = [as_rule(e).children[0] if as_rule(e).data == "opt_elem" else e for e in trees]
        positions = element_positions(self.text, inner, int(tree.meta.start_pos))
        self._homogeneous(elems, trees, positions, first_only=True)
        elem = elems[0] if elems and all(e.kind == elems[0].kind for e in elems) else T("dyn")
        return T("list", None, elem, float(len(elems)), self._sum(elems) + 10)

    def map_lit(self, tree: ParseTree) -> T:
        kids = [k for k in self._kids(tree) if isinstance(k, lark.Tree)]
        parts: list[T] = []
        trees: list[ParseTree] = []
        for entry in kids[0].children if kids else []:
            key_tree, value_tree = as_rule(entry).children
            optional = as_rule(key_tree).data == "opt_elem"
            key = as_rule(as_rule(key_tree).children[0]) if optional else as_rule(key_tree)
            parts.append(self.visit(key))
            parts.append(self._element(lark.Tree("opt_elem", [value_tree],
                                                 meta=as_rule(value_tree).meta)
                                       if optional else as_rule(value_tree)))
            trees += [key, as_rule(value_tree)]
        positions = element_positions(self.text, trees, int(tree.meta.start_pos))
        self._homogeneous(parts[0::2], trees[0::2], positions[0::2], first_only=False)
        self._homogeneous(parts[1::2], trees[1::2], positions[1::2], first_only=False)
        return T("map", None, parts[1] if len(parts) > 1 else T("dyn"),
                 float(len(parts) // 2), self._sum(parts) + 30)

    def _homogeneous(self, types: list[T], trees: list[Any], positions: list[int], *,
                     first_only: bool) -> None:
        """Record where a literal's element types first disagree (cel-go's
        homogeneousAggregateLiteralValidator, "expected type 'E' but found 'F'")."""
        if self._in_format:
            return
        expected: T | None = None
        for t, pos in zip(types, positions, strict=True):
            if expected is None:
                expected = t
                continue
            if not equivalent(expected, t):
                self.mixed.setdefault(pos, (
                    f"expected type '{type_name(expected)}' but found '{type_name(t)}'"))
                if first_only:
                    return
            elif is_free(expected):
                expected = t  # an empty literal's type is the one it was joined with

    def _element(self, tree: ParseTree) -> T:
        """A list element or map value; ``?e`` must be optional and stands for its value
        (cel-go checker.go checkCreateList/checkCreateMap)."""
        if tree.data != "opt_elem":
            return self.visit(tree)
        inner = self.visit(as_rule(tree.children[0]))
        if inner.kind == "dyn":
            return inner
        if inner.kind != "optional":
            name = cel_type_name(inner) or inner.kind
            return self.fail(position_at(self.text, expr_position(self.text, tree.children[0])),
                             f"expected type 'optional_type({name})' but found '{name}'")
        e = inner.elem or T("dyn")
        return T(e.kind, e.schema, e.elem, e.size, inner.cost, e.fields, e.free)

    def member_object(self, tree: ParseTree) -> T:
        return self.fail(tree.children[0], "message construction is not supported")

    def dot_ident(self, tree: ParseTree) -> T:
        return self.fail(tree.children[0], f"undeclared reference to '{tree.children[0]}'")

    dot_ident_arg = dot_ident

    # selection ---------------------------------------------------------------------------
    def member_dot(self, tree: ParseTree, at: int | None = None) -> T:
        """``a.b``; cel-go places the selection (and its errors) at the dot (parser.go
        VisitSelect: newSelect(ctx.GetOp(), ...)), a has() presence test at ``at``."""
        target_tree, name_token = tree.children
        target = self.visit(as_rule(target_tree))
        if at is None:
            at = self.text.rfind(".", tree.meta.start_pos, as_token(name_token).start_pos or 0)
        return self._select(target, name_token, target.cost + (
            1 if target.kind in ("object", "map", "dyn") else 0), at)

    def member_dot_opt(self, tree: ParseTree) -> T:
        target_tree, name_token = tree.children
        target = self.visit(as_rule(target_tree))
        at = self.text.rfind(".?", tree.meta.start_pos, as_token(name_token).start_pos or 0)
        return optional_of(self._select(target, name_token, target.cost + 1, at))

    def member_index_opt(self, tree: ParseTree) -> T:
        return optional_of(self.member_index(tree))

    def _select(self, target: T, name_token: Any, cost: float, at: int) -> T:
        if target.kind == "optional":  # cel-go: selection on optional(T) is optional
            return optional_of(self._select(target.elem or T("dyn"), name_token, cost, at))
        name = str(name_token)
        if target.kind == "object":
            if name not in target.fields:
                if target.schema and target.schema.get("x-kubernetes-preserve-unknown-fields"):
                    return T("dyn", cost=cost)
                return self.fail(position_at(self.text, at), f"undefined field '{name}'")
            f = target.fields[name]
            return T(f.kind, f.schema, f.elem, f.size, cost, f.fields)
        if target.kind == "map":
            e = target.elem or T("dyn")
            return T(e.kind, e.schema, e.elem, e.size, cost, e.fields)
        if target.kind in ("dyn", "type"):
            return T("dyn", cost=cost)
        # (at the selection: the dot, or has()'s "(" for a presence test)
        self.fail(position_at(self.text, at),
                  f"type '{cel_type_name(target) or target.kind}' does not support field "
                  "selection")
        return T("dyn", cost=cost)

    def member_index(self, tree: ParseTree) -> T:
        target = self.visit(as_rule(tree.children[0]))
        index = self.visit(as_rule(tree.children[1]))
        if target.kind == "optional":  # indexing an optional(T) is optional
            inner = target.elem or T("dyn")
            e = inner.elem if inner.kind in ("list", "map") and inner.elem else T("dyn")
            return optional_of(T(e.kind, e.schema, e.elem, e.size,
                               target.cost + index.cost + 1, e.fields))
        e = target.elem if target.kind in ("list", "map") and target.elem else T("dyn")
        return T(e.kind, e.schema, e.elem, e.size, target.cost + index.cost + 1, e.fields)

    # calls -------------------------------------------------------------------------------
    def _args(self, tree: ParseTree | lark.Token | None) -> list[Any]:
        return [c for c in as_rule(tree).children if c is not None] if tree is not None else []

    def ident_arg(self, tree: ParseTree) -> T:
        name_token = tree.children[0]
        name = str(name_token)
        arg_trees = self._args(tree.children[1] if len(tree.children) > 1 else None)
        if name == "has":
            # parser.go VisitIdentOrGlobalCall: a macro call, and the presence test its
            # expansion makes (macro.go MakeHas), sit at the call's "("
            paren = self.text.find("(", as_token(name_token).end_pos or 0)
            if len(arg_trees) != 1 or _select_of(arg_trees[0]) is None:
                return self.fail_syntax(position_at(self.text, paren),
                                        "invalid argument to has() macro")
            inner = self.member_dot(_select_of(arg_trees[0]), at=paren)
            return T("bool", cost=inner.cost)
        if name.startswith("optional."):  # optional.of/none/ofNonZeroValue (celoptional.py)
            args = [self.visit(a) for a in arg_trees]
            if len(args) != (0 if name == "optional.none" else 1):
                return self.fail(self._call_at(name_token),
                                 f"found no matching overload for '{name}'")
            return optional_of(args[0] if args else T("dyn", free=True), self._sum(args) + 1)
        if name.startswith("format."):  # library/format.go
            args = [self.visit(a) for a in arg_trees]
            if len(args) != (1 if name == "format.named" else 0):
                return self.fail(self._call_at(name_token),
                                 f"found no matching overload for '{name}'")
            cost = self._sum(args) + 1
            return T("optional", elem=T("format"), cost=cost) if name == "format.named" \
                else T("format", cost=cost)
        if name == "ip.isCanonical":  # library/ip.go: (string) -> bool
            args = [self.visit(a) for a in arg_trees]
            size = args[0].size if args else 1
            return T("bool", cost=self._sum(args) + math.ceil(0.2 * size))
        if name.startswith("sets."):  # ext/sets.go: (list(T), list(T)) -> bool
            args = [self.visit(a) for a in arg_trees]
            if len(args) != 2 or any(a.kind not in ("list", "dyn") for a in args):
                if not self._no_overload(
                        self.text.find("(", as_token(name_token).end_pos or 0), name, args):
                    self.fail(self._call_at(name_token), f"found no matching overload for '{name}'")
                return T("dyn")
            factor = 2 if name == "sets.equivalent" else 1
            return T("bool", cost=self._sum(args) + 1 + math.ceil(
                args[0].size * args[1].size * factor))
        args = [self.visit(a) for a in arg_trees]  # (cel-go checks the arguments first)
        if name not in _GLOBALS:
            if self.lenient_functions:
                return T("dyn", cost=self._sum(args) + 1)
            return self.fail(self._call_at(name_token),
                             f"undeclared reference to '{name}' (in container '')")
        for i, arg_tree in enumerate(arg_trees[:2] if name == "matches" else []):
            if lit := string_literal(arg_tree):
                self.patterns.append(("literal" if i == 0 else "program", lit))
        if name == "size" and len(args) == 1 and args[0].kind not in SIZED:
            self._no_overload(self.text.find("(", as_token(name_token).end_pos or 0), name,
                              args)
        cost = self._sum(args) + 1
        kind = {"size": "int", "int": "int", "uint": "uint", "double": "double",
                "string": "string", "bytes": "bytes", "bool": "bool", "duration": "duration",
                "timestamp": "timestamp", "type": "type", "matches": "bool",
                "isQuantity": "bool", "isURL": "bool", "isIP": "bool", "isCIDR": "bool",
                "quantity": "quantity", "url": "url", "ip": "ip", "cidr": "cidr",
                "strings.quote": "string"}.get(name, "dyn")
        if name == "dyn" and args:
            return T("dyn", args[0].schema, args[0].elem, args[0].size, cost, args[0].fields)
        if name in ("matches",) and args:
            cost += math.ceil(0.1 * args[0].size)
        return T(kind, cost=cost, size=args[0].size if kind == "string" and args else 1.0)

    def member_dot_arg(self, tree: ParseTree) -> T:
        target_tree, name_token = tree.children[0], tree.children[1]
        name = str(name_token)
        if name == "format":  # (its target and arguments, at any depth: inExemptFunction)
            self._in_format += 1
            try:
                return self._member_call(tree, target_tree, name_token)
            finally:
                self._in_format -= 1
        return self._member_call(tree, target_tree, name_token)

    def _member_call(self, tree: ParseTree, target_tree: Any, name_token: Any) -> T:
        name = str(name_token)
        arg_trees = self._args(tree.children[2] if len(tree.children) > 2 else None)
        target = self.visit(as_rule(target_tree))
        if name in _MACROS:
            return self._macro(target, name_token, arg_trees, expr_position(self.text, target_tree))
        args = [self.visit(a) for a in arg_trees]
        if name not in _BUILTIN_METHODS and name not in FUNCTIONS:
            if self.lenient_functions:
                return T("dyn", cost=target.cost + self._sum(args) + 1)
            return self.fail(self._call_at(name_token),
                             f"undeclared reference to '{name}' (in container '')")
        if name == "validate" and target.kind in ("format", "dyn"):
            # format.go: optional_type(list(string)); cost.go "validate": the format's
            # regex against the string (the longest name-format regex, 60, statically)
            size = args[0].size if args else 1
            return T("optional", elem=T("list", elem=T("string", size=size), size=size),
                     cost=target.cost + self._sum(args)
                     + math.ceil(0.1 * (size + 1)) * math.ceil(0.25 * 60))
        if name == "format" and (fmt := string_literal(target_tree)) and len(arg_trees) == 1:
            self._format_literal(fmt, arg_trees[0], name_token)
        if target.kind == "optional" or name in ("hasValue", "value", "orValue", "or"):
            return self._optional_method(target, name_token, args)
        if name in ("matches", "find", "findAll") and arg_trees \
                and (lit := string_literal(arg_trees[0])):
            self.patterns.append(("literal" if name == "matches" else "program", lit))
        if (name == "size" and target.kind not in SIZED) or (
                name in QUANTITY_ONLY and args and args[0].kind not in ("quantity", "dyn")) or (
                name in LIST_ELEMENTS and target.kind == "list" and not args
                and (target.elem or T("dyn")).kind not in LIST_ELEMENTS[name]) or (
                name in STRING_METHODS and target.kind not in ("string", "dyn")):
            self._no_overload(self.text.find("(", as_token(name_token).end_pos or 0), name,
                              [target, *args], instance=True)
        cost = target.cost + self._sum(args) + method_cost(name, target, args)
        if name in _BOOL_METHODS:
            return T("bool", cost=cost)
        if name in ("size", "indexOf", "lastIndexOf", "compareTo", "sign", "asInteger",
                    "family", "prefixLength") or (name.startswith("get")
                                                  and name in _BUILTIN_METHODS):
            return T("int", cost=cost)
        if name in ("getScheme", "getHost", "getHostname", "getPort", "getEscapedPath"):
            return T("string", cost=cost)
        if name in ("min", "max", "sum") and target.elem is not None:
            e = target.elem
            return T(e.kind, e.schema, e.elem, e.size, cost, e.fields)
        if name in ("lowerAscii", "upperAscii", "trim", "replace", "substring", "charAt",
                    "join", "find", "format"):
            return T("string", cost=cost, size=target.size)
        if name == "masked":
            return T("cidr", cost=cost)
        if name == "ip" and target.kind in ("cidr", "dyn"):
            return T("ip", cost=cost)
        if name == "getQuery":
            return T("map", elem=T("list", elem=T("string")), cost=cost)
        if name in ("split", "findAll"):
            return T("list", elem=T("string", size=target.size), size=target.size, cost=cost)
        return T("dyn", cost=cost)

    def _format_literal(self, fmt: lark.Token, arg_tree: Any, name_token: Any) -> None:
        """ext/formatting.go stringFormatValidator, for a list literal of arguments."""
        node = as_rule(arg_tree)
        while node.data != "list_lit" and len(node.children) == 1 \
                and isinstance(node.children[0], lark.Tree):
            node = node.children[0]
        if node.data != "list_lit":
            return
        kids = [k for k in self._kids(node) if isinstance(k, lark.Tree)]
        elems = list(kids[0].children) if kids else []
        found = check_format(str(compile_expression(str(fmt)).evaluate({})),
                             [self.visit(e).kind for e in elems])
        if found is not None:
            at = self.text.find("(", as_token(name_token).end_pos or 0) if found[0] is None \
                else expr_position(self.text, elems[found[0]])
            self.mixed.setdefault(at, found[1])  # a validator's: reported after checking

    def _optional_method(self, target: T, name_token: Any, args: list[T]) -> T:
        """hasValue, value, orValue and or of cel-go's optional library."""
        name = str(name_token)
        cost = target.cost + self._sum(args) + 1
        if target.kind not in ("optional", "dyn") or name not in (
                "hasValue", "value", "orValue", "or"):
            if not self._no_overload(self.text.find("(", as_token(name_token).end_pos or 0),
                                     name, [target, *args], instance=True):
                self.fail(self._call_at(name_token),
                             f"undeclared reference to '{name}' (in container '')")
            return T("dyn", cost=cost)
        e = target.elem or T("dyn")
        if name == "hasValue":
            return T("bool", cost=cost)
        if name == "or":
            return T(target.kind, elem=target.elem, cost=cost)
        if name in ("orValue", "or") and args and not unifies(
                e if name == "orValue" else target, args[0]):
            self._no_overload(self.text.find("(", as_token(name_token).end_pos or 0), name,
                              [target, *args], instance=True)
        if name == "orValue" and e.kind == "dyn" and args:
            e = args[0]
        return T(e.kind, e.schema, e.elem, e.size, cost, e.fields)

    def _macro(self, target: T, name_token: Any, arg_trees: list[Any], target_pos: int
               ) -> T:
        name = str(name_token)
        two_var = name in _TWO_VAR_ONLY or (name in ("all", "exists", "exists_one")
                                            and len(arg_trees) == 3)
        counts = (3, 4) if name.startswith("transform") else (3,) if two_var else (2, 3)
        if len(arg_trees) not in counts or (len(arg_trees) == 3 and not two_var
                                            and name != "map"):
            return self.fail_syntax(name_token, f"invalid argument to {name}() macro")
        names = [str(t.scan_values(lambda v: isinstance(v, lark.Token)).__next__())
                 for t in arg_trees[:2 if two_var else 1]]
        if target.kind == "list":
            var_types = [T("int"), target.elem or T("dyn")]
        elif target.kind == "map":
            var_types = [T("string", size=256), target.elem or T("dyn")]
        elif target.kind == "dyn":
            var_types = [T("dyn"), T("dyn")]
        else:
            self.fail(position_at(self.text, target_pos),
                      f"expression of type '{cel_type_name(target) or target.kind}' "
                      "cannot be range of a comprehension (must be list, map, or "
                      "dynamic)")
            var_types = [T("dyn"), T("dyn")]
        if not two_var:  # one variable: the list's element or the map's key
            var_types = var_types[1:] if target.kind == "list" else var_types[:1]
        self.scopes.append(dict(zip(names, var_types, strict=True)))
        try:
            bodies = [self.visit(b) for b in arg_trees[len(names):]]
        finally:
            self.scopes.pop()
        cost = comprehension_cost(name, target, self._sum(bodies), len(bodies))
        if name in ("all", "exists", "exists_one", "existsOne"):
            return T("bool", cost=cost)
        body = bodies[-1]
        elem = T(body.kind, body.schema, body.elem, body.size, 0, body.fields)
        if name == "transformMap":
            return T("map", elem=elem, size=target.size, cost=cost)
        if name == "transformMapEntry":
            return T("map", elem=T("dyn"), size=target.size, cost=cost)
        return T("list", elem=elem, size=target.size, cost=cost)


def _select_of(tree: Any) -> Any:
    """The ``a.b`` selection ``tree`` is, through single-child wrappers (None if another
    expression): the only argument macro.go MakeHas accepts."""
    node = tree
    while isinstance(node, lark.Tree) and len(node.children) == 1 and \
            isinstance(node.children[0], lark.Tree):
        node = node.children[0]
    return node if isinstance(node, lark.Tree) and node.data == "member_dot" else None


# common/errors.go NewErrors: maxErrorsToReport
_MAX_ERRORS_TO_REPORT = 100


def _issue(text: str, token: Any, message: str) -> tuple[int, int, str]:
    """One error as common.Errors keeps it: its line, column and display string."""
    return (getattr(token, "line", 1) or 1, getattr(token, "column", 1) or 1,
            format_error(text, token, message))


def _display(errors: list[tuple[int, int, str]]) -> str:
    """common/errors.go ToDisplayString: the first 100 errors reported, sorted stably by
    line then column, one a line, and how many more were left out."""
    shown = sorted(errors[:_MAX_ERRORS_TO_REPORT], key=lambda e: (e[0], e[1]))
    lines = [message for _, _, message in shown]
    if len(errors) > _MAX_ERRORS_TO_REPORT:
        lines.append(f"{len(errors) - _MAX_ERRORS_TO_REPORT} more errors were truncated")
    return "\n".join(lines)


def check(text: str, tree: ParseTree, variables: dict[str, T], want: str) -> tuple[T, set[str]]:
    """Check ``tree``; raise CheckError when it does not compile or is not of kind ``want``."""
    checker = Checker(text, variables)
    result = checker.run(tree)
    invalid = [(kind, token, _go_pattern_error(token)) for kind, token in checker.patterns]
    invalid = [(kind, token, err) for kind, token, err in invalid if err]
    # the validators' issues, as cel-go's Errors.ToDisplayString sorts them: by position
    issues = [((token.line or 1, token.column or 1), format_error(
        text, token, "invalid matches argument")) for kind, token, _ in invalid
        if kind == "literal"]
    for pos, message in checker.mixed.items():
        at = position_at(text, pos)
        issues.append(((at.line, at.column), format_error(text, at, message)))
    if issues:
        raise CheckError("\n".join(m for _, m in sorted(issues, key=lambda i: i[0])))
    if result.kind not in (want, "dyn"):
        noun = "a bool" if want == "bool" else "a string"
        raise CheckError(f"cel expression must evaluate to {noun}")
    if invalid:
        raise ProgramError(invalid[0][2])
    return result, checker.uses


def _go_pattern_error(token: lark.Token) -> str:
    """Go's regexp.Compile error for the string literal ``token``; "" when it compiles."""
    try:
        compile_go(str(compile_expression(str(token)).evaluate({})))
    except GoRegexpError as exc:
        return str(exc)
    return ""


def expression_kind(text: str, variables: Mapping[str, T]) -> str:
    """The kind of value ``text`` evaluates to with ``variables`` declared ("dyn" when the
    checker cannot tell); CheckError when it does not parse or check (a function the checker
    does not know is taken as dyn: admission's environments declare more)."""
    return Checker(text, dict(variables), lenient_functions=True).run(parse(text)).kind

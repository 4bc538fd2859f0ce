"""The evaluator of Kubernetes CEL programs: celpy's, with the optional-type nodes of
celoptional.py and cel-go's actual-cost tracking.

Every CEL program Kubernetes runs is built with ``cel.CostLimit(PerCallLimit)``
(apiserver pkg/cel/limits.go, 1,000,000): once the running cost passes the limit, cel-go
cancels the evaluation with "operation cancelled: actual cost limit exceeded". The running
cost is counted the way cel-go's interpreter/runtimecost.go does in the main: one per
identifier, field selection, index and function or operator call, a string-length share for
the traversing string functions, ten per list and thirty per map created; comprehensions pay
for their body once per element because the body is evaluated once per element.
"""

from __future__ import annotations

import math
from typing import Any, cast

import celpy
import lark
from celpy import celtypes
from celpy.evaluation import CELEvalError, Evaluator

from . import celoptional

PER_CALL_LIMIT = 1_000_000
COST_LIMIT_EXCEEDED = "operation cancelled: actual cost limit exceeded"

# cel-go common/cost.go: SelectAndIdentCost, ListCreateBaseCost, MapCreateBaseCost
_NODE_COST = {"ident": 1, "member_dot": 1, "member_dot_opt": 1, "member_index": 1,
              "member_index_opt": 1, "list_lit": 10, "map_lit": 30}
_TRAVERSAL = 0.1  # common.StringTraversalCostFactor
_REGEX = 0.25  # common.RegexStringLengthCostFactor
# what one iteration of each macro costs besides its body: cel-go expands all/exists into
# a loop whose condition is @not_strictly_false(__result__) and whose step reads __result__;
# map and filter append [body] to __result__ (a list creation and a list addition)
_MACRO_STEP = {"all": 3, "exists": 3, "exists_one": 2, "map": 12, "filter": 2}
_TWO_VAR = frozenset({"all", "exists", "exists_one", "existsOne", "transformList",
                      "transformMap", "transformMapEntry"})
_SKIP = object()  # an optional list element or map entry that is absent


def _size(value: Any) -> int:
    """cel-go actualSize: the size of sized values, 1 for the rest."""
    return len(value) if isinstance(value, str | bytes | list | dict) else 1


def _ceil(size: float) -> int:
    return math.ceil(size)


def call_cost(name: str, args: list[Any]) -> int:
    """The cost of one call: cel-go interpreter/runtimecost.go costCall with the Kubernetes
    library's CallCost (apiserver pkg/cel/library/cost.go); 1 for the O(1) rest."""
    first = _size(args[0]) if args else 0
    second = _size(args[1]) if len(args) > 1 else 0
    if name in ("startsWith", "endsWith", "url", "lowerAscii", "upperAscii", "substring",
                "trim", "cidr", "isIP", "isCIDR", "quantity", "isQuantity", "ip",
                "bytes", "string") and args and isinstance(args[0], str | bytes):
        return _ceil(first * _TRAVERSAL)
    if name in ("replace", "split"):
        return _ceil(first * 2 * _TRAVERSAL)
    if name in ("isSorted", "sum", "max", "min", "indexOf", "lastIndexOf") and args \
            and isinstance(args[0], list):
        return first
    if name == "contains" and len(args) == 2:
        return _ceil(first * _TRAVERSAL) * _ceil(second * _TRAVERSAL)
    if name in ("matches", "find", "findAll") and len(args) == 2:
        return _ceil((1 + first) * _TRAVERSAL) * _ceil(second * _REGEX)
    if name in ("_==_", "_!=_", "_<_", "_<=_", "_>_", "_>=_"):
        return _ceil(min(first, second) * _TRAVERSAL)
    if name == "_+_" and all(isinstance(a, str | bytes) for a in args):
        return _ceil((first + second) * _TRAVERSAL)
    if name == "@in" and len(args) == 2 and isinstance(args[1], list):
        return second
    if name == "validate" and len(args) == 2 and hasattr(args[0], "max_regex_size"):
        # library/cost.go "validate": the string against the format's longest regex
        return _ceil((1 + second) * _TRAVERSAL) * _ceil(args[0].max_regex_size * _REGEX)
    if name.startswith("sets.") and len(args) == 2:  # ext/sets.go trackSetsCost
        return 1 + first * second * (2 if name == "sets.equivalent" else 1)
    return 1


class CostLimitExceeded(Exception):
    """cel-go's ``operation cancelled: actual cost limit exceeded``."""

    def __init__(self) -> None:
        super().__init__(COST_LIMIT_EXCEEDED)


class _CostTracker:
    __slots__ = ("cost", "limit")

    def __init__(self, limit: int) -> None:
        self.cost = 0
        self.limit = limit

    def add(self, amount: int) -> None:
        self.cost += amount
        if self.cost > self.limit:
            raise CostLimitExceeded


class KubernetesEvaluator(Evaluator):
    """celpy's evaluator with optional types and the per-call cost limit."""

    def __init__(self, ast: lark.Tree[Any], activation: Any,
                 tracker: _CostTracker | None = None) -> None:
        super().__init__(ast, activation)
        self.tracker = tracker or _CostTracker(PER_CALL_LIMIT)

    def sub_evaluator(self, ast: lark.Tree[Any]) -> Evaluator:
        # macro bodies share the cost of the whole evaluation
        return KubernetesEvaluator(ast, self.activation, self.tracker)

    def _visit_tree(self, tree: lark.Tree[Any]) -> Any:
        # lark's Interpreter routes visit and visit_children through here; celpy's primary
        # evaluates its identifier or literal child itself, so it is costed here
        data = tree.data
        if data == "primary" and isinstance(tree.children[0], lark.Tree):
            data = tree.children[0].data
        if cost := _NODE_COST.get(data, 0):
            self.tracker.add(cost)
        return super()._visit_tree(tree)

    def build_macro_eval(self, child: lark.Tree[Any]) -> Any:
        return self._stepped(child, super().build_macro_eval(child))

    def build_ss_macro_eval(self, child: lark.Tree[Any]) -> Any:
        return self._stepped(child, super().build_ss_macro_eval(child))

    def _stepped(self, child: lark.Tree[Any], body: Any) -> Any:
        step = _MACRO_STEP.get(str(child.children[1]), 1)

        def iteration(value: Any) -> Any:
            self.tracker.add(step)
            return body(value)
        return iteration

    # cel-go interpreter/interpretable.go evalOr/evalAnd: a true left side of ``||`` (a
    # false one of ``&&``) decides without evaluating the right side, which then costs
    # nothing (and reads no lazy variable); celpy evaluates both before combining them
    def conditionalor(self, tree: lark.Tree[Any]) -> Any:
        return self._short_circuit(tree, True)

    def conditionaland(self, tree: lark.Tree[Any]) -> Any:
        return self._short_circuit(tree, False)

    def _short_circuit(self, tree: lark.Tree[Any], decides: bool) -> Any:
        if len(tree.children) == 2:
            left = self.visit(tree.children[0])
            if isinstance(left, celtypes.BoolType) and bool(left) is decides:
                return left
            evaluated = lark.Tree("evaluated", [left], meta=tree.meta)
            tree = lark.Tree(tree.data, [evaluated, tree.children[1]], meta=tree.meta)
        if decides:
            return super().conditionalor(tree)
        return super().conditionaland(tree)

    def member_dot_arg(self, tree: lark.Tree[Any]) -> Any:
        name = str(tree.children[1])
        args = tree.children[2].children if len(tree.children) == 3 else []
        if name in _TWO_VAR and len(args) >= 3 and (
                name in ("existsOne", "transformList", "transformMap", "transformMapEntry")
                or len(args) == 3):
            return self._two_var(name, tree, args)
        if name == "map" and len(args) == 3:
            return self._filtered_map(tree, args)
        if name == "min" and not args:  # library/lists.go min(), not celpy's reduce macro
            target = self.visit(tree.children[0])
            return target if isinstance(target, CELEvalError) else self.method_eval(
                target, cast(lark.Token, tree.children[1]))
        if name not in ("all", "exists") or len(tree.children) != 3 \
                or len(tree.children[2].children) != 2:
            return super().member_dot_arg(tree)
        # cel-go's all/exists loop while @not_strictly_false(result): the first false
        # (all) or true (exists) ends the iteration, so later elements are neither
        # evaluated nor costed; an error stands only when nothing decides the result
        target = self.visit(tree.children[0])
        if isinstance(target, CELEvalError):
            return target
        decisive = name == "exists"
        body = self.build_ss_macro_eval(tree)
        error = None
        for value in target:
            result = body(value)
            if isinstance(result, CELEvalError):
                error = error or result
            elif not isinstance(result, celtypes.BoolType | bool):
                error = error or CELEvalError("no such overload", TypeError, (), tree=tree)
            elif bool(result) == decisive:
                return celtypes.BoolType(decisive)
        return error if error is not None else celtypes.BoolType(not decisive)

    def _filtered_map(self, tree: lark.Tree[Any], args: list[Any]) -> Any:
        """``l.map(x, p, e)``: e of the elements for which p holds (cel-go parser/macro.go
        MakeMap's three-argument form), which celpy's evaluator does not take."""
        target = self.visit(tree.children[0])
        if isinstance(target, CELEvalError):
            return target
        var = str(next(args[0].scan_values(lambda v: isinstance(v, lark.Token))))
        keep, transform = (self.sub_evaluator(ast=a) for a in args[1:])
        out: list[Any] = []
        for value in target:
            self.tracker.add(_MACRO_STEP["filter"])
            try:
                if keep.evaluate({var: value}):
                    out.append(transform.evaluate({var: value}))
            except CELEvalError as exc:
                return exc
        return celtypes.ListType(out)

    def _two_var(self, name: str, tree: lark.Tree[Any], args: list[Any]) -> Any:
        """ext.TwoVarComprehensions (cel-go ext/comprehensions.go): the first variable is
        a list's index or a map's key, the second the element or the value."""
        target = self.visit(tree.children[0])
        if isinstance(target, CELEvalError):
            return target
        first, second = (str(next(a.scan_values(lambda v: isinstance(v, lark.Token))))
                         for a in args[:2])
        bodies = [self.sub_evaluator(ast=a) for a in args[2:]]
        step = _MACRO_STEP.get(name, 3)
        pairs = (target.items() if isinstance(target, dict)
                 else ((celtypes.IntType(i), v) for i, v in enumerate(target)))
        found, error = 0, None
        out_list: list[Any] = []
        out_map = celtypes.MapType()
        for key, value in pairs:
            self.tracker.add(step)
            try:
                results: list[Any] = [b.evaluate({first: key, second: value})
                                      for b in bodies]
            except CELEvalError as exc:
                if name in ("all", "exists"):
                    error = error or exc
                    continue
                return exc
            result = results[-1]
            if name in ("all", "exists"):
                if bool(result) == (name == "exists"):
                    return celtypes.BoolType(name == "exists")
            elif name in ("existsOne", "exists_one"):
                found += bool(result)
            elif len(results) == 2 and not results[0]:  # the filter of the 4-argument form
                continue
            elif name == "transformList":
                out_list.append(result)
            elif name == "transformMap":
                out_map[key] = result
            elif not isinstance(result, dict):
                return CELEvalError("no such overload", TypeError, (), tree=tree)
            else:  # transformMapEntry: each result a map, merged without repeated keys
                for k, v in result.items():
                    if k in out_map:
                        return CELEvalError(f"insert failed: key {k!s} already exists",
                                            ValueError, (), tree=tree)
                    out_map[k] = v
        if name in ("all", "exists"):
            return error if error is not None else celtypes.BoolType(name == "all")
        if name in ("existsOne", "exists_one"):
            return celtypes.BoolType(found == 1)
        return celtypes.ListType(out_list) if name == "transformList" else out_map

    def relation(self, tree: lark.Tree[Any]) -> Any:
        if len(tree.children) != 2:
            return super().relation(tree)
        op_tree, right_tree = tree.children
        left = self.visit(op_tree.children[0])
        right = self.visit(right_tree)
        name = {"relation_eq": "_==_", "relation_ne": "_!=_", "relation_lt": "_<_",
                "relation_le": "_<=_", "relation_gt": "_>_", "relation_ge": "_>=_",
                "relation_in": "@in"}[op_tree.data]
        self.tracker.add(call_cost(name, [left, right]))
        evaluated = lark.Tree(op_tree.data, [lark.Tree("evaluated", [left])], meta=op_tree.meta)
        return super().relation(lark.Tree("relation", [
            evaluated, lark.Tree("evaluated", [right])], meta=tree.meta))

    def addition(self, tree: lark.Tree[Any]) -> Any:
        return self._operator(tree, super().addition)

    def multiplication(self, tree: lark.Tree[Any]) -> Any:
        return self._operator(tree, super().multiplication)

    def unary(self, tree: lark.Tree[Any]) -> Any:
        if len(tree.children) == 2:
            self.tracker.add(1)
        return super().unary(tree)

    def _operator(self, tree: lark.Tree[Any], evaluate: Any) -> Any:
        if len(tree.children) != 2:
            return evaluate(tree)
        op_tree, right_tree = tree.children
        left = self.visit(op_tree.children[0])
        right = self.visit(right_tree)
        name = "_+_" if op_tree.data == "addition_add" else op_tree.data
        self.tracker.add(call_cost(name, [left, right]))
        evaluated = lark.Tree(op_tree.data, [lark.Tree("evaluated", [left])], meta=op_tree.meta)
        return evaluate(lark.Tree(tree.data, [evaluated, lark.Tree("evaluated", [right])],
                                  meta=tree.meta))

    def function_eval(self, name_token: lark.Token, exprlist: Any = None) -> Any:
        args = list(exprlist) if isinstance(exprlist, list | tuple) else []
        self.tracker.add(call_cost(str(name_token), args))
        return super().function_eval(name_token, exprlist)

    def method_eval(self, object: Any, method_ident: lark.Token, exprlist: Any = None) -> Any:
        args = list(exprlist) if isinstance(exprlist, list | tuple) else []
        self.tracker.add(call_cost(str(method_ident), [object, *args]))
        return super().method_eval(object, method_ident, exprlist)

    # optional types (cel-go interpreter/attributes.go applyQualifiers): a selection or an
    # index applied to an optional value is itself optional
    def evaluated(self, tree: lark.Tree[Any]) -> Any:
        return tree.children[0]

    def member_dot(self, tree: lark.Tree[Any]) -> Any:
        member_tree, name = tree.children
        member = self.visit(member_tree)
        if isinstance(member, celoptional.OptionalValue):
            return self._optional(celoptional.select, member, str(name), tree)
        evaluated = lark.Tree("evaluated", [member], meta=tree.meta)
        return super().member_dot(lark.Tree("member_dot", [evaluated, name], meta=tree.meta))

    def member_index(self, tree: lark.Tree[Any]) -> Any:
        values: list[Any] = self.visit_children(tree)
        member, key = values
        if isinstance(member, celoptional.OptionalValue) and not isinstance(key, CELEvalError):
            return self._optional(celoptional.index, member, key, tree)
        evaluated = [lark.Tree("evaluated", [v], meta=tree.meta) for v in (member, key)]
        return super().member_index(lark.Tree("member_index", evaluated, meta=tree.meta))

    def member_dot_opt(self, tree: lark.Tree[Any]) -> Any:
        member = self.visit(tree.children[0])
        if isinstance(member, CELEvalError):
            return member
        return self._optional(celoptional.select, member, str(tree.children[1]), tree)

    def member_index_opt(self, tree: lark.Tree[Any]) -> Any:
        member, key = self.visit_children(tree)
        for value in (member, key):
            if isinstance(value, CELEvalError):
                return value
        return self._optional(celoptional.index, member, key, tree)

    def _optional(self, function: Any, member: Any, key: Any, tree: lark.Tree[Any]) -> Any:
        try:
            return function(member, key)
        except TypeError as exc:
            return CELEvalError("no such overload", TypeError, exc.args, tree=tree)

    def listelems(self, tree: lark.Tree[Any]) -> Any:
        items: list[Any] = []
        for child in tree.children:
            value = self._element(child)
            if isinstance(value, CELEvalError):
                return value
            if value is not _SKIP:
                items.append(value)
        return celtypes.ListType(items)

    def mapentries(self, tree: lark.Tree[Any]) -> Any:
        result = celtypes.MapType()
        for entry in tree.children:
            key_tree, value_tree = entry.children
            optional = key_tree.data == "opt_elem"
            key = self.visit(key_tree.children[0] if optional else key_tree)
            value = self._element(lark.Tree("opt_elem", [value_tree]) if optional
                                  else value_tree)
            for v in (key, value):
                if isinstance(v, CELEvalError):
                    return v
            if value is _SKIP:
                continue
            if key in result:
                raise ValueError(f"Failed with repeated key: {key}")
            result[key] = value
        return result

    def _element(self, child: lark.Tree[Any]) -> Any:
        """A list element or map value; for ``?e`` the optional's value, or _SKIP."""
        if child.data != "opt_elem":
            return self.visit(child)
        value = self.visit(child.children[0])
        if isinstance(value, CELEvalError):
            return value
        if not isinstance(value, celoptional.OptionalValue):
            return CELEvalError("no such overload", TypeError, (), tree=child)
        return value.get() if value.has_value() else _SKIP


class KubernetesRunner(celpy.InterpretedRunner):
    """celpy's interpreted runner over ``KubernetesEvaluator``."""

    def evaluate(self, context: Any) -> Any:
        return KubernetesEvaluator(ast=self.ast, activation=self.new_activation()
                                   ).evaluate(context)

    def evaluate_costed(self, context: Any) -> tuple[Any, Exception | None, int]:
        """(result, evaluation error or None, actual cost); CostLimitExceeded propagates."""
        evaluator = KubernetesEvaluator(ast=self.ast, activation=self.new_activation())
        try:
            return evaluator.evaluate(context), None, evaluator.tracker.cost
        except CostLimitExceeded:
            raise
        except Exception as exc:  # a CEL evaluation error: cel-go still reports its cost
            return None, exc, evaluator.tracker.cost

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
from typing import Any

import celpy
import lark
from celpy import celtypes
from celpy.evaluation import CELEvalError, Evaluator

from . import celoptional

PER_CALL_LIMIT = 1_000_000
COST_LIMIT_EXCEEDED = "operation cancelled: actual cost limit exceeded"

# cel-go common/cost.go: SelectAndIdentCost, ListCreateBaseCost, MapCreateBaseCost
_NODE_COST = {"ident": 1, "member_dot": 1, "member_dot_opt": 1, "member_index": 1,
              "member_index_opt": 1, "ident_arg": 1, "member_dot_arg": 1, "list_lit": 10,
              "map_lit": 30}
_OPERATORS = frozenset({"relation", "addition", "multiplication", "unary"})
_STRING_TRAVERSAL = 0.1  # common.StringTraversalCostFactor
_SKIP = object()  # an optional list element or map entry that is absent


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
        # evaluates its identifier, call or literal child itself, so it is costed here
        data = tree.data
        if data == "primary" and isinstance(tree.children[0], lark.Tree):
            data = tree.children[0].data
        cost = _NODE_COST.get(data, 0)
        if data in _OPERATORS and len(tree.children) > 1:
            cost = 1
        if cost:
            self.tracker.add(cost)
        return super()._visit_tree(tree)

    def relation(self, tree: lark.Tree[Any]) -> Any:
        if len(tree.children) != 2:
            return super().relation(tree)
        op_tree, right_tree = tree.children
        left = self.visit(op_tree.children[0])
        right = self.visit(right_tree)
        if op_tree.data in ("relation_eq", "relation_ne") and isinstance(
                left, str | bytes | list) and isinstance(right, str | bytes | list):
            # O(min(m, n)) equality of strings, bytes and lists
            self.tracker.add(math.ceil(min(len(left), len(right)) * _STRING_TRAVERSAL))
        elif op_tree.data == "relation_in" and isinstance(right, list):
            self.tracker.add(len(right))
        evaluated = lark.Tree(op_tree.data, [lark.Tree("evaluated", [left])], meta=op_tree.meta)
        return super().relation(lark.Tree("relation", [
            evaluated, lark.Tree("evaluated", [right])], meta=tree.meta))

    def function_eval(self, name_token: lark.Token, exprlist: Any = None) -> Any:
        self._traversal(str(name_token), list(exprlist or []))
        return super().function_eval(name_token, exprlist)

    def method_eval(self, object: Any, method_ident: lark.Token, exprlist: Any = None) -> Any:
        args = list(exprlist) if isinstance(exprlist, list | tuple) else []
        self._traversal(str(method_ident), [object, *args])
        return super().method_eval(object, method_ident, exprlist)

    def _traversal(self, name: str, args: list[Any]) -> None:
        # the O(n) string functions of cel-go's costCall and the k8s library's CallCost
        if name in ("contains", "startsWith", "endsWith", "matches", "lowerAscii",
                    "upperAscii", "trim", "replace", "split", "indexOf", "lastIndexOf",
                    "find", "findAll", "join", "reverse", "substring", "charAt"):
            size = sum(len(a) for a in args if isinstance(a, str | bytes))
            self.tracker.add(math.ceil(size * _STRING_TRAVERSAL))

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
        member, key = self.visit_children(tree)
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
